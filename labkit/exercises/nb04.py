"""Exercises for notebook 04 · Offloading tool results.

The checker runs the scenario itself at the answer and one token above it, so it judges the
mechanism (what fits the window), not a number typed here.
"""

from __future__ import annotations

from functools import lru_cache

from labkit import LabModel, scenario
from labkit.exercises.core import Exercise, largest_that_holds, whole_number
from labkit.offload import OffloadMiddleware
from labkit.tokens import count_tokens

__all__ = ["q1"]

WINDOW = 64_000


@lru_cache(maxsize=64)
def _fits(tool_limit: int) -> bool:
    """Does the scenario, offloading results over ``tool_limit`` tokens, stay inside WINDOW?"""

    run = scenario.run(LabModel(window=WINDOW), middleware=[OffloadMiddleware(tool_limit=tool_limit)])
    return run.error is None


def _sizes() -> dict[str, int]:
    return {c["ticker"]: count_tokens(scenario.export_text(c["ticker"])) for c in scenario.companies()}


def _names() -> dict:
    """The names notebook 04 has imported by its exercise."""

    return {"scenario": scenario, "LabModel": LabModel, "OffloadMiddleware": OffloadMiddleware,
            "count_tokens": count_tokens}


@whole_number("a whole number of tokens")
@largest_that_holds(show=lambda limit: f"tool_limit={limit:,}")
def _check_q1(limit: int) -> str | None:
    if limit <= 0:
        return "a tool_limit must be a whole number of tokens > 0"
    if not _fits(limit):
        if exact := [t for t, n in _sizes().items() if n == limit]:
            return (f"{limit:,} is exactly the size of the {exact[0]} export, and the rule evicts only "
                    f"results *over* the limit: {exact[0]} stays in the context and the run overflows "
                    f"the {WINDOW:,}-token window")
        return f"with tool_limit={limit:,} the run overflows the {WINDOW:,}-token window: lower it"
    return None


q1 = Exercise(
    prompt=f"What is the largest tool_limit for which OffloadMiddleware(tool_limit=...) keeps the "
           f"scenario inside a {WINDOW:,}-token window, LabModel(window={WINDOW:_})?",
    checker=_check_q1,
    hints=[
        "A result is evicted when its BPE token count is over tool_limit. So the run only changes "
        "where the limit crosses the size of an export: measure the five exports with "
        "count_tokens(scenario.export_text(ticker)).",
        "Try each export's size as the limit: scenario.run(LabModel(window=64_000), "
        "middleware=[OffloadMiddleware(tool_limit=n)]) and look at run.error — or move the panel's "
        "window to 64,000 and its tool_limit up until the run overflows.",
        "The answer is one less than the size of the smallest export that must stay evicted.",
    ],
    solution_text=(
        "sizes = sorted(count_tokens(scenario.export_text(c['ticker'])) for c in scenario.companies())\n"
        "fits = lambda n: scenario.run(LabModel(window=64_000),\n"
        "                              middleware=[OffloadMiddleware(tool_limit=n)]).error is None\n"
        "answer = next(n - 1 for n in reversed(sizes) if fits(n - 1))"
    ),
    given=_names,
)
