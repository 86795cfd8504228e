"""A recording middleware: per model call, what was stored and what the model actually saw.

Notebook 03 introduces it; every plot in the course is drawn from its records. Each
:class:`CallRecord` holds ``stored`` (BPE tokens of ``state["messages"]``) and ``seen`` (what
the request carried, split by kind: system prompt, tool schemas, human, AI, tool results,
summary), cost at an illustrative price, and the model's reported usage when there is one.
``Recorder(keep_requests=True)`` also keeps each request itself (:class:`Request`).

Each record also keeps the prefix a provider's prompt cache could serve (``labkit.caching``)
and the cache reads and writes the provider reported. What it leaves out: hidden reasoning
tokens and the provider's own tokenizer — ``usage_metadata`` is the number a provider bills.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter, is_
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.config import get_config

from labkit._digest import message_digest
from labkit._same import Carried
from labkit.caching import PrefixCache
from labkit.errors import is_overflow
from labkit.tokens import PRICES, TokenCounter, cost, message_text

__all__ = ["KINDS", "MESSAGE_KINDS", "CallRecord", "Recorder", "Request", "RunningMeasure",
           "compaction_marks", "compactions", "kind_of", "measure"]

MESSAGE_KINDS = ("human", "ai", "tool", "summary")  # the kinds a message in state can be
KINDS = ("system", "tools", *MESSAGE_KINDS)  # the slices of one request
_KIND_INDEX = {k: i for i, k in enumerate(KINDS)}


def kind_of(message: BaseMessage) -> str:
    """Which slice of the context a message belongs to (one of ``KINDS``). Notebook 03."""
    if message.additional_kwargs.get("lc_source") == "summarization":
        return "summary"
    kinds = {"system": "system", "human": "human", "ai": "ai", "tool": "tool"}
    return kinds.get(message.type, "human")


@dataclass(frozen=True)
class Request:
    """What one model call was sent, as it left for the model: the messages, the system message
    and the tools (the objects the request carried). Kept by ``Recorder(keep_requests=True)``.
    Notebook 03."""

    messages: list[BaseMessage]
    system: BaseMessage | None
    tools: list

    @property
    def tool_names(self) -> list[str]:
        """The tools' names, in the order the request listed them."""
        return [t.get("function", t).get("name", "") if isinstance(t, dict) else getattr(t, "name", "")
                for t in self.tools]


@dataclass
class CallRecord:
    """One model call, measured. ``seen == sum(by_kind.values())``; ``stored`` counts
    ``state["messages"]`` (no system prompt, no tool schemas); ``reply`` is the text the model
    returned (``None`` for a refused or replayed call); ``overflow`` says the error was a context
    overflow, as ``labkit.errors.is_overflow`` recognises one; ``request`` is the request itself when the
    Recorder keeps them; ``thread`` and ``agent`` say whose call it was. Notebook 03."""

    index: int
    turn: int
    stored: int
    seen: int
    by_kind: dict[str, int]
    messages_stored: int
    messages_seen: int
    output_tokens: int = 0
    reported_input: int | None = None
    cost: float = 0.0
    error: str | None = None
    overflow: bool = False  # the error was the provider saying "above the window" (labkit.errors)
    tool_calls: list[str] = field(default_factory=list)
    reply: str | None = field(default=None, compare=False)
    request: Request | None = field(default=None, repr=False, compare=False)
    thread: str | None = None  # the call's thread id and agent (one Recorder may serve many) ...
    agent: str | None = None
    scope: str | None = None  # ... and which run of that agent (two children of one type differ)
    summary: str | None = None  # a hash of the summary in view, if any: a new one is a compaction
    shared_prefix: int | None = None  # tokens of the longest prefix shared with an earlier request,
    whole_prefix: int | None = None  # and of the longest earlier request that is a prefix of it
    reported_cache_read: int | None = None  # what the provider said it read from / wrote to cache
    reported_cache_write: int | None = None

    @property
    def saved(self) -> int:
        """Tokens kept out of this call by context management (stored - seen, tools aside)."""
        return self.stored - (self.seen - self.by_kind["system"] - self.by_kind["tools"])


