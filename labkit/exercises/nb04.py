"""Exercises for notebook 04 · Offloading tool results.

The checker runs the scenario itself at the answer and one token above it, so it judges the
mechanism (what fits the window), not a number typed here.
"""

from __future__ import annotations

from functools import lru_cache

from labkit.exercises.core import Exercise

__all__ = ["q1"]

WINDOW = 64_000


@lru_cache(maxsize=64)
def _fits(tool_limit: int) -> bool:
    """Does the scenario, offloading results over ``tool_limit`` tokens, stay inside WINDOW?"""
    from labkit import scenario
    from labkit.model import LabModel
    from labkit.offload import OffloadMiddleware

    run = scenario.run(LabModel(window=WINDOW), middleware=[OffloadMiddleware(tool_limit=tool_limit)])
    return run.error is None


def _sizes() -> dict[str, int]:
    from labkit import scenario
    from labkit.tokens import count_tokens

    return {c["ticker"]: count_tokens(scenario.export_text(c["ticker"])) for c in scenario.companies()}


def _check_q1(answer) -> str | None:
    if answer is None:
        return "answer with a whole number of tokens (None switches eviction off, and then the run overflows)"
    if isinstance(answer, bool) or not isinstance(answer, int):
        return f"answer with a whole number (an int), not {answer!r}"
    if answer <= 0:
        return "a tool_limit must be a whole number of tokens > 0"
    exact = [t for t, n in _sizes().items() if n == answer]
    if not _fits(answer):
        if exact:
            return (f"{answer:,} is exactly the size of the {exact[0]} export, and the rule evicts only "
                    f"results *over* the limit: {exact[0]} stays in the context and the run overflows "
                    f"the {WINDOW:,}-token window")
        return f"with tool_limit={answer:,} the run overflows the {WINDOW:,}-token window: lower it"
    if _fits(answer + 1):
        return (f"tool_limit={answer + 1:,} still keeps the run inside the window: the largest limit "
                "is higher")
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
)
