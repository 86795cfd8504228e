"""Replay: re-run the summarization policy over a recorded run with new knobs — no agent loop.

Notebook 07 introduces it (the sliders of ``labkit.widgets.knobs`` call it on every move);
notebook 09 replays the full record. A recorded run holds the whole story: every message in
state (``run.messages``) and, per model call, how many of them existed
(``records[i].messages_stored``) and the fixed part of the request (system prompt and tool
schemas). :func:`replay` walks those calls and asks, at each one, what
``labkit.summarize.SummarizeMiddleware`` would do with the given ``trigger``, ``keep`` and
``window`` — using the middleware's own pure policy: :func:`~labkit.summarize.should_compact`,
:func:`~labkit.summarize.fold` (the view, and the pair-safe cut found by token bisection) and
:func:`~labkit.summarize.summary_message`. The
knobs are checked, and their defaults chosen, by building a ``SummarizeMiddleware`` itself.

It answers, per setting: the tokens the model would see on each call, the compaction events
(which call, which cut, trigger or overflow), the first call over the window, the tokens sent and
their illustrative cost, summary calls included, and what became of the needle — still *visible*
in the final call's view, folded into the *archive* (recoverable with grep), or *lost* (folded
with no archive, as langchain's destructive ``SummarizationMiddleware`` does).

**What the replay assumes.** The trajectory — what the model does, call by call — does not
change with the knobs. A real model may act differently after a lossy summary (repeat a fetch,
grep the archive for the needle); the lab model does so too, near the end of the scenario. So
the replay shows context size and cost under a policy, not behaviour: for behaviour, run the
scenario (``tests/test_replay.py`` checks that both agree wherever the trajectory is the same).

Estimates, stated: the summary text is the lab model's own extractive summary
(:func:`labkit.model.summarize`, a pure function, about a millisecond per 100k tokens folded) of
exactly the text the middleware would send; the summary call's *input* tokens are the prompt
template plus each folded message rendered as in the prompt, counted one by one (BPE of a
concatenation differs by a handful of tokens from the sum of its parts). Costs use
``labkit.tokens.cost``; failed calls cost nothing, as with the Recorder.

Speed: :func:`trajectory` counts every message once (BPE, ``TokenCounter``) and keeps prefix
sums, so a call costs O(1) and a compaction O(messages shown); ``bench/bench_replay.py`` times a
200-call replay (:func:`synthetic_run`).

What it leaves out: offloading (``labkit.offload`` edits the messages themselves, so it needs a
real run), the ``compact_conversation`` tool (a model decision, so part of the trajectory), and
deepagents' own middleware (chars/4 trigger, another cut rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage, get_buffer_string

from labkit.summarize import (Event, SummarizeMiddleware, archive_path, fold, section_id, should_compact,
                              summary_message, summary_prompt)
from labkit.tokens import PRICES, TokenCounter, cost, message_text
from labkit.trace import KINDS, CallRecord, kind_of

__all__ = ["NEEDLE_OUTCOMES", "Replay", "Trajectory", "replay", "synthetic_run", "trajectory"]

NEEDLE_OUTCOMES = ("visible", "archive", "lost", "absent", "overflow")
_MESSAGE_KINDS = ("human", "ai", "tool", "summary")


def _xml(message: BaseMessage) -> str:
    """A message as the summary prompt renders it."""
    return get_buffer_string([message], format="xml")


@dataclass(eq=False)
class Trajectory:
    """A recorded run, measured once: what :func:`replay` reads.

    ``calls[i]`` is the number of state messages at model call ``i``; ``fixed[i]`` its system
    prompt + tool schema tokens; ``prefix[k]`` the BPE tokens of ``messages[:k]`` (each message
    as ``TokenCounter.message`` counts it); ``by_kind[kind][k]`` the same per kind;
    ``needle_at`` the messages holding the needle's exact line.
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
    xml: list[str]
    xml_prefix: list[int]
    needle_at: list[int]
    counter: TokenCounter
    size_of_id: dict[int, int]
    memo: dict = field(default_factory=dict)  # summaries already made, by fold (slider moves reuse them)

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


