"""Exercises for notebook 01 · Why context explodes.

q1 is a diagnosis: the learner writes ``diagnose(run, budget)``, and the checker runs it on seven
runs of the scenario, each of which died of one death or of none, and says which it got wrong
and what that run's records show. The runs are made once and cached (about 3 s on the lab model).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from langchain.agents.middleware import SummarizationMiddleware

from labkit import LabModel, scenario
from labkit.exercises.core import Exercise

__all__ = ["q1"]

DEATHS = ("overflow", "amnesia", "cost", "fine")


@dataclass(frozen=True)
class _Case:
    """One run the checker hands to ``diagnose``, with the budget and the death it died of."""

    what: str  # the run, in the learner's words
    make: Callable[[], object]
    budget: float
    death: str
    why: str  # what its records show


def _summarizing(window: int, trigger: int, keep: int):
    model = LabModel(window=window)
    middleware = SummarizationMiddleware(model, trigger=("tokens", trigger), keep=("messages", keep))
    return scenario.run(model, middleware=[middleware])


CASES = (
    _Case("the naive run on a 1M-token model, budget $5", lambda: scenario.run(LabModel(window=1_000_000)),
          5.0, "fine", "it did all its work and cost {cost}, within the budget"),
    _Case("the naive run on a 1M-token model, budget $1", lambda: scenario.run(LabModel(window=1_000_000)),
          1.0, "cost", "it did all its work, but its calls cost {cost} in all, over the $1 budget"),
    _Case("the naive run on a 128k model, budget $5", lambda: scenario.run(LabModel(window=128_000)),
          5.0, "overflow", "it ended with {error}"),
    _Case("the naive run on a 100k model, budget $0.25", lambda: scenario.run(LabModel(window=100_000)),
          0.25, "overflow", "it ended with {error}, before its cost ({cost}) mattered"),
    _Case("the 128k run with SummarizationMiddleware at 90,000 tokens, budget $5",
          lambda: _summarizing(128_000, 90_000, 6), 5.0, "amnesia",
          "no error, but the work was never done (goal completed: no) after a summary replaced the history"),
    _Case("a 200k run with SummarizationMiddleware at 60,000 tokens, keep 10, budget $5",
          lambda: _summarizing(200_000, 60_000, 10), 5.0, "amnesia",
          "no error, but the work was never done (goal completed: no) after a summary replaced the history"),
    _Case("a 100k run under create_deep_agent (it compacts), budget $5",
          lambda: scenario.run(LabModel(window=100_000), harness="deep"), 5.0, "fine",
          "it was compacted, yet it did all its work (goal completed: yes) for {cost}: a summary is not "
          "amnesia unless the work is lost"),
)


@cache
def _run(i: int):
    return CASES[i].make()


def _cost(run) -> float:
    return sum(r.cost for r in run.records)


def _explain(case: _Case, run) -> str:
    error = f"{type(run.error).__name__}" if run.error is not None else "no error"
    return case.why.format(cost=f"${_cost(run):.2f}", error=error)


def _check_q1(answer) -> str | None:
    if not callable(answer):
        return f"give the function itself, diagnose(run, budget), not {answer!r}"
    for i, case in enumerate(CASES):
        run = _run(i)
        try:
            said = answer(run, case.budget)
        except Exception as e:  # noqa: BLE001 — the learner's code; report it in words
            return f"diagnose raised {type(e).__name__}: {e} on {case.what}"
        if not isinstance(said, str) or said.strip().lower() not in DEATHS:
            return (f"diagnose returned {said!r} for {case.what}; return one of "
                    f"{', '.join(repr(d) for d in DEATHS)}")
        said = said.strip().lower()
        if said != case.death:
            return f"diagnose said {said!r} for {case.what}, but it is {case.death!r}: {_explain(case, run)}"
    return None


q1 = Exercise(
    prompt="Write diagnose(run, budget) that says what a finished scenario.run died of: 'overflow', "
           "'amnesia' or 'cost' (its calls cost more than budget dollars), or 'fine'. The checker "
           "runs it on seven runs.",
    checker=_check_q1,
    hints=[
        "Read a death from the run, not from its settings: run.error is the error it ended with "
        "(or None), run.score.goal_completed says whether the work got done, and each record in "
        "run.records has its .cost in dollars.",
        "Ask in order: did it end in an error? If not, was the work left undone? If not, did the "
        "cost of all its calls — sum(r.cost for r in run.records) — exceed the budget? A summary "
        "in the context is not amnesia by itself: only lost work is.",
    ],
    solution_text=(
        "def diagnose(run, budget):\n"
        "    if run.error is not None:\n"
        "        return 'overflow'\n"
        "    if not run.score.goal_completed:\n"
        "        return 'amnesia'\n"
        "    if sum(r.cost for r in run.records) > budget:\n"
        "        return 'cost'\n"
        "    return 'fine'\n\n"
        "answer = diagnose"
    ),
)