def _whose() -> dict[str, str | None]:
    """The thread id, agent name and run (its graph namespace, less the node's own step) of the
    model call running now, from langgraph's config."""
    try:
        config = get_config()
    except RuntimeError:  # called outside a graph
        return {"thread": None, "agent": None, "scope": None}
    configurable = config.get("configurable") or {}
    thread, ns = configurable.get("thread_id"), str(configurable.get("checkpoint_ns") or "")
    return {"thread": None if thread is None else str(thread),
            "agent": (config.get("metadata") or {}).get("lc_agent_name"),
            "scope": ns.rsplit("|", 1)[0] if "|" in ns else ""}


def _summary_key(messages: list[BaseMessage]) -> str | None:
    """Twelve hex characters naming the first summary message in a request."""
    found = next((m for m in messages if kind_of(m) == "summary"), None)
    return None if found is None else message_digest(found)[:12]  # once per summary object


def measure(messages: list[BaseMessage], system: BaseMessage | None = None,
            tools: list | None = None, counter: TokenCounter | None = None) -> dict[str, int]:
    """Tokens by kind for one request (pure; the Recorder calls it on every model call).
    Notebook 03.

    Each message — the system message too — costs its BPE text plus 3 tokens of framing, and each
    tool schema the JSON of its ``function`` part: exactly what ``LabModel`` counts as its input.
    """
    counter = counter or TokenCounter()
    by = dict.fromkeys(KINDS, 0)
    if system is not None:
        by["system"] = counter.message(system)
    by["tools"] = sum(counter.tool(t) for t in tools or [])
    for m in messages:
        by[kind_of(m)] += counter.message(m)
    return by


class RunningMeasure:
    """:func:`measure`, call after call, with running totals: the messages at the head of the list
    that are the very objects of the last call — same ``content``, same ``tool_calls`` — keep the
    per-kind sums they had, and only the rest is counted; likewise the tools. Every result equals
    ``measure``'s (``tests/test_trace.py`` checks it on every call of runs whose middleware edit,
    drop and fold messages). The Recorder, ``OffloadMiddleware`` and ``SummarizeMiddleware`` each
    keep one per list they measure, since an agent's request mostly grows by a few messages a call.
    One lock per instance: a middleware shared by subagents running in parallel stays exact.
    """

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self.counter = counter or TokenCounter()
        self._lock = threading.Lock()
        self._seen = Carried()  # the last list measured (labkit._same)
        self._sums: list[tuple[int, ...]] = [(0,) * len(KINDS)]  # [i]: totals by kind of seen[:i]
        self._tool_keys: list[tuple | None] = []  # last call's tools: _tool_keys, None if not _plain
        self._tool_counts: list[int] = []  # and their tokens
        self._tool_total: int | None = None  # their sum, when every key is plain

    def messages(self, messages: Sequence[BaseMessage]) -> tuple[int, ...]:
        """Tokens of ``messages`` by kind, in the order of ``KINDS`` (``tools`` is 0)."""
        with self._lock:
            return self._messages(messages)

    def __call__(self, messages: Sequence[BaseMessage], system: BaseMessage | None = None,
                 tools: Sequence[Any] | None = None) -> dict[str, int]:
        """Tokens by kind for one request, as :func:`measure` gives them."""
        with self._lock:
            by = dict(zip(KINDS, self._messages(messages)))
            if system is not None:
                by["system"] += self.counter.message(system)
            by["tools"] = self._tools_total(tools or ())
            return by

    def _messages(self, messages: Sequence[BaseMessage]) -> tuple[int, ...]:
        sums = self._sums
        k = self._seen.advance(messages)  # kind_of reads additional_kwargs: an edit is seen
        del sums[k + 1:]
        for x in messages[k:]:
            totals = list(sums[-1])
            totals[_KIND_INDEX[kind_of(x)]] += self.counter.message(x)
            sums.append(tuple(totals))
        return sums[-1]

    def _tools_total(self, tools: Sequence[Any]) -> int:
        """Tokens of the tool schemas. A tool at the same place as last call with the same class,
        name, description and pydantic argument class — what its schema is made of, by
        ``labkit._token_cache.tool_shape``'s rule — keeps its count: deepagents copies its file
        tools for every call. Any other tool (a schema dict may be edited in place) is looked up."""
        keys = [_tool_key(t) for t in tools]
        if keys == self._tool_keys and self._tool_total is not None:
            return self._tool_total  # every tool as last call, each of the plain shape
        last, counts = self._tool_keys, []
        for i, (tool, key) in enumerate(zip(tools, keys)):
            kept = key is not None and i < len(last) and last[i] == key
            counts.append(self._tool_counts[i] if kept else self.counter.tool(tool))
        self._tool_keys = [key if _plain(key) else None for key in keys]
        self._tool_counts = counts
        self._tool_total = sum(counts) if None not in self._tool_keys else None
        return sum(counts)