def trajectory(run: Any, counter: TokenCounter | None = None) -> Trajectory:
    """Measure a recorded run once (``scenario.Run``, or anything with ``messages`` and
    ``records``): per-message tokens, prefix sums, the calls and their fixed part."""
    from labkit.scenario import needle

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
            raise ValueError(f"record {r.index} says {r.messages_stored} messages were stored, but the "
                             f"run has {len(messages)} messages and the previous call had {last}")
        last = r.messages_stored
    counter = counter or TokenCounter()
    sizes = [counter.message(m) for m in messages]
    kinds = [kind_of(m) for m in messages]
    prefix, by_kind = [0], {k: [0] for k in _MESSAGE_KINDS}
    for size, kind in zip(sizes, kinds):
        prefix.append(prefix[-1] + size)
        for k in _MESSAGE_KINDS:
            by_kind[k].append(by_kind[k][-1] + (size if k == kind else 0))
    xml, xml_tokens, xml_prefix = [], {}, [0]
    for m in messages:
        text = _xml(m)
        if text not in xml_tokens:
            xml_tokens[text] = counter.text(text)
        xml.append(text)
        xml_prefix.append(xml_prefix[-1] + xml_tokens[text])
    the_needle = needle()
    needle_at = [i for i, m in enumerate(messages) if the_needle.find(message_text(m))]
    return Trajectory(
        messages=messages, calls=[r.messages_stored for r in calls],
        fixed=[r.by_kind["system"] + r.by_kind["tools"] for r in calls],
        system=[r.by_kind["system"] for r in calls],
        outputs=[r.output_tokens for r in calls], turns=[r.turn for r in calls],
        tool_calls=[list(r.tool_calls) for r in calls], prefix=prefix, by_kind=by_kind, xml=xml,
        xml_prefix=xml_prefix, needle_at=needle_at, counter=counter,
        size_of_id={id(m): s for m, s in zip(messages, sizes)})


