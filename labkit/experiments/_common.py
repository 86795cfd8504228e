"""What the lessons' experiments share. Used by: labkit.experiments' modules."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from labkit import scenario
from labkit.summarize import SummarizeMiddleware
from labkit.trace import Recorder

__all__ = ["FIRST_TURN", "WINDOW", "compacting", "fetched"]

FIRST_TURN = scenario.TURNS[:1]
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
    """An observation: how many exports the model fetched, in how many calls."""
    n = len(run.tool_calls("fetch_market_data"))
    return f"it fetched {n} of 5 exports in {len(run.records)} model calls"
