"""How far a list still holds the very objects of an earlier one, found at C speed: what lets a
middleware work only on what is new in a call (an agent's request mostly grows by a few messages).

Used by: labkit.trace (``RunningMeasure``), labkit.caching (``PrefixCache``), labkit.offload and
labkit.summarize (their per-call views). A message counts as the same when it is the same object
with the same ``content``, ``tool_calls`` and ``additional_kwargs`` objects: replaced in place,
a field makes the message new again.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, count, repeat
from operator import attrgetter, is_not

__all__ = ["Carried", "fields_of", "same_head", "unedited_head"]

_CONTENT, _EXTRA, _FIELDS = attrgetter("content"), attrgetter("additional_kwargs"), attrgetter("__dict__")


def same_head(a, b, n: int) -> int:
    """The first ``i < n`` where ``a[i] is not b[i]`` (``a``, ``b``: iterables of at least ``n``
    items), else ``n``."""
    return next(compress(count(), map(is_not, a, b)), n)


def unedited_head(messages: Sequence, last: Sequence, fields: tuple[list, list, list]) -> int:
    """How many messages at the head of ``messages`` are ``last``'s very objects, unedited since:
    ``fields`` are the ``content``, ``tool_calls`` and ``additional_kwargs`` objects ``last``'s
    messages had (:func:`fields_of`)."""
    k = same_head(messages, last, min(len(messages), len(last)))
    head = messages[:k]
    contents, calls, extras = fields
    k = same_head(map(_CONTENT, head), contents, k)
    k = same_head(map(dict.get, map(_FIELDS, head), repeat("tool_calls")), calls, k)
    return same_head(map(_EXTRA, head), extras, k)


def fields_of(messages: Sequence) -> tuple[list, list, list]:
    """The ``content``, ``tool_calls`` and ``additional_kwargs`` objects of ``messages``."""
    return (list(map(_CONTENT, messages)), list(map(dict.get, map(_FIELDS, messages), repeat("tool_calls"))),
            list(map(_EXTRA, messages)))


class Carried:
    """The last list of messages seen, and its messages' fields: :meth:`advance` says how many
    messages at the head of the next list are carried over unedited, and remembers that list."""

    def __init__(self) -> None:
        self.items: list = []
        self.fields: tuple[list, list, list] = ([], [], [])

    def advance(self, messages: Sequence) -> int:
        k = unedited_head(messages, self.items, self.fields)
        new = messages[k:]
        del self.items[k:]
        self.items.extend(new)
        for kept, added in zip(self.fields, fields_of(new)):
            del kept[k:]
            kept.extend(added)
        return k