@dataclass(frozen=True)
class Replay:
    """One re-simulation. ``records`` are what a Recorder would have recorded (a failed attempt
    before an overflow retry included), so ``plots.tokens_per_turn(replay)`` draws it.

    ``seen[i]`` — tokens of model call ``i`` of the trajectory after compaction (the retry's, after
    an overflow); ``events`` — ``summarize.Event`` objects, ``event_calls`` the call each happened
    at, ``event_records`` the first record that saw it; ``overflow`` — the first call whose request did not fit the window (rescued by the
    fallback or not); ``died_at`` — the call where the run would end, or ``None`` (an event made
    on that call is listed, and its summary call paid for, though a real run's state would not
    keep it: the error ends the step); ``needle`` — one of ``NEEDLE_OUTCOMES``: the needle's line is
    ``visible`` at the final call (kept, or quoted by a summary), folded into the ``archive``,
    ``lost`` (folded, no archive), ``absent`` (never fetched), or the run died (``overflow``).
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

    @property
    def calls(self) -> int:
        """How many model calls of the trajectory were simulated."""
        return len(self.seen)

    def to_records(self) -> list[CallRecord]:
        """The records as a list (what ``plots.tokens_per_turn`` and ``plots.cost_curve`` take)."""
        return list(self.records)

    def event_marks(self) -> list[tuple[int, str]]:
        """``(record index, label)`` per event: the first call that saw the compacted view."""
        return [(index, f"compaction {e.number} ({e.reason}): messages 0–{e.cut - 1} folded")
                for e, index in zip(self.events, self.event_records)]

    def rows(self) -> list[dict[str, Any]]:
        """One row per event, for ``labkit.tables.table``."""
        return [{"event": e.number, "call": c, "reason": e.reason, "cut": e.cut,
                 "messages in state": e.created_at} for e, c in zip(self.events, self.event_calls)]


def _knobs(trigger, keep, window: int, profile: bool) -> SummarizeMiddleware:
    """The middleware itself checks the knobs and picks the defaults (model profile or none)."""
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise ValueError(f"window must be a whole number of tokens > 0, got {window!r}")
    stand_in = GenericFakeChatModel(messages=iter(()),  # never called: only its profile is read
                                    profile={"max_input_tokens": window} if profile else None)
    return SummarizeMiddleware(stand_in, trigger=trigger, keep=keep)


def _summary(t: Trajectory, shown: list[BaseMessage], last: Event | None, cut: int,
             keep_figures: bool) -> tuple[str, int, int]:
    """The lab model's summary of ``shown[:cut]`` and the summary call's input and output tokens."""
    from labkit.model import lab_summary

    first = last.cut if last else 0
    absolute = first + cut - (1 if last else 0)
    key = (last.summary if last else None, first, absolute, keep_figures)
    if key not in t.memo:
        if len(t.memo) > 4096:  # a long slider session: start again rather than grow without end
            t.memo.clear()
        head = [_xml(shown[0])] if last else []
        text = "\n".join(head + t.xml[first:absolute])
        template = t.memo.get(("template", keep_figures))
        if template is None:
            template = t.memo[("template", keep_figures)] = t.counter.text(summary_prompt([], keep_figures)) + 3
        n_in = template + t.xml_prefix[absolute] - t.xml_prefix[first] + (
            t.counter.text(head[0]) if head else 0)
        summary = lab_summary(text, keep_figures=keep_figures)
        t.memo[key] = (summary, n_in, t.counter.text(summary))
    return t.memo[key]


def replay(run: Any, *, trigger: tuple | None = None, keep: tuple | None = None,
           window: int = 128_000, profile: bool = True, keep_figures: bool = False,
           archive: bool = True, price: str | tuple[float, float] = "lab-model",
           thread_id: str = "lab") -> Replay:
    """Re-simulate ``SummarizeMiddleware(trigger=, keep=)`` over a recorded run.

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
    path = archive_path(thread_id) if archive else None
    events: list[Event] = []
    event_calls: list[int] = []
    event_records: list[int] = []
    records: list[CallRecord] = []
    seen: list[int] = []
    summary_tokens = 0  # the summary message's tokens in the current view
    summary_in = summary_out = 0
    overflow = died_at = None

    def compact(n: int, reason: str) -> Event | None:
        """What SummarizeMiddleware.compact decides — without the model call or the file."""
        nonlocal summary_in, summary_out
        planned = fold(t.messages[:n], events, policy.keep, policy.window, t.tokens)
        if planned is None:
            return None
        shown, _, cut, absolute = planned
        text, n_in, n_out = _summary(t, shown, events[-1] if events else None, cut, keep_figures)
        summary_in += n_in
        summary_out += n_out
        number = len(events) + 1
        return Event(cut=absolute, summary=text, archive=path, created_at=n,
                     number=number, reason=reason, section=section_id(t.messages, number))

    def add(event: Event, call: int) -> int:
        events.append(event)
        event_calls.append(call)
        event_records.append(len(records))  # the next record is the first to see its view
        return t.counter.message(summary_message(event))

    def record(i: int, n: int, tokens: int, error: str | None = None) -> None:
        cut = events[-1].cut if events else 0
        by = dict.fromkeys(KINDS, 0)
        by["system"], by["tools"] = t.system[i], t.fixed[i] - t.system[i]
        for k in _MESSAGE_KINDS:
            by[k] = t.by_kind[k][n] - t.by_kind[k][cut]
        by["summary"] += summary_tokens if events else 0
        out = 0 if error else t.outputs[i]
        records.append(CallRecord(
            index=len(records), turn=t.turns[i], stored=t.prefix[n], seen=tokens, by_kind=by,
            messages_stored=n, messages_seen=n - cut + (1 if events else 0), output_tokens=out,
            cost=0.0 if error else cost(tokens, out, price), error=error,
            tool_calls=[] if error else t.tool_calls[i]))

    def request(i: int, n: int) -> tuple[int, int]:
        cut = events[-1].cut if events else 0
        shown = n - cut + (1 if events else 0)
        return t.fixed[i] + summary_tokens + t.prefix[n] - t.prefix[cut], shown

    for i, n in enumerate(t.calls):
        tokens, shown = request(i, n)
        if should_compact(tokens, shown, policy.trigger, policy.window):
            event = compact(n, "trigger")
            if event:
                summary_tokens = add(event, i)
                tokens, _ = request(i, n)
        if tokens > window:
            overflow = i if overflow is None else overflow
            record(i, n, tokens, _overflow_error(tokens, window))
            event = compact(n, "overflow")
            if event is None:
                died_at = i
                break
            summary_tokens = add(event, i)
            tokens, _ = request(i, n)
            if tokens > window:
                record(i, n, tokens, _overflow_error(tokens, window))
                died_at = i
                break
        record(i, n, tokens)
        seen.append(tokens)
    if died_at is not None:
        seen.append(records[-1].seen)
    agent_in = sum(r.seen for r in records if r.error is None)
    agent_out = sum(r.output_tokens for r in records)
    total = cost(agent_in, agent_out, price) + cost(summary_in, summary_out, price)
    return Replay(
        knobs={"trigger": policy.trigger, "keep": policy.keep, "window": window, "profile": profile,
               "keep_figures": keep_figures, "archive": archive},
        seen=tuple(seen), records=tuple(records), events=tuple(events),
        event_calls=tuple(event_calls), event_records=tuple(event_records), overflow=overflow, died_at=died_at,
        tokens_sent=agent_in + summary_in, summary_input=summary_in, summary_output=summary_out,
        cost=total, needle=_needle_outcome(t, t.calls[i], events, died_at is not None, keep_figures))


