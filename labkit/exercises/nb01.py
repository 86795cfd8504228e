"""Exercises for notebook 01 · Why context explodes."""

from __future__ import annotations

from functools import cache

from labkit import LabModel, scenario
from labkit.exercises.core import Exercise, smallest_that_holds, whole_number

__all__ = ["q1"]


@cache
def _big():
    """Notebook 01's ``big``: the naive run on a 1M-token lab model, where nothing overflows."""

    return scenario.run(LabModel(window=1_000_000))


def _peak() -> int:
    """The most tokens the naive run ever shows the model."""
    return max(r.seen for r in _big().records)


@whole_number("a whole number of tokens")
@smallest_that_holds(step=1000, show=lambda window: f"a {window:,}-token window")
def _check_q1(window: int) -> str | None:
    if window % 1000:
        return f"round up to a multiple of 1,000 tokens (you gave {window:,})"
    if window < _peak():
        return f"a {window:,}-token window is too small: some call needs more than that"
    return None


q1 = Exercise(
    prompt="What is the smallest context window, rounded up to a multiple of 1,000 tokens, in "
           "which the naive run finishes without an overflow?",
    checker=_check_q1,
    hints=[
        "Every call re-sends the whole history, so the run needs a window as big as its biggest call.",
        "`max(r.seen for r in big.records)` is the biggest call of the run in section 3.",
        "Round up: `-(-peak // 1000) * 1000`.",
    ],
    solution_text="peak = max(r.seen for r in big.records)\nanswer = -(-peak // 1000) * 1000",
    given=lambda: {"big": _big()},
)
