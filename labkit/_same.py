"""How far a list still holds the very objects of an earlier one, found at C speed: what lets a
middleware work only on what is new in a call (an agent's request mostly grows by a few messages).

Used by: labkit.trace (``RunningMeasure``: the Recorder's and Summarize's sizes), labkit.caching
(``PrefixCache``), labkit.offload (its per-call view). A message is carried over while it is the
same object and its ``content``, ``tool_calls`` and ``additional_kwargs`` fields hold what they held:
reassigned to a different value, a field makes it new (to an equal value, it stays carried). A change
inside a field's value (a key set in the very dict) is not seen: langchain's middleware replaces a
message (``model_copy``). The look covers every message on every call, since only a look sees a
field reassigned in place, at C speed: the objects, the contents and extras of every message, the
tool calls of those that have them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from itertools import compress, count, islice
from operator import attrgetter, is_not

__all__ = ["Carried", "same_head"]

_CONTENT, _EXTRA, _CALLS = attrgetter("content"), attrgetter("additional_kwargs"), attrgetter("tool_calls")


def same_head(a, b, n: int) -> int:
    """The first ``i < n`` where ``a[i] is not b[i]`` (``a``, ``b``: iterables), else ``n``."""
    return next(compress(count(), map(is_not, islice(a, n), b)), n)


def _differs(a, b) -> bool:
    """Whether a field's value changed: another object, not equal (a value that cannot say, such
    as an array, counts as changed)."""
    if a is b:
        return False
    try:
        return bool(a != b)
    except Exception:  # noqa: BLE001 - any value may sit in additional_kwargs
        return True


def _equal_head(a, b, n: int) -> int:
    """The first ``i < n`` where ``a[i]`` :func:`_differs` from ``b[i]``, else ``n``."""
    return next(compress(count(), map(_differs, islice(a, n), b)), n)


def _equal(a: list, b: list) -> bool:
    """``a == b`` at C speed (the same object is equal at once), ``False`` when a value cannot say."""
    try:
        return a == b
    except Exception:  # noqa: BLE001
        return False


class Carried:
    """The last list of messages seen, and its messages' fields: :meth:`advance` says how many
    messages at the head of the next list are carried over unedited, and remembers that list."""

    def __init__(self) -> None:
        self.items: list = []  # the last list
        self.contents: list = []  # its messages' content objects
        self.extras: list = []  # their additional_kwargs objects
        self.at: list[int] = []  # where in it the messages with a tool_calls field are
        self.calling: list = []  # those messages
        self.calls: list = []  # and their tool_calls objects

    def advance(self, messages: Sequence) -> int:
        k = self._unedited(messages)
        new = messages[k:]
        j = bisect_left(self.at, k)
        del self.items[k:], self.contents[k:], self.extras[k:], self.at[j:], self.calling[j:], self.calls[j:]
        self.items.extend(new)
        self.contents.extend(map(_CONTENT, new))
        self.extras.extend(map(_EXTRA, new))
        for i, m in enumerate(new, k):
            fields = m.__dict__
            if "tool_calls" in fields:
                self.at.append(i)
                self.calling.append(m)
                self.calls.append(fields["tool_calls"])
        return k

    def _unedited(self, messages: Sequence) -> int:
        """How many messages at the head of ``messages`` are the last list's, unedited since."""
        k = same_head(messages, self.items, min(len(messages), len(self.items)))
        if not k:
            return 0
        head, j = messages[:k], bisect_left(self.at, k)
        calling = self.calling[:j]  # the very objects: their fields tell which have tool calls
        now = list(map(_CONTENT, head)), list(map(_EXTRA, head)), list(map(_CALLS, calling))
        was = self.contents[:k], self.extras[:k], self.calls[:j]
        if all(map(_equal, now, was)):
            return k  # the common case, one comparison of each field's list (equal values pass)
        edited = _equal_head(now[2], was[2], j)  # an AI message's tool calls, by its place
        return min(_equal_head(now[0], was[0], k), _equal_head(now[1], was[1], k),
                   self.at[edited] if edited < j else k)