def _overflow_error(tokens: int, window: int) -> str:
    return (f"ContextOverflowError: prompt is too long: {tokens} tokens exceed the context window "
            f"of {window} tokens (replayed)")


def _needle_outcome(t: Trajectory, n: int, events: list[Event], died: bool, keep_figures: bool) -> str:
    """Where the needle's exact line is at the final call (see ``NEEDLE_OUTCOMES``)."""
    from labkit.scenario import needle

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


# -- a long trajectory for the benchmark -----------------------------------------------------------


def _relabel(message: BaseMessage, week: int) -> BaseMessage:
    """A copy whose tool-call ids are unique to this week, so pairs stay unambiguous."""
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = [{**c, "id": f"w{week}_{c['id']}"} for c in message.tool_calls]
        return message.model_copy(update={"tool_calls": calls, "id": None})
    if isinstance(message, ToolMessage):
        return message.model_copy(update={"tool_call_id": f"w{week}_{message.tool_call_id}", "id": None})
    return message.model_copy(update={"id": None})


def synthetic_run(turns: int = 200, source: Any = None):
    """A recorded run of ``turns`` model calls, made by repeating a real one: as if the agent
    did the weekly report week after week on one thread and nothing was ever compacted.

    ``source`` is a recorded run with no failed call (default: the scenario on a 1,000,000-token
    window, 15 calls). Week ``w`` repeats its messages (tool-call ids prefixed ``w<w>_``) and its
    calls, each seeing everything before it; the records are measured as the Recorder measures.
    Nothing here ran a model: the trajectory is synthetic, and for timing and curves only.
    """
    from labkit import scenario
    from labkit.model import LabModel

    if isinstance(turns, bool) or not isinstance(turns, int) or turns <= 0:
        raise ValueError(f"turns must be a whole number of model calls > 0, got {turns!r}")
    source = scenario.run(LabModel(window=1_000_000)) if source is None else source
    if source.error is not None or any(r.error for r in source.records) or not source.records:
        raise ValueError("synthetic_run needs a source run with records and no failed call "
                         "(record it on a large window)")
    counter = TokenCounter()
    week_messages, week_calls = len(source.messages), len(source.records)
    messages: list[BaseMessage] = []
    records: list[CallRecord] = []
    sizes: list[int] = [0]
    kinds: dict[str, list[int]] = {k: [0] for k in _MESSAGE_KINDS}
    for i in range(turns):
        week, r = divmod(i, week_calls)
        if week * week_messages >= len(messages):
            for m in source.messages:
                m = _relabel(m, week)
                size = counter.message(m)
                messages.append(m)
                sizes.append(sizes[-1] + size)
                for k in _MESSAGE_KINDS:
                    kinds[k].append(kinds[k][-1] + (size if kind_of(m) == k else 0))
        base = source.records[r]
        n = week * week_messages + base.messages_stored
        by = {**base.by_kind, **{k: kinds[k][n] for k in _MESSAGE_KINDS}}
        seen = sum(by.values())
        records.append(CallRecord(
            index=i, turn=week * len(scenario.TURNS) + base.turn, stored=sizes[n], seen=seen,
            by_kind=by, messages_stored=n, messages_seen=n, output_tokens=base.output_tokens,
            cost=cost(seen, base.output_tokens), tool_calls=list(base.tool_calls)))
    keep = min(len(messages), records[-1].messages_stored + 1)  # up to the last call's reply
    return scenario.Run(messages=messages[:keep], files={}, records=records,
                        turns_completed=(turns // week_calls) * len(scenario.TURNS))
