"""Speed for labkit.tokens: the caches that make re-counting a long run cheap. None changes a count.

Used by: labkit.tokens (``TokenCounter.message`` and ``TokenCounter.tool``), labkit.trace
(``RunningMeasure`` reads ``tool_calls_of``). The lesson's own cache — one count per (role, text)
— is in ``TokenCounter``; these sit in front of it, shared by every counter of the process.
``bench/bench_counting.py`` measures what each buys (the numbers below: a busy 2-core machine);
``bench/bench_overhead.py`` sees them as part of the harness overhead per model call.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from langchain_core.messages import BaseMessage

__all__ = ["OBJECT_CACHE_SIZE", "TEXT_CACHE_CHARS", "TOOL_CACHE_SIZE", "SameObjects",
           "TextTokens", "ToolTokens", "openai_schema", "tool_calls_of", "tool_shape"]

OBJECT_CACHE_SIZE = 20_000  # messages remembered by identity (weakly); cleared when full
TOOL_CACHE_SIZE = 1024  # tool schemas remembered, least recently used dropped first
TEXT_CACHE_CHARS = 16_000_000  # text remembered, in characters, least recently used dropped first


_CLASS_CALLS: dict[type, bool] = {}  # message class -> does the class itself answer .tool_calls


def tool_calls_of(message: BaseMessage) -> Any:
    """``getattr(message, "tool_calls", None)``, without pydantic's slow miss: a human or tool
    message has no such field, and pydantic's ``__getattr__`` raises (and catches) an error to
    say so — ~3 µs, more than the rest of a cached count. Same answer: the field, else a class
    attribute or property, else an extra field (messages allow extras), else ``None``."""
    fields = message.__dict__
    if "tool_calls" in fields:
        return fields["tool_calls"]
    cls = type(message)
    on_class = _CLASS_CALLS.get(cls)
    if on_class is None:
        on_class = _CLASS_CALLS[cls] = hasattr(cls, "tool_calls")
    if on_class:
        return getattr(message, "tool_calls", None)
    extra = getattr(message, "__pydantic_extra__", None)
    return extra.get("tool_calls") if extra else None


class TextTokens:
    """Each text's BPE count, shared by every counter of the process: one encode per text.

    What it buys: in one run the lab model, the Recorder, ``OffloadMiddleware`` and
    ``SummarizeMiddleware`` each count the same messages with counters of their own — on the
    running example 138 encodes of 35 distinct texts, most of them the large exports. The cache is
    bounded by the characters it holds (``TEXT_CACHE_CHARS``), so a long session stays flat.
    A lock guards the LRU (subagents count in langgraph's worker threads); ``count()`` runs
    outside it, so two threads may encode the same new text once each.
    """

    def __init__(self, chars: int = TEXT_CACHE_CHARS) -> None:
        self.chars, self.held = chars, 0
        self._lru: OrderedDict[tuple[str, str], int] = OrderedDict()  # (encoding, text) -> tokens
        self._lock = threading.Lock()

    def get(self, encoding_name: str, text: str, count: Callable[[], int]) -> int:
        """The tokens of ``text``: remembered, or ``count()`` and remembered."""
        key = (encoding_name, text)
        with self._lock:
            n = self._lru.get(key)
            if n is not None:
                self._lru.move_to_end(key)
                return n
        n = count()
        with self._lock:
            if key not in self._lru:  # another thread may have counted it meanwhile
                self._lru[key] = n
                self.held += len(text)
            while self.held > self.chars and len(self._lru) > 1:
                (_, dropped), _ = self._lru.popitem(last=False)
                self.held -= len(dropped)
        return n

    def get_many(self, encoding_name: str, texts: list[str],
                 count_many: Callable[[list[str]], list[int]]) -> list[int]:
        """The tokens of each text: those not remembered counted together, ``count_many(missing)``."""
        with self._lock:
            known = {t: self._lru.get((encoding_name, t)) for t in texts}
        missing = [t for t, n in known.items() if n is None]
        if missing:
            for text, n in zip(missing, count_many(missing)):
                known[text] = self.get(encoding_name, text, lambda n=n: n)
        return [known[t] for t in texts]


class SameObjects:
    """A message's key — ``(role, text)`` — and count, remembered by identity for every counter of
    one encoding: the very object counted before, with the same ``content`` and ``tool_calls``
    objects.

    What it buys: a run re-sends the same message objects on every model call, and the lesson's
    key — the message's text — costs O(size) to build (blocks joined, tool-call arguments dumped
    as JSON). Re-counting a 200-call run message by message (40,000 counts) takes ~35 ms with it
    and ~165 ms without: about 5x (``bench_counting.py``, a busy machine). Shared, because the
    lab model, the Recorder and each middleware hold counters of their own, and each would
    otherwise build every text again. An
    entry lives as long as its message (a weak reference: a finished run's messages are not held)
    and at most ``size`` entries are kept (``size=0``: nothing is remembered).
    """

    def __init__(self, size: int = OBJECT_CACHE_SIZE) -> None:
        self.size = size
        self._seen: dict[int, tuple] = {}  # id(message) -> (weakref, content, tool_calls, key, count)

    def get(self, message: BaseMessage) -> tuple[tuple[str, str], int] | None:
        """``(key, count)`` remembered for this very object, unless it was edited since."""
        seen = self._seen.get(id(message))
        if seen is not None and seen[0]() is message and seen[1] is message.content \
                and seen[2] is tool_calls_of(message):
            return seen[3], seen[4]
        return None

    def put(self, message: BaseMessage, key: tuple[str, str], n: int) -> None:
        """Remember ``key`` and ``n`` for this object while it lives."""
        if self.size <= 0:
            return
        seen, ident = self._seen, id(message)
        if len(seen) >= self.size:  # keep it bounded even while every message lives
            seen.clear()

        def forget(ref, ident=ident) -> None:  # the message is gone: its id may be reused
            if seen.get(ident, (None,))[0] is ref:
                seen.pop(ident, None)  # not del: another thread's put may have cleared it meanwhile
        try:
            ref = weakref.ref(message, forget)
        except TypeError:  # a message class without weak references: not remembered
            return
        seen[ident] = (ref, message.content, tool_calls_of(message), key, n)


_FIELD_SHAPES: dict[int, tuple] = {}  # id(args_schema) -> (schema, fields dict, field infos, shape)


def _field_shape(schema: Any, fields: dict) -> tuple:
    """The argument part of :func:`tool_shape`, made once per schema class: the memo holds only
    while the class has the same ``model_fields`` dict holding the same field objects (a
    rebuilt model gets a new one), so a copy of a tool — deepagents copies ``grep`` for every
    call — costs a lookup instead of a ``repr`` of every annotation."""
    infos = tuple(fields.values())
    memo = _FIELD_SHAPES.get(id(schema))
    if memo is not None and memo[0] is schema and memo[1] is fields and memo[2] == infos:
        return memo[3]
    shape = tuple((k, repr(f.annotation), f.description, repr(f.default)) for k, f in fields.items())
    if len(_FIELD_SHAPES) >= TOOL_CACHE_SIZE:
        _FIELD_SHAPES.clear()
    _FIELD_SHAPES[id(schema)] = (schema, fields, infos, shape)  # holds the class: its id stays its own
    return shape


def tool_shape(tool: Any) -> tuple | None:
    """A cheap key for a LangChain tool that determines its schema — name, description and the
    argument fields — so the same tool rebuilt for another run is not converted again. ``None``
    when the tool is not of that plain shape."""
    schema = getattr(tool, "args_schema", None)
    fields = getattr(schema, "model_fields", None)
    name, description = getattr(tool, "name", None), getattr(tool, "description", None)
    if not isinstance(fields, dict) or not isinstance(name, str) or not isinstance(description, str):
        return None
    return type(tool).__name__, name, description, _field_shape(schema, fields)


class ToolTokens:
    """Tokens of each tool schema, shared by every counter of the process.

    What it buys: converting a tool to its JSON schema (``convert_to_openai_tool``) costs far more
    than counting it, and every model call sends the same tools again: the ten tools of a
    deepagents agent on the running example take ~2 ms to convert and count, ~0.1 ms from here
    (about 20x), even when they were rebuilt for a new run.

    Four kinds of key, tagged so they never meet:

    * ``("schema", encoding, JSON)`` — a schema dict (``{"function": ...}``), by its content;
    * ``("dict", encoding, JSON)`` — any other dict langchain converts (a bare JSON schema), or a
      tool whose ``args_schema`` is a JSON schema dict, by its content, so an edit in place is
      counted afresh;
    * ``("shape", encoding, tool_shape(tool))`` — a plain LangChain tool, by what determines its
      schema, so the same tool rebuilt for the next run is a hit;
    * ``("object", encoding, id(tool))`` — any other tool, by identity; the entry holds the tool,
      so its id cannot be reused while the entry lives.

    A lock guards the LRU, as in :class:`TextTokens`; ``count()`` runs outside it.
    """

    def __init__(self, size: int = TOOL_CACHE_SIZE) -> None:
        self.size = size
        self._lru: OrderedDict[tuple, tuple[Any, int]] = OrderedDict()  # key -> (tool, tokens)
        self._lock = threading.Lock()

    @staticmethod
    def key(tool: Any, encoding_name: str) -> tuple:
        if isinstance(tool, dict) and "function" in tool:
            shared = _SHARED.get(id(tool))  # one of openai_schema's, never changed: its JSON made once
            text = shared[1] if shared is not None and shared[0] is tool else \
                json.dumps(tool["function"], sort_keys=True)
            return "schema", encoding_name, text
        if isinstance(tool, dict):  # another schema format langchain converts: by content too
            return "dict", encoding_name, json.dumps(tool, sort_keys=True, default=repr)
        shape = tool_shape(tool)
        if shape:
            return "shape", encoding_name, shape
        schema = getattr(tool, "args_schema", None)
        if isinstance(schema, dict):  # a tool whose arguments are a JSON schema: by content too
            fields = [type(tool).__name__, getattr(tool, "name", None), getattr(tool, "description", None),
                      schema]
            return "dict", encoding_name, json.dumps(fields, sort_keys=True, default=repr)
        return "object", encoding_name, id(tool)

    def get(self, tool: Any, encoding_name: str, count: Callable[[], int]) -> int:
        """The tokens of ``tool``'s schema: remembered, or ``count()`` and remembered."""
        key = self.key(tool, encoding_name)
        with self._lock:
            hit = self._lru.get(key)
            if hit is not None and (key[0] != "object" or hit[0] is tool):
                self._lru.move_to_end(key)
                return hit[1]
        n = count()
        with self._lock:
            self._lru[key] = (tool, n)
            if len(self._lru) > self.size:
                self._lru.popitem(last=False)
        return n


_SCHEMAS = ToolTokens()  # the same LRU and keys, holding schemas instead of counts
_SHARED: dict[int, tuple[dict, str]] = {}  # id -> (a schema openai_schema returned, its key's JSON)


def openai_schema(tool: Any, convert: Callable[[Any], dict]) -> dict:
    """``convert(tool)`` — langchain's ``convert_to_openai_tool`` — once per distinct tool.

    What it buys: ``create_agent`` binds the tools again on every model call, and converting ten
    tools takes ~2 ms; the same tool rebuilt for the next run is a hit too (``tool_shape``). Shared
    by ``LabModel.bind_tools`` and ``TokenCounter.tool``, so a tool bound and counted is converted
    once. The schema returned is shared: callers must not change it.
    """
    schema = _SCHEMAS.get(tool, "openai", lambda: convert(tool))
    if id(schema) not in _SHARED:  # counted by identity from now on (it is never changed)
        if len(_SHARED) >= TOOL_CACHE_SIZE:
            _SHARED.clear()
        _SHARED[id(schema)] = schema, json.dumps(schema["function"], sort_keys=True)
    return schema
