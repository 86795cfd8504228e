"""Replay: re-run the summarization policy over a recorded run with new knobs — no agent loop.

Notebook 07 introduces it (the sliders of ``labkit.widgets.knobs`` call it on every move);
notebook 09 replays the full record. A recorded run holds every message in state and, per model
call, how many of them existed and the fixed part of the request; :func:`replay` walks those
calls and, at each, asks ``labkit.summarize.next_fold`` — the middleware's own decision — what
``SummarizeMiddleware`` would do with the given knobs. It answers, per setting, the tokens of each
call, the compaction events, the first overflow, tokens sent and cost, and where the needle is.
What it leaves out: behaviour (the trajectory does not change with the knobs — for behaviour, run
the scenario), offloading (it edits the messages themselves), the ``compact_conversation`` tool
(a model decision) and deepagents' own middleware.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import BaseMessage

from labkit._replay_summary import Memo, carried, summary, xml_text
from labkit._sizes import check_limit
from labkit._synthetic import synthetic_run
from labkit.caching import RULES, CachePrices, call_cost
from labkit.model import summary_facts
from labkit.scenario import needle
from labkit.summarize import Event, SummarizeMiddleware, archive_path, next_fold, summary_message
from labkit.summarize.archive import conversation_key, section_of
from labkit.summarize.policy import CONVERSATION_KEY, fold_due, message_key
from labkit.tokens import PRICES, TOKENS_PER_MESSAGE, TokenCounter, cost, message_text
from labkit.trace import KINDS, MESSAGE_KINDS, CallRecord, compaction_marks, kind_of

__all__ = ["NEEDLE_OUTCOMES", "Replay", "Trajectory", "replay", "synthetic_run", "trajectory"]

NEEDLE_OUTCOMES = ("visible", "archive", "lost", "absent", "overflow")


@dataclass(eq=False)
class Trajectory:
    """A recorded run, measured once: what :func:`replay` reads.

    ``calls[i]`` is the number of state messages at model call ``i``; ``fixed[i]`` its system
    prompt + tool schema tokens; ``prefix[k]`` the BPE tokens of ``messages[:k]`` (each message
    as ``TokenCounter.message`` counts it); ``by_kind[kind][k]`` the same per kind;
    ``needle_at`` the messages holding the needle's exact line.
    Notebook 09.
    """

    messages: list[BaseMessage]
    calls: list[int]
    fixed: list[int]
    system: list[int]
    outputs: list[int]
    turns: list[int]
    tool_calls: list[list[str]]
    prefix: list[int]
    by_kind: dict[str, list[int]]
    facts: list  # what the lab model's summary reads in each message (model.summary_facts)
    xml_prefix: list[int]
    needle_at: list[int]
    counter: TokenCounter
    size_of_id: dict[int, int]
    conversation: str  # the run's conversation id (or a hash of its first message): names the sections
    memo: Memo = field(default_factory=Memo)  # summaries and counts already made (slider moves reuse them)

    def tokens(self, message: BaseMessage) -> int:
        """BPE tokens of one message (the cached count for a recorded one)."""
        n = self.size_of_id.get(id(message))
        return self.counter.message(message) if n is None else n


def _calls_of(records: Sequence[CallRecord]) -> list[CallRecord]:
    """One record per model call: a failed attempt retried on the same messages is dropped."""
    out = []
    for i, r in enumerate(records):
        retried = i + 1 < len(records) and records[i + 1].messages_stored == r.messages_stored
        if r.error and retried:
            continue
        out.append(r)
    return out


def _said(message) -> str:
    """A message's text and tool calls, or its text alone when it also holds an image."""
    try:
        return message_text(message)
    except ValueError:
        return message_text(message, text_only=True)