_TOOL_FIELDS = attrgetter("name", "description", "args_schema")


def _tool_key(tool: Any) -> tuple | None:
    """``(class, name, description, argument class)`` of a tool (``None`` for one without them:
    a schema dict)."""
    try:
        return (type(tool), *_TOOL_FIELDS(tool))
    except AttributeError:
        return None


def _plain(key: tuple | None) -> bool:
    """Does this key determine the tool's schema: text name and description, a pydantic argument
    class (not a JSON schema dict, which may be edited in place)?"""
    return key is not None and isinstance(key[1], str) and isinstance(key[2], str) \
        and isinstance(getattr(key[3], "model_fields", None), dict)


def compactions(run_or_records) -> list[tuple[int, int]]:
    """``(call, cut)`` for each compaction: the first call the model accepted with a new summary in
    view, and the cut — how many stored messages the summary stands for (stored minus kept, the
    summary itself not counted). Notebook 09.

    Read from the records alone — a ``scenario.Run``'s, a ``replay.Replay``'s or a list — so it
    works for any middleware that marks its summary (labkit's, langchain's, deepagents'); threads
    and agents that share a Recorder are told apart by their records' ``thread``. A refused
    call does not count: the model never read that summary (a replayed run that dies on its last
    compaction has no mark for it).
    """
    out: list[tuple[int, int]] = []
    seen: dict = {}  # the summaries (or cuts) each thread and run has shown: a Recorder may serve many
    for r in getattr(run_or_records, "records", run_or_records):
        cut, whose = r.messages_stored - (r.messages_seen - 1), (r.thread, r.agent, r.scope)
        mark = r.summary or cut  # a removed message moves the cut, not the summary
        if r.by_kind["summary"] and not r.error and mark not in seen.setdefault(whose, set()):
            out.append((r.index, cut))  # an earlier summary back in view (messages removed) is not new
            seen[whose].add(mark)
    return out


def compaction_marks(run_or_records) -> list[tuple[int, str]]:
    """``(call, label)`` for each of :func:`compactions` — the marks
    ``plots.tokens_per_turn(events=...)`` draws, at the first call that saw each summary.
    Notebook 07.

    Example:
        >>> # plots.tokens_per_turn(run, window=128_000, events=trace.compaction_marks(run))
    """
    return [(call, f"compaction {n}: messages 0–{cut - 1} folded")
            for n, (call, cut) in enumerate(compactions(run_or_records), 1)]


