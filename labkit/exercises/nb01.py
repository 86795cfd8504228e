"""Exercises for notebook 01 · Why context explodes."""

from __future__ import annotations

from functools import cache

from labkit.exercises.core import Exercise

__all__ = ["q1"]


@cache
def _peak() -> int:
    """The most tokens the naive run ever shows the model (measured on a 1M-token lab model)."""
    from labkit import LabModel, scenario

    return max(r.seen for r in scenario.run(LabModel(window=1_000_000)).records)


def _check_q1(answer) -> str | None:
    if isinstance(answer, bool) or not isinstance(answer, int):
        return f"answer with a whole number of tokens, not {answer!r}"
    if answer % 1000:
        return f"round up to a multiple of 1,000 tokens (you gave {answer:,})"
    peak = _peak()
    if answer < peak:
        return f"a {answer:,}-token window is too small: some call needs more than that"
    if answer - 1000 >= peak:
        return f"{answer - 1000:,} tokens would also do: look for the smallest window"
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
)
