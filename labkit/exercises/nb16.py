"""Exercises for notebook 16 · The diagnostic clinic.

q1 hands the learner a patient: the running example under ``create_deep_agent`` on a
60,000-token model, where one call is refused and the overflow fallback rescues the run. The
answer is a function ``model -> [middleware]``; the checker runs the same scenario with that
middleware and passes it only if :func:`labkit.diagnose.diagnose` finds nothing and the report,
the risks note and the needle all come out right — behaviour, not a typed-in setting.
"""

from __future__ import annotations

from langchain.agents.middleware import AgentMiddleware

from labkit import scenario
from labkit.diagnose import diagnose
from labkit.exercises.core import Exercise
from labkit.model import LabModel

__all__ = ["WINDOW", "patient", "q1", "treated"]

WINDOW = 60_000


def patient():
    """The sick run: ``(model, run)`` of the scenario under create_deep_agent's defaults. Notebook 16."""

    model = LabModel(window=WINDOW)
    return model, scenario.run(model, harness="deep")


def treated(answer):
    """``(model, run)`` of the same scenario with ``answer(model)`` as the middleware. Notebook 16."""

    model = LabModel(window=WINDOW)
    middleware = answer(model)
    if isinstance(middleware, AgentMiddleware) or not isinstance(middleware, (list, tuple)) or not all(
            isinstance(m, AgentMiddleware) for m in middleware):
        raise TypeError(f"answer(model) must return a list of middleware, got {middleware!r}")
    return model, scenario.run(model, middleware=list(middleware), harness="deep")


def _check_q1(answer) -> str | None:
    if not callable(answer):
        return ("answer with a function that takes the model and returns a list of middleware, "
                f"like `def answer(model): return [...]` — not {answer!r}")
    try:
        model, run = treated(answer)
    except TypeError as e:
        return str(e)
    except Exception as e:  # the learner's middleware broke the agent: say so, do not crash
        return f"the run could not go on with that middleware: {type(e).__name__}: {e}"
    findings = diagnose(run, model)
    if findings:
        return (f"the run is still sick: diagnose() finds {', '.join(f.key for f in findings)} — "
                f"{findings[0].evidence()}")
    score = run.score
    if not (score.goal_completed and score.needle_correct):
        return f"no finding, but the job is not done: {score}"
    return None


q1 = Exercise(
    prompt="`nb16.patient()` runs the scenario under create_deep_agent on a 60,000-token model: "
           "one call is refused and the overflow fallback rescues the run. Write "
           "`def answer(model): return [...]` — the middleware that cures it, so that diagnose() "
           "finds nothing and the report, the risks note and the needle still come out right.",
    checker=_check_q1,
    hints=[
        "The finding names the refused call, and its row names the knobs. Look at what that call "
        "carried: the tool results in patient.messages before it, and count_tokens of each.",
        "deepagents evicts a tool result only above 4 × tool_token_limit_before_evict characters "
        "(notebook 02). Compare len(scenario.export_text(t)) for each export with that; a "
        "FilesystemMiddleware you pass in middleware= replaces deepagents' own, by name.",
    ],
    solution_text="from deepagents.middleware.filesystem import FilesystemMiddleware\n\n"
                  "def answer(model):\n"
                  "    return [FilesystemMiddleware(tool_token_limit_before_evict=10_000)]  "
                  "# evicts every export over 40,000 characters, Driftwood's among them",
)
