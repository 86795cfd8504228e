"""Exercises for notebook 15 · Measuring it: targeted evals.

q1 is a design task: write an eval, ``answer(run) -> bool``, that says whether a run drifted from
its goal. The checker runs it on five runs of the running example (``RUNS``) — two that drifted
(one asks the user what to do, one claims "Done" without the report), one anchored run that
held, one that died of a context overflow (a different failure) and one that kept its goal but
lost the needle — and says which one the learner's eval judged wrongly, and why.
"""

from __future__ import annotations

from functools import cache

from labkit import LabModel, evals, scenario
from labkit.exercises.core import Exercise

__all__ = ["RUNS", "q1"]

# name -> (drifted?, why, when the learner's eval gets it wrong)
RUNS = {
    "asks when lost": (True, "it lost its goal and asked the user what to do — three times — and the "
                       "report was never written"),
    "claims done": (True, "it said 'Done: …' and never wrote the report: no goal loss counted, no "
                    "question asked. Read the goal from the files the user asked for, not from the "
                    "agent's words (evals.claimed_done, run.score.no_report)"),
    "todo anchor": (False, "it compacted as often, but its todo list kept the goal: the report and "
                    "the risks note are written"),
    "overflow": (False, "it died of a context overflow (run.error): it never lost its goal, it ran "
                 "out of window — a different failure with a different cure (notebook 11)"),
    "needle lost": (False, "it kept its goal — both files written — and only lost the needle, with no "
                    "archive: a failure of memory for facts, not of the goal"),
}


@cache
def _run(name: str):
    """The run the checker shows the learner's eval (each made once per session)."""
    if name == "asks when lost":
        return evals.forced_compaction("none")
    if name == "claims done":
        return evals.forced_compaction("none", model=LabModel(window=1_000_000, when_lost="finish"))
    if name == "todo anchor":
        return evals.forced_compaction("todo", model=LabModel(window=1_000_000, when_lost="finish"))
    if name == "overflow":
        return scenario.run(LabModel())  # no context management at 128k: the run dies
    setting = evals.Setting("no archive", offload=False, archive=False, trigger=("fraction", 0.10),
                            keep=("fraction", 0.05))
    return evals.trial(setting)[0]


def _check_q1(answer) -> str | None:
    if not callable(answer):
        return ("answer with a function that takes a finished run and returns True when it drifted, "
                f"such as `def answer(run): return ...`, not {answer!r}")
    for name, (drifted, why) in RUNS.items():
        try:
            said = answer(_run(name))
        except Exception as e:  # the learner's code: say what went wrong, do not crash
            return f"answer(run) raised {type(e).__name__}: {e} on the '{name}' run"
        if not isinstance(said, bool):
            return f"answer(run) should return True or False; on the '{name}' run it returned {said!r}"
        if said != drifted:
            verdict = "misses" if drifted else "flags"
            return f"your eval {verdict} the '{name}' run: {why}"
    return None


def _names() -> dict:
    """The names notebook 15 has imported by its exercise."""
    return {"evals": evals, "scenario": scenario}


q1 = Exercise(
    prompt="Write an eval for goal drift: a function answer(run) that returns True when the run "
           "drifted from its goal and False otherwise. The checker runs it on five runs: the agent "
           "that asks what to do when lost, the one that claims 'Done' without the report, a "
           "todo-anchored run that held, a run that died of a context overflow, and one that kept "
           "its goal but lost the needle. Only the first two drifted.",
    checker=_check_q1,
    hints=[
        "What the agent says is not evidence: one drifted run asks a question, the other says it "
        "is done. What the user asked for is a file — is it there? run.score has a field for that.",
        "A run that died (run.error is not None) did not drift; a run whose files are written did "
        "not drift either, whatever happened to the needle. run.score.no_report is True only for a "
        "run that ended without an error and without the report.",
    ],
    solution_text=(
        "def answer(run):\n"
        "    # drift: the run ended normally, yet the file the user asked for is not there\n"
        "    return run.error is None and not run.score.goal_completed"
    ),
    given=_names,
)