class Recorder(AgentMiddleware):
    """Record every model call. Put it last in ``middleware=[...]`` so it sees the final request.
    Notebook 03.

    An agent keeps one history, but each middleware may rewrite the *request* on its way to the
    model (drop old turns behind a summary, swap a big result for a file path). Placed innermost,
    the Recorder measures the request as it finally leaves; placed first, the request before the
    others edited it. A call that fails (a context overflow) is recorded with its ``error`` and
    costs nothing: providers do not bill a rejected request.

    Args:
        price: a row of ``labkit.tokens.PRICES``, or ``(input, output)`` dollars per million tokens.
        name: lets two recorders share one agent (``create_agent`` refuses two middleware with
            the same name).
        keep_requests: keep each call's :class:`Request` on its record (off by default: a long run
            would hold every request it made).

    Example:
        >>> rec = Recorder(keep_requests=True)
        >>> # create_agent(model, tools, middleware=[..., rec]); agent.invoke(...)
        >>> # rec.records[-1].seen, rec.records[-1].by_kind, rec.records[-1].request.tool_names
    """

    name = "labkit.Recorder"

    def __init__(self, price: str | tuple[float, float] = "lab-model", *,
                 name: str | None = None, keep_requests: bool = False) -> None:
        super().__init__()
        if isinstance(price, str) and price not in PRICES:
            raise ValueError(f"unknown price {price!r}: choose one of {sorted(PRICES)}")
        if name is not None:  # create_agent refuses two middleware with the same name
            self.name = name
        self.price = price
        self.keep_requests = keep_requests
        self.records: list[CallRecord] = []
        self.turns: list[str] = []
        self.counter = TokenCounter(non_text="count")
        self._seen = RunningMeasure(self.counter)  # the request, call after call
        self._stored = RunningMeasure(self.counter)  # state["messages"], call after call
        self.prefixes = PrefixCache()  # what a provider's prompt cache would hold (labkit.caching)

    def start_turn(self, text: str) -> None:
        """Mark the start of a user turn (``scenario.run`` calls this). Notebook 03."""
        self.turns.append(text)

    def _before(self, request: ModelRequest) -> CallRecord:
        stored_msgs = list(request.state.get("messages", []))
        messages, tools = list(request.messages), list(request.tools or [])
        system = request.system_message
        by = self._seen(messages, system, tools)
        if len(stored_msgs) == len(messages) and all(map(is_, stored_msgs, messages)):
            # the very messages just measured: their sum, without measuring them again
            stored = sum(by.values()) - by["tools"] - (0 if system is None else self.counter.message(system))
        else:
            stored = sum(self._stored.messages(stored_msgs))
        head = f"{getattr(system, 'content', '')}|{[getattr(t, 'name', t) for t in tools]}|{by['tools']}"
        fixed = by["system"] + by["tools"]
        shared, whole = self.prefixes.observe(
            [head, *messages], tokens=lambda block: fixed if block is head else self.counter.message(block))
        rec = CallRecord(
            index=len(self.records),
            turn=max(len(self.turns) - 1, 0),
            stored=stored,
            seen=sum(by.values()),
            by_kind=by,
            messages_stored=len(stored_msgs),
            messages_seen=len(messages),
            request=Request(messages, system, tools) if self.keep_requests else None,
            **_whose(), summary=_summary_key(messages) if by["summary"] else None,
            shared_prefix=shared, whole_prefix=whole,
        )
        self.records.append(rec)
        return rec

    @staticmethod
    def _after(rec: CallRecord, response: Any, price) -> None:
        result = getattr(response, "model_response", response)  # ExtendedModelResponse
        if isinstance(result, AIMessage):  # a wrap_model_call may return the message itself
            result = [result]
        messages = result if isinstance(result, list) else getattr(result, "result", None) or []
        ai = next((m for m in messages if isinstance(m, AIMessage)), None)
        if ai is not None:
            usage = ai.usage_metadata or {}
            rec.output_tokens = int(usage.get("output_tokens", 0))
            rec.reported_input = usage.get("input_tokens")
            details = usage.get("input_token_details") or {}
            rec.reported_cache_read = details.get("cache_read")
            rec.reported_cache_write = details.get("cache_creation")
            rec.tool_calls = [tc["name"] for tc in ai.tool_calls]
            rec.reply = message_text(ai, text_only=True)
        rec.cost = cost(rec.seen, rec.output_tokens, price)

    def wrap_model_call(self, request, handler):
        rec = self._before(request)
        try:
            response = handler(request)
        except Exception as e:
            rec.error, rec.overflow = f"{type(e).__name__}: {e}", is_overflow(e)
            raise
        self._after(rec, response, self.price)
        return response

    async def awrap_model_call(self, request, handler):
        rec = self._before(request)
        try:
            response = await handler(request)
        except Exception as e:
            rec.error, rec.overflow = f"{type(e).__name__}: {e}", is_overflow(e)
            raise
        self._after(rec, response, self.price)
        return response
