"""Exercises for notebook 07 · Summarization knobs.

q1 is the no-profile trap turned around: on a 128,000-token model with no profile, labkit's
``SummarizeMiddleware`` falls back to a ``("tokens", 170_000)`` trigger, above the window, and a
request is refused before it ever fires. What is the largest ``("tokens", n)`` trigger (the
fallback's keep left as it is) for which no request is refused? The checker runs the scenario at
the answer and one token above it, so it judges the mechanism, not a number typed here.
"""

from __future__ import annotations

from functools import lru_cache

from labkit import LabModel, scenario
from labkit.exercises.core import Exercise, largest_that_holds, whole_number
from labkit.summarize import SummarizeMiddleware

__all__ = ["WINDOW", "q1", "refused"]

WINDOW = 128_000
FALLBACK = 170_000


@lru_cache(maxsize=64)
def refused(n: int) -> tuple[int, int] | None:
    """``(model call, tokens)`` of the first request the model refused with
    ``SummarizeMiddleware(trigger=("tokens", n))`` on a no-profile 128k model, or ``None``. Notebook 07."""

    model = LabModel(window=WINDOW, profile=None)
    run = scenario.run(model, middleware=[SummarizeMiddleware(model, trigger=("tokens", n))])
    return next(((r.index, r.seen) for r in run.records if r.error), None)


def _names() -> dict:
    """The names notebook 07 has imported by its exercise."""

    return {"scenario": scenario, "LabModel": LabModel}


def _check_q1(answer) -> str | None:
    if isinstance(answer, (tuple, list)):
        return f"answer with n alone (a whole number), not the tuple {tuple(answer)!r}"
    return _check_n(answer)


@whole_number("a whole number of tokens")
@largest_that_holds(show=lambda n: f"trigger=('tokens', {n:,})")
def _check_n(n: int) -> str | None:
    if n <= 0:
        return "a ('tokens', n) trigger needs a whole number n > 0"
    lost = refused(n)
    if lost is not None:
        call, tokens = lost
        where = "the fallback itself" if n == FALLBACK else f"trigger=('tokens', {n:,})"
        return (f"with {where} call {call} is refused: its {tokens:,}-token request is over the "
                f"{WINDOW:,}-token window but under the trigger, so nothing compacted it first — lower it")
    return None


q1 = Exercise(
    prompt=f"A model with no profile and a {WINDOW:,}-token window: SummarizeMiddleware's fallback "
           f"trigger ('tokens', {FALLBACK:_}) lets a request be refused. Keeping the fallback's keep, "
           "what is the largest n for which trigger=('tokens', n) never lets a request be refused?",
    checker=_check_q1,
    hints=[
        "The trigger is tested on the request about to be sent, before it goes out, and it fires at "
        "tokens >= n. The model refuses a request only when it is over the window. So a request is "
        "lost only if it is over the window and still under the trigger.",
        "Until the first compaction, every request is the same as in the naive run: look at "
        "scenario.run(LabModel(window=128_000)).records — which is the first request over 128,000 "
        "tokens?",
        "The answer is the size of that request: a trigger of exactly that many tokens fires on it.",
    ],
    solution_text=(
        "naive = scenario.run(LabModel(window=128_000))\n"
        "answer = next(r.seen for r in naive.records if r.seen > 128_000)"
    ),
    given=_names,
)
