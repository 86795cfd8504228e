"""Exercises for notebook 14 · Goal anchors.

q1 asks for the smallest ``keep`` (in messages) at which the todo-anchored run, under
deepagents' summarization every 8 messages, never loses its goal and repeats no step. The
checker runs the scenario with the answer and with one message less, so it checks behaviour,
not a number typed in here.
"""

from __future__ import annotations

from functools import cache

from labkit import evals
from labkit.exercises.core import Exercise, smallest_that_holds, whole_number

__all__ = ["q1"]

TRIGGER = 8


@cache
def _outcome(keep: int) -> tuple[int, int, bool]:
    """(goal losses, steps repeated, goal completed) of the todo-anchored run at this keep."""

    score = evals.forced_compaction("todo", trigger=TRIGGER, keep=keep).score
    return score.goal_lost, score.steps_repeated, score.goal_completed


def _holds(keep: int) -> bool:
    lost, repeated, completed = _outcome(keep)
    return lost == 0 and repeated == 0 and completed


@whole_number("a whole number of messages (such as 5)")
@smallest_that_holds(show=lambda keep: f"keep={keep}")
def _check_q1(keep: int) -> str | None:
    if not 1 <= keep < TRIGGER:
        return f"keep must be at least 1 and below the trigger ({TRIGGER} messages); {keep!r} is not"
    if not _holds(keep):
        lost, repeated, _ = _outcome(keep)
        return (f"with keep={keep} the todo-anchored run still drifts: it lost the goal {lost}x "
                f"and repeated {repeated} steps")
    return None


q1 = Exercise(
    prompt="Under deepagents' SummarizationMiddleware firing every 8 messages (its constructor's "
           "trim of 4,000 tokens), what is the smallest keep, in messages, at which the "
           "todo-anchored run loses its goal 0 times and repeats no step? Find it by running "
           "evals.forced_compaction('todo', keep=k).",
    checker=_check_q1,
    hints=[
        "With the anchor, each step adds four messages: the step's call and its result, then the "
        "write_todos call and its answer. The latest list must be among the kept messages.",
        "deepagents never separates a tool call from its result: a cut that lands on a tool "
        "message moves back to the call, keeping one message more than you asked for.",
    ],
    solution_text="answer = 3  # keep=3 cuts on a tool message, moves back one, and keeps the "
                  "latest write_todos pair; keep=2 can keep only the step and its result",
)
