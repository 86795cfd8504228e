"""Exercises for notebook 11 · When the wall is hit.

q1 asks for the largest gate (two decimals) at which the boundary compaction at the start of
turn 2 goes through, at a 128k window. The checker runs the scenario with the answer and with
the answer plus 0.01, so it checks behaviour, not a number typed in here.
"""

from __future__ import annotations

from functools import cache

from langchain_core.messages import HumanMessage, ToolMessage

from labkit import LabModel, scenario
from labkit.exercises.core import Exercise, largest_that_holds, two_decimals
from labkit.summarize import SummarizeMiddleware

__all__ = ["q1"]

WINDOW = 128_000


@cache
def _turn2_answer(gate: float) -> str:
    """What compact_conversation answered at the start of turn 2, with this gate."""

    model = LabModel(window=WINDOW, compact_when="boundary")
    run = scenario.run(model, middleware=[SummarizeMiddleware(model, manual_tool=True, gate=gate)])
    second = [i for i, m in enumerate(run.messages) if isinstance(m, HumanMessage)][1]
    return next(m.content for m in run.messages[second:]
                if isinstance(m, ToolMessage) and m.name == "compact_conversation")


def _compacts(gate: float) -> bool:
    return _turn2_answer(round(gate, 2)).startswith("Compacted")


@two_decimals("a number, the gate as a fraction of the trigger (such as 0.45)")
@largest_that_holds(step=0.01, show=lambda gate: f"gate={gate:.2f}")
def _check_q1(gate: float) -> str | None:
    if not 0 < gate <= 1:
        return f"a gate is a fraction of the trigger, in (0, 1]; {gate!r} is outside it"
    if not _compacts(gate):
        return (f"with gate={gate:.2f} the compaction at the start of turn 2 is still refused: "
                f"{_turn2_answer(round(gate, 2))!r}")
    return None


q1 = Exercise(
    prompt="At a 128k window the default gate (0.5) refused the boundary compaction at the start "
           "of turn 2. What is the largest gate g, to two decimal places, at which "
           "SummarizeMiddleware(model, manual_tool=True, gate=g) lets it through?",
    checker=_check_q1,
    hints=[
        "The refusal says how many tokens the view held and where the gate was: the gate is "
        "int(trigger tokens x g), and the trigger is 0.85 x 128,000 = 108,800 tokens.",
        "The tool compacts when the view's tokens >= int(108,800 x g). Divide the tokens in the "
        "refusal by 108,800 and round *down* to two decimals.",
    ],
    solution_text="answer = 0.48  # the refusal's tokens / 108,800 tokens of trigger, rounded down",
)