def trajectory(run: Any, counter: TokenCounter | None = None) -> Trajectory:
    """Measure a recorded run once (``scenario.Run``, or anything with ``messages`` and
    ``records``): per-message tokens, prefix sums, the calls and their fixed part. Notebook 09."""
    messages = list(getattr(run, "messages", None) or [])
    records = getattr(run, "records", None)
    if not messages or not records:
        raise ValueError("replay needs a recorded run with messages and records (a scenario.Run "
                         f"from scenario.run(...)); got {type(run).__name__} with "
                         f"{len(messages)} messages and {len(records or [])} records")
    calls = _calls_of(records)
    last = 0
    for r in calls:
        if not isinstance(r, CallRecord):
            raise TypeError(f"records must be trace.CallRecord, not {type(r).__name__}")
        if not last <= r.messages_stored <= len(messages):
            raise ValueError(
                f"record {r.index} says {r.messages_stored} messages were stored, but the run has "
                f"{len(messages)} messages and the previous call had {last}: messages were removed "
                "from the state after they were recorded (langchain's SummarizationMiddleware deletes "
                "what it summarizes; an app may send RemoveMessage). Replay re-plays the whole history: "
                "record the run with labkit's SummarizeMiddleware or deepagents' summarization, which "
                "keep it, or with one Recorder per thread")
        last = r.messages_stored
    counter = counter or TokenCounter(non_text="count")  # as the Recorder counted the run
    sizes = [counter.message(m) for m in messages]
    kinds = [kind_of(m) for m in messages]
    prefix, by_kind = [0], {k: [0] for k in MESSAGE_KINDS}
    for size, kind in zip(sizes, kinds):
        prefix.append(prefix[-1] + size)
        for k in MESSAGE_KINDS:
            by_kind[k].append(by_kind[k][-1] + (size if k == kind else 0))
    xml = [xml_text(m) for m in messages]  # each message as a summary prompt renders it
    xml_prefix = list(accumulate(map(counter.text, xml), initial=0))  # counter.text: once per text
    the_needle = needle()
    needle_at = [i for i, m in enumerate(messages) if the_needle.find(_said(m))]
    return Trajectory(
        messages=messages, calls=[r.messages_stored for r in calls],
        fixed=[r.by_kind["system"] + r.by_kind["tools"] for r in calls],
        system=[r.by_kind["system"] for r in calls],
        outputs=[r.output_tokens for r in calls], turns=[r.turn for r in calls],
        tool_calls=[list(r.tool_calls) for r in calls], prefix=prefix, by_kind=by_kind,
        facts=[summary_facts(x) for x in xml], xml_prefix=xml_prefix, needle_at=needle_at, counter=counter,
        size_of_id={id(m): s for m, s in zip(messages, sizes)},
        conversation=(getattr(run, "state", None) or {}).get(CONVERSATION_KEY) or conversation_key(messages))


@dataclass(frozen=True)
class Replay:
    """One re-simulation. ``records`` are what a Recorder would have recorded (a failed attempt
    before an overflow retry included), so ``plots.tokens_per_turn(replay)`` draws it.

    ``seen[i]`` — tokens of model call ``i`` of the trajectory after compaction (the retry's, after
    an overflow); ``events`` — ``summarize.Event`` objects, ``event_calls`` the call each happened
    at, ``event_records`` the first record that saw it; ``overflow`` — the first call whose
    request did not fit the window (rescued by the fallback or not); ``died_at`` — the call where
    the run would end, or ``None`` (an event made on that call is listed, and its summary call
    paid for, though a real run's state would not keep it: the error ends the step); ``needle``
    — one of ``NEEDLE_OUTCOMES``: the needle's line is ``visible`` at the final call (kept, or
    quoted by a summary), folded into the ``archive``, ``lost`` (folded, no archive), ``absent``
    (never fetched), or the run died (``overflow``).
    Notebook 07.
    """

    knobs: dict[str, Any]
    seen: tuple[int, ...]
    records: tuple[CallRecord, ...]
    events: tuple[Event, ...]
    event_calls: tuple[int, ...]
    event_records: tuple[int, ...]
    overflow: int | None
    died_at: int | None
    tokens_sent: int
    summary_input: int
    summary_output: int
    cost: float
    needle: str
    cached_cost: float = 0.0  # the same with a prompt cache (OpenAI's rule, reads at a quarter)

    @property
    def calls(self) -> int:
        """How many model calls of the trajectory were simulated."""
        return len(self.seen)

    def to_records(self) -> list[CallRecord]:
        """The records as a list (what ``plots.tokens_per_turn`` and ``plots.cost_curve`` take)."""
        return list(self.records)

    def event_marks(self) -> list[tuple[int, str]]:
        """``(record index, label)`` per compaction the model saw: ``trace.compaction_marks``, the
        same reader a real run's records go through (an event made on the call the run died on
        has none)."""
        return compaction_marks(self)

    def rows(self) -> list[dict[str, Any]]:
        """One row per event, for ``labkit.tables.table``."""
        return [{"event": e.number, "call": c, "reason": e.reason, "cut": e.cut,
                 "messages in state": e.created_at} for e, c in zip(self.events, self.event_calls)]


def _knobs(trigger, keep, window: int, profile: bool) -> SummarizeMiddleware:
    """The middleware itself checks the knobs and picks the defaults (model profile or none)."""
    check_limit("window", window, allow_none=False)
    stand_in = GenericFakeChatModel(messages=iter(()),  # never called: only its profile is read
                                    profile={"max_input_tokens": window} if profile else None)
    return SummarizeMiddleware(stand_in, trigger=trigger, keep=keep)


