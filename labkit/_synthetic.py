"""A long recorded run for the replay benchmark: the running example, week after week.

Used by: labkit.replay (re-exported as ``replay.synthetic_run``), bench/bench_replay.py and
tests/test_replay.py. Nothing here runs a model: the trajectory is synthetic, for timing and
curves only.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from labkit import scenario
from labkit._sizes import check_count
from labkit.model import LabModel
from labkit.tokens import TokenCounter, cost
from labkit.trace import MESSAGE_KINDS, CallRecord, kind_of

__all__ = ["synthetic_run"]


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
    check_count("turns", turns, "model calls")
    source = scenario.run(LabModel(window=1_000_000)) if source is None else source
    if source.error is not None or any(r.error for r in source.records) or not source.records:
        raise ValueError("synthetic_run needs a source run with records and no failed call "
                         "(record it on a large window)")
    counter = TokenCounter()
    week_messages, week_calls = len(source.messages), len(source.records)
    messages: list[BaseMessage] = []
    records: list[CallRecord] = []
    sizes: list[int] = [0]
    kinds: dict[str, list[int]] = {k: [0] for k in MESSAGE_KINDS}
    for i in range(turns):
        week, r = divmod(i, week_calls)
        if week * week_messages >= len(messages):
            for m in source.messages:
                m = _relabel(m, week)
                size = counter.message(m)
                messages.append(m)
                sizes.append(sizes[-1] + size)
                for k in MESSAGE_KINDS:
                    kinds[k].append(kinds[k][-1] + (size if kind_of(m) == k else 0))
        base = source.records[r]
        n = week * week_messages + base.messages_stored
        by = {**base.by_kind, **{k: kinds[k][n] for k in MESSAGE_KINDS}}
        seen = sum(by.values())
        records.append(CallRecord(
            index=i, turn=week * len(scenario.TURNS) + base.turn, stored=sizes[n], seen=seen,
            by_kind=by, messages_stored=n, messages_seen=n, output_tokens=base.output_tokens,
            cost=cost(seen, base.output_tokens), tool_calls=list(base.tool_calls)))
    keep = min(len(messages), records[-1].messages_stored + 1)  # up to the last call's reply
    return scenario.Run(messages=messages[:keep], files={}, records=records,
                        turns_completed=(turns // week_calls) * len(scenario.TURNS))
