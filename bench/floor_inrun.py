"""The floor of ``bench_overhead.py``, counted inside the runs it is compared with.

Issue 12 defines the floor as one exact BPE pass over each new message plus arithmetic. Counted in
a tight loop seconds apart from the run, a shift in this machine's speed in between reads as
overhead (single ratios spread 0.7-1.6). So the floor runs as middleware of its own inside the
measured runs, with caches of its own (:class:`OwnCounter`): each distinct message — every request's
messages and system message, every raw tool result — counted once, each distinct tool schema
converted (from a new instance: the run converts the tools its agent just built) and counted once,
and each request's size summed. A text counted a second time right after the first costs less
(tiktoken's tables are warm), so each side is timed where it counts first: the floor in a run where
it counts just before labkit's hooks (:func:`floor_first`), labkit in one where the floor counts
just after them (:func:`floor_last`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.types import Command

from labkit import _encode_thread, tokens
from labkit._token_cache import SameObjects, TextTokens, ToolTokens
from labkit.tokens import TokenCounter

__all__ = ["Floor", "FloorRequests", "FloorResults", "FloorResultsAfter", "OwnCounter", "floor_first",
           "floor_last", "raw_messages"]


class OwnCounter(TokenCounter):
    """A ``TokenCounter`` with caches of its own, not labkit's process-wide ones: what it counts
    pre-pays no other counter, and no other counter pre-pays it (the floor's; and the lab model's
    in a cold run, as a provider tokenizes on its side)."""

    def __init__(self) -> None:
        super().__init__()
        self._same, self._texts, self._tools = SameObjects(), TextTokens(), ToolTokens()

    def text(self, text: str) -> int:
        return self._texts.get(self.encoding_name, text, lambda: _encode_thread.count(
            tokens.encoding(self.encoding_name), text))

    def tool(self, tool) -> int:
        return self._tools.get(tool, self.encoding_name, lambda: self.text(tokens._schema_json(tool)))


class Floor:
    """The counts: ``counter`` (an :class:`OwnCounter`, so labkit's counts do not pre-pay it) and
    ``fresh(tool)``, a new instance of a tool, made outside the floor's time."""

    def __init__(self, counter: TokenCounter, fresh: Callable[[Any], Any]) -> None:
        self.counter, self.fresh = counter, fresh
        self.sizes: dict[int, int] = {}  # id(message) -> tokens
        self.held: list = []  # the messages counted: their ids stay theirs
        self.tools: dict[str, int] = {}  # tool name -> tokens of its schema
        self.raw: dict[str, list] = {}  # tool call id -> its raw result, to count once the call returns
        self.totals: list[int] = []  # each request's size, in order

    def count(self, messages) -> None:
        for m in messages:
            if id(m) not in self.sizes:
                self.sizes[id(m)] = self.counter.message(m)
                self.held.append(m)

    def request(self, request) -> int:
        """Count what is new in ``request``, then its size."""
        messages = [*request.messages, *([request.system_message] if request.system_message else [])]
        self.count(messages)
        total = sum(map(self.sizes.__getitem__, map(id, messages)))
        for tool in request.tools or ():
            name = tool["function"]["name"] if isinstance(tool, dict) else tool.name
            if name not in self.tools:
                schema = tool if isinstance(tool, dict) else convert_to_openai_tool(self.fresh(tool))
                self.tools[name] = self.counter.text(json.dumps(schema["function"], ensure_ascii=False))
            total += self.tools[name]
        self.totals.append(total)
        return total


def raw_messages(result) -> list:
    """The messages a tool call returned: the ``ToolMessage``, or those of its ``Command``."""
    return (result.update or {}).get("messages", []) if isinstance(result, Command) else [result]


class FloorRequests(AgentMiddleware):
    """Counts each model call's request as this middleware is handed it: outermost in
    :func:`floor_first` (before labkit's hooks could edit it — on the running example they send it
    on unchanged), innermost in :func:`floor_last` (the Recorder aside)."""

    name = "bench.FloorRequests"

    def __init__(self, floor: Floor) -> None:
        super().__init__()
        self.floor = floor

    def wrap_model_call(self, request, handler):
        self.floor.request(request)
        return handler(request)


class FloorResults(AgentMiddleware):
    """Innermost on tool calls: each raw result, before any middleware changes it — counted at
    once (``now``), or kept for ``FloorResultsAfter``."""

    name = "bench.FloorResults"

    def __init__(self, floor: Floor, now: bool) -> None:
        super().__init__()
        self.floor, self.now = floor, now

    def wrap_tool_call(self, request, handler):
        result = handler(request)
        raw = raw_messages(result)
        if self.now:
            self.floor.count(raw)
        else:
            self.floor.raw[request.tool_call["id"]] = raw
        return result


class FloorResultsAfter(AgentMiddleware):
    """Outermost on tool calls: the raw result ``FloorResults`` kept, counted as the call returns,
    right after labkit's hooks weighed it (by tool call id: parallel calls do not mix)."""

    name = "bench.FloorResultsAfter"

    def __init__(self, floor: Floor) -> None:
        super().__init__()
        self.floor = floor

    def wrap_tool_call(self, request, handler):
        result = handler(request)
        self.floor.count(self.floor.raw.pop(request.tool_call["id"], []))
        return result


def floor_first(floor: Floor, stack: list) -> list:
    """The middleware list with the floor counting before labkit's hooks: each request outermost,
    each raw result as the tool returns it."""
    return [FloorRequests(floor), *stack, FloorResults(floor, now=True)]


def floor_last(floor: Floor, stack: list) -> list:
    """The middleware list with the floor counting after labkit's hooks: each request innermost
    (the Recorder aside), each raw result as the call leaves the outermost middleware."""
    return [FloorResultsAfter(floor), *stack, FloorResults(floor, now=False), FloorRequests(floor)]