class _Prefix(Sequence):
    """The first ``n`` messages of a trajectory, without copying them (a view for ``next_fold``)."""

    def __init__(self, messages: list[BaseMessage], n: int) -> None:
        self.messages, self.n = messages, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k):
        if isinstance(k, slice):
            return self.messages[slice(*k.indices(self.n))]
        if not -self.n <= k < self.n:
            raise IndexError(k)
        return self.messages[k % self.n]


@dataclass
class _Session:
    """One replay's running state: the events so far and the records made. Each model call asks
    ``summarize.next_fold`` — the middleware's own decision — before it goes out, and again after
    an overflow; the model and the file are simulated: the summary is the lab model's, and an
    overflow is a request over the window."""

    t: Trajectory
    policy: SummarizeMiddleware
    window: int
    price: Any
    keep_figures: bool
    path: str | None
    events: list[Event] = field(default_factory=list)
    event_calls: list[int] = field(default_factory=list)
    event_records: list[int] = field(default_factory=list)
    records: list[CallRecord] = field(default_factory=list)
    summary_tokens: int = 0  # the summary message's tokens in the current view
    summary_in: int = 0
    summary_out: int = 0
    overflow: int | None = None  # the first call that went over the window
    cut: int = 0  # the last event's cut (0 before any)
    last_sent: tuple[int, int] | None = None  # (events so far, tokens) of the last request accepted

    def request(self, i: int, n: int) -> int:
        """The tokens call ``i`` sends with ``n`` messages in state, under the current event."""
        return self.t.fixed[i] + self.summary_tokens + self.t.prefix[n] - self.t.prefix[self.cut]

    def tokens(self, message: BaseMessage) -> int:
        """BPE tokens of a message in view: a recorded one's count, or the current summary's."""
        n = self.t.size_of_id.get(id(message))
        if n is None and self.events and message is summary_message(self.events[-1]):
            return self.summary_tokens  # the last event's summary, counted by pieces (carried)
        return self.t.tokens(message) if n is None else n

    def compact(self, i: int, n: int, reason: str, request: int) -> bool:
        """Ask the middleware's decision (``request``: the call's tokens now); on a fold, add its
        event. Did it compact?"""
        p, forced = self.policy, reason == "overflow"
        if not fold_due(n, self.events[-1] if self.events else None, request, p.trigger, p.window, forced):
            return False  # next_fold's own first test, asked before its view is built (most calls)
        planned = next_fold(_Prefix(self.t.messages, n), self.events, request, trigger=p.trigger,
                            keep=p.keep, window=p.window, count=self.tokens, forced=forced)
        if planned is None:
            return False
        last = self.events[-1] if self.events else None
        text, n_in, n_out = summary(self.t, planned.shown, last, planned.cut, self.keep_figures)
        self.summary_in, self.summary_out = self.summary_in + n_in, self.summary_out + n_out
        number = len(self.events) + 1
        kept = planned.shown[planned.cut] if planned.cut < len(planned.shown) else None
        event = Event(cut=planned.absolute, summary=text, archive=self.path, created_at=n, number=number,
                      reason=reason, section=section_of(self.t.conversation, number),
                      folded_to=message_key(planned.folded[-1]),
                      kept_from=None if kept is None else message_key(kept))
        self.events.append(event)
        self.cut = event.cut
        self.event_calls.append(i)
        self.event_records.append(len(self.records))  # the next record is the first to see its view
        self.summary_tokens = carried(self.t, event) + TOKENS_PER_MESSAGE
        return True

    def record(self, i: int, n: int, tokens: int, error: str | None = None) -> None:
        """Record call ``i`` as the Recorder would (``tokens``: what it sent)."""
        t, cut = self.t, self.cut
        by = dict.fromkeys(KINDS, 0)
        by["system"], by["tools"] = t.system[i], t.fixed[i] - t.system[i]
        for k in MESSAGE_KINDS:
            prefix = t.by_kind[k]
            by[k] = prefix[n] - prefix[cut]
        by["summary"] += self.summary_tokens
        out = 0 if error else t.outputs[i]
        # the prompt cache (labkit.caching): under the same summary, the last accepted request is a
        # prefix of this one; after a new compaction only the tools and system prompt are
        last = self.last_sent
        same = last is not None and last[0] == len(self.events)
        shared = last[1] if same else 0 if last is None else by["system"] + by["tools"]
        whole = shared if same else 0
        if error is None:
            self.last_sent = (len(self.events), tokens)
        self.records.append(CallRecord(
            index=len(self.records), turn=t.turns[i], stored=t.prefix[n], seen=tokens, by_kind=by,
            messages_stored=n, messages_seen=n - cut + (1 if self.events else 0), output_tokens=out,
            cost=0.0 if error else cost(tokens, out, self.price), error=error,
            overflow=error is not None,  # the only error a replay makes: a request over the window
            tool_calls=[] if error else t.tool_calls[i], shared_prefix=shared, whole_prefix=whole))

    def call(self, i: int, n: int) -> bool:
        """One model call as SummarizeMiddleware makes it: compact past the trigger; over the
        window, record the refusal, compact once more and retry once. Did the run survive?"""
        request = self.request(i, n)
        if self.compact(i, n, "trigger", request):
            request = self.request(i, n)
        if request > self.window:
            self.overflow = i if self.overflow is None else self.overflow
            self.record(i, n, request, _overflow_error(request, self.window))
            if not self.compact(i, n, "overflow", request):
                return False
            request = self.request(i, n)
            if request > self.window:
                self.record(i, n, request, _overflow_error(request, self.window))
                return False
        self.record(i, n, request)
        return True


