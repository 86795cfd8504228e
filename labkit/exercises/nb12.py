"""Exercises for notebook 12 · Isolation with subagents.

q1 asks for the smallest ``output_cap`` (in tokens) of the researcher at which the parent still
answers the needle question from its own context. The checker runs the fan-out with the answer
and with the answer minus one, so it checks behaviour, not a number typed in here.
"""

from __future__ import annotations

from functools import cache
from types import SimpleNamespace

from labkit import LabModel, scenario
from labkit.exercises.core import Exercise, smallest_that_holds, whole_number
from labkit.isolate import IsolateMiddleware, SubagentSpec

__all__ = ["q1"]

WINDOW = 200_000


@cache
def _fanout(cap: int):
    """The fan-out with every researcher's reply capped at ``cap`` tokens: (run, children)."""

    model = LabModel(window=WINDOW, delegate_research=True)
    iso = IsolateMiddleware(model, [SubagentSpec(**scenario.researcher(), output_cap=cap)])
    return scenario.run(model, middleware=[iso], turns=scenario.FANOUT_TURNS), iso.children


def _answers(cap: int) -> bool:
    return _fanout(cap)[0].score.needle_correct


def _names() -> dict:
    """The names notebook 12 has defined by its exercise: ``iso`` of a run no cap reaches."""

    return {"iso": SimpleNamespace(children=_fanout(10_000)[1]), "scenario": scenario}


@whole_number("a whole number of tokens (such as 60)")
@smallest_that_holds(show=lambda cap: f"output_cap={cap}")
def _check_q1(cap: int) -> str | None:
    if cap <= 0:
        return f"an output cap is a positive number of tokens, not {cap}"
    if not _answers(cap):
        brightloom = _fanout(cap)[1][0].reply
        return (f"with output_cap={cap} Brightloom's reply is cut before the figure, and the "
                f"parent cannot answer. What it got ends: {brightloom[-160:]!r}")
    return None


q1 = Exercise(
    prompt="Cap every researcher's reply: SubagentSpec(**scenario.researcher(), output_cap=cap). "
           "What is the smallest cap, in tokens, at which the parent still answers the needle "
           "question (run.score.needle_correct) from what the subagents returned?",
    checker=_check_q1,
    hints=[
        "The needle is Brightloom's net_revenue_retention_q3, in the first child's reply "
        "(iso.children[0].reply in an uncapped run). The cap must reach past its figure — the "
        "whole figure, % sign included.",
        "cap_output cuts at exactly `cap` BPE tokens: encode the uncapped reply with "
        "labkit.tokens.encoding(), and find the fewest leading tokens whose decoded text holds "
        "scenario.needle().answer.",
    ],
    solution_text=(
        "from labkit.tokens import encoding\n"
        "reply, enc = iso.children[0].reply, encoding()  # from the uncapped run\n"
        "ids = enc.encode(reply)\n"
        "answer = next(n for n in range(1, len(ids) + 1)\n"
        "              if scenario.needle().answer in enc.decode(ids[:n]))"
    ),
    given=_names,
)
