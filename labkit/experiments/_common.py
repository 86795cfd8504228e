"""What the lessons' experiments share. Used by: labkit.experiments' modules."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from labkit import scenario
from labkit.summarize import SummarizeMiddleware, events_of
from labkit.summarize.archive import read_archive
from labkit.trace import Recorder

__all__ = ["FIRST_TURN", "WINDOW", "archived", "call_ids", "compacting", "fetched"]

FIRST_TURN = scenario.TURNS[:1]
_TICKERS = {c["ticker"] for c in scenario.companies()}
WINDOW = 32_000  # the window the experiments assume for the lab model, and give the summarizer


def compacting(trigger: tuple, keep: tuple, *, scale: float, turns: Sequence[str] = FIRST_TURN,
               keep_requests: bool = False) -> Callable:
    """An experiment's run that compacts: the scenario's ``turns`` under labkit's
    SummarizeMiddleware(``trigger``, ``keep``), exports at ``scale``, the progress printer after it."""
    def run(model, extra):
        middleware = [SummarizeMiddleware(model, trigger=trigger, keep=keep, window=WINDOW), *extra]
        return scenario.run(model, middleware=middleware, turns=turns, export_scale=scale,
                            recorder=Recorder(keep_requests=True) if keep_requests else None)

    return run


def fetched(run: scenario.Run) -> str:
    """An observation: how many of the five exports the model fetched, in how many calls, and how
    many fetches repeated one."""
    calls = run.tool_calls("fetch_market_data")
    distinct = {str((tc.get("args") or {}).get("ticker")) for tc in calls}
    again = f" ({len(calls) - len(distinct)} of them again)" if len(calls) > len(distinct) else ""
    return f"it fetched {len(distinct & _TICKERS)} of 5 exports in {len(run.records)} model calls" + again


def archived(run: scenario.Run) -> list[str]:
    """A check: every message each compaction folded is in its archive, word for word. (The
    archive may hold more: a run stopped between writing a section and its summary call — at the
    budget, say — leaves that section without an event; nothing is lost.)"""
    problems = []
    for e in events_of(run.state):
        archive = run.files.get(e.archive, "") if e.archive else None
        if archive is None:
            continue
        kept = [m for section in read_archive(archive) for m in section.messages]
        ids = {m.id for m in kept if m.id}
        lost = [m for m in run.messages[:e.cut] if not (m.id in ids if m.id else m in kept)]
        if lost:
            problems.append(f"compaction {e.number}: {len(lost)} folded messages are not in {e.archive}")
    return problems


def call_ids(messages) -> set:
    """The ids of every tool call the AI messages made, malformed ones included: langchain answers
    a call whose arguments are not JSON with an error of its own, sent with the call as it came."""
    return {tc.get("id") for m in messages for tc in [*(getattr(m, "tool_calls", None) or []),
                                                      *(getattr(m, "invalid_tool_calls", None) or [])]}