def replay(run: Any, *, trigger: tuple | None = None, keep: tuple | None = None,
           window: int = 128_000, profile: bool = True, keep_figures: bool = False,
           archive: bool = True, price: str | tuple[float, float] = "lab-model",
           thread_id: str = "lab") -> Replay:
    """Re-simulate ``SummarizeMiddleware(trigger=, keep=)`` over a recorded run. Notebook 07.

    Args:
        run: a ``scenario.Run`` (recorded with a window large enough that nothing failed, e.g.
            ``scenario.run(LabModel(window=1_000_000))``) or its :func:`trajectory` (faster:
            measure once, replay many times).
        trigger, keep: the middleware's knobs (``None``: its defaults for this model).
        window: the model's context window — the overflow limit, and what fractions are of.
        profile: ``False`` for a model with no profile (deepagents' 170k / 6-message fallback).
        keep_figures: the summarizer keeps exact figures (the needle survives in the summary).
        archive: ``False`` to fold with no archive (destructive, as langchain's middleware).
        price: a row of ``labkit.tokens.PRICES`` or ``(input, output)`` dollars per million.
        thread_id: names the archive file.

    Example:
        >>> # r = replay(run, trigger=("fraction", 0.5), keep=("messages", 6), window=60_000)
        >>> # r.events, r.needle, plots.tokens_per_turn(r, window=60_000)
    """
    t = run if isinstance(run, Trajectory) else trajectory(run)
    policy = _knobs(trigger, keep, window, profile)
    if isinstance(price, str) and price not in PRICES:
        raise ValueError(f"unknown price {price!r}: choose one of {sorted(PRICES)}")
    rates = PRICES[price] if isinstance(price, str) else price  # looked up once, not per call
    s = _Session(t, policy, window, rates, keep_figures, archive_path(thread_id) if archive else None)
    seen: list[int] = []
    died_at = None
    for i, n in enumerate(t.calls):
        survived = s.call(i, n)
        seen.append(s.records[-1].seen)
        if not survived:
            died_at = i
            break
    agent_in = sum(r.seen for r in s.records if r.error is None)
    agent_out = sum(r.output_tokens for r in s.records)
    total = cost(agent_in, agent_out, price) + cost(s.summary_in, s.summary_out, price)
    tier = CachePrices(input=rates[0], read=rates[0] * 0.25, write=rates[0], output=rates[1])
    cached = sum(call_cost(r, tier, RULES["openai"]) for r in s.records)
    cached += cost(s.summary_in, s.summary_out, price)  # a summary call's prompt is new each time
    return Replay(
        knobs={"trigger": policy.trigger, "keep": policy.keep, "window": window, "profile": profile,
               "keep_figures": keep_figures, "archive": archive},
        seen=tuple(seen), records=tuple(s.records), events=tuple(s.events),
        event_calls=tuple(s.event_calls), event_records=tuple(s.event_records), overflow=s.overflow,
        died_at=died_at, tokens_sent=agent_in + s.summary_in, summary_input=s.summary_in,
        summary_output=s.summary_out, cost=total, cached_cost=cached,
        needle=_needle_outcome(t, t.calls[i], s.events, died_at is not None, keep_figures))


def _overflow_error(tokens: int, window: int) -> str:
    return (f"ContextOverflowError: prompt is too long: {tokens} tokens exceed the context window "
            f"of {window} tokens (replayed)")


def _needle_outcome(t: Trajectory, n: int, events: list[Event], died: bool, keep_figures: bool) -> str:
    """Where the needle's exact line is at the final call (see ``NEEDLE_OUTCOMES``)."""
    if died:
        return "overflow"
    present = [i for i in t.needle_at if i < n]
    if not present:
        return "absent"
    last = events[-1] if events else None
    cut = last.cut if last else 0
    if any(i >= cut for i in present) or (last and needle().find(last.summary)):
        return "visible"
    return "archive" if last.archive else "lost"
