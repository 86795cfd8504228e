"""Exercises for notebook 15 · Measuring it: targeted evals.

q1 asks how aggressively the trigger must be set before labkit's recommended setting (offload
first, then summarize) compacts at least ``MIN_COMPACTIONS`` times on the running example: the
largest trigger fraction, to two decimals. The checker runs the scenario at the answer and at
one hundredth above it, so it checks behaviour, not a number typed in here.
"""

from __future__ import annotations

from functools import cache

from labkit import evals
from labkit.exercises.core import Exercise, largest_that_holds, two_decimals

__all__ = ["q1"]

MIN_COMPACTIONS = 3
KEEP = ("fraction", 0.05)
WINDOW = 128_000


@cache
def _compactions(trigger: float) -> int:
    """How many times the recommended stack compacts at this trigger fraction."""

    setting = evals.Setting("q1", window=WINDOW, trigger=("fraction", trigger), keep=KEEP)
    run, _ = evals.trial(setting)
    return len(evals.compactions(run))


@two_decimals("a fraction of the window such as 0.5")
@largest_that_holds(step=0.01, show=lambda f: f"trigger=('fraction', {f:.2f})")
def _check_q1(fraction: float) -> str | None:
    if not KEEP[1] < fraction < 1:
        return (f"the trigger must be above keep ({KEEP[1]}) and below 1 (the whole window); "
                f"{fraction!r} is not")
    n = _compactions(fraction)
    if n < MIN_COMPACTIONS:
        return (f"at trigger {fraction:.2f} the recommended setting compacts {n} time(s), fewer than "
                f"{MIN_COMPACTIONS}: trigger lower")
    return None


q1 = Exercise(
    prompt=f"A targeted eval of the summary path needs compactions to look at. With labkit's "
           f"recommended setting (OffloadMiddleware, then SummarizeMiddleware with keep={KEEP}) on "
           f"the running example's {WINDOW:,}-token window, what is the largest trigger "
           f"('fraction', f), to two decimals, at which the run compacts at least "
           f"{MIN_COMPACTIONS} times? Run evals.trial(evals.Setting('try', trigger=('fraction', f), "
           f"keep={KEEP})) and count with evals.compactions(run).",
    checker=_check_q1,
    hints=[
        "Offloading keeps every request small: read the 'peak request' of the recommended row "
        "in section 1. A trigger above that fraction of the window can never fire.",
        "Each compaction folds the history down to the keep; the next one fires only when the "
        "request has grown back past the trigger. Lower the trigger a hundredth at a time from "
        "the peak's fraction, and watch the count step up.",
    ],
    solution_text="answer = 0.11  # 3 compactions; at 0.12 only 2. SummarizeMiddleware alone "
                  "compacts 8 times at 0.11 (replay): offloading leaves little to summarize, so "
                  "its summary path needs an even lower trigger to be tested at all",
)
