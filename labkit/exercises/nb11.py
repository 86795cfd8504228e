"""Exercises for notebook 11 · When the wall is hit.

q1 is a configuration with an eval: the middleware stack for a variant that has every wall of
the lesson at once — a model with no profile on a 30,000-token window, the meeting transcript
pasted into the first request, and Driftwood's export bigger than the window. The checker runs
the scenario with the learner's stack and tells a run that *compacted in time* (no request
refused) from one the overflow fallback *rescued*, or one that died; any stack that gets
through in time passes.
"""

from __future__ import annotations

import warnings
from typing import Any

from langchain.agents.middleware import AgentMiddleware

from labkit import LabModel, scenario
from labkit.exercises.core import Exercise
from labkit.offload import OffloadMiddleware
from labkit.summarize import SummarizeMiddleware, events_of
from labkit.tokens import count_tokens

__all__ = ["WINDOW", "q1", "turns"]

WINDOW = 30_000


def turns() -> tuple[str, ...]:
    """The variant's three user turns: the transcript pasted into the first request."""
    return (scenario.with_transcript(), *scenario.TURNS[1:])


def _stack(answer: Any, model: LabModel) -> list | str:
    """The learner's middleware for ``model``, or why the answer is not a stack."""
    if not callable(answer):
        return (f"answer with a function that takes the model and returns the list of middleware, "
                f"such as lambda model: [...] (SummarizeMiddleware needs the model the checker runs), "
                f"not {answer!r}")
    try:
        stack = answer(model)
    except Exception as error:  # the learner's own code: say what it raised
        return f"building your stack raised {type(error).__name__}: {error}"
    if not isinstance(stack, (list, tuple)) or not all(isinstance(m, AgentMiddleware) for m in stack):
        return f"your function should return a list of middleware, not {stack!r}"
    return list(stack)


def _order(stack: list) -> str:
    kinds = [type(m).__name__ for m in stack if isinstance(m, (OffloadMiddleware, SummarizeMiddleware))]
    return " → ".join(kinds) or "neither"


def _check_q1(answer: Any) -> str | None:
    model = LabModel(window=WINDOW, profile=None)
    stack = _stack(answer, model)
    if isinstance(stack, str):
        return stack
    summarizers = [m for m in stack if isinstance(m, SummarizeMiddleware)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            run = scenario.run(model, middleware=stack, turns=turns())
        except Exception as error:  # e.g. the same middleware instance twice
            return f"the run could not start: {type(error).__name__}: {error}"
    summaries = [c for c in model.calls if c.kind == "summary"]
    if refused := [c for c in summaries if c.error]:
        return (f"a summary prompt of {refused[0].input_tokens:,} tokens was refused by the {WINDOW:,}-token "
                f"window. Your order is {_order(stack)}: the first middleware is the outermost, so a "
                f"summarizer before OffloadMiddleware counts and summarizes the pasted transcript whole")
    agent_refused = [c for c in model.calls if c.kind == "agent" and c.error]
    if run.error is not None:
        if "nothing is left to compact" in str(run.error):
            drft = count_tokens(scenario.export_text("DRFT"))
            return (f"the run died: {run.error}. A single result bigger than the window — Driftwood's "
                    f"export, {drft:,} tokens — fits in no summary: offload it, with OffloadMiddleware first")
        if agent_refused and not summarizers:
            return (f"the run died on a request of {agent_refused[0].input_tokens:,} tokens, and nothing "
                    f"compacts: the results you kept in the context add up past the {WINDOW:,}-token window")
        return f"the run died: {type(run.error).__name__}: {run.error}"
    if agent_refused:
        reasons = [e.reason for e in events_of(run.state)]
        trigger = ", ".join(repr(s.trigger) for s in summarizers) or "none"
        return (f"the run finished, but it was rescued, not compacted in time: a request of "
                f"{agent_refused[0].input_tokens:,} tokens was refused, then the overflow fallback compacted "
                f"(events: {reasons}) and retried. Your trigger is {trigger}; with no profile the default is "
                f"170,000 tokens, above the {WINDOW:,}-token window — so it never fires first")
    score = run.score
    if not (score.goal_completed and score.needle_correct) or score.steps_repeated:
        return f"the run finished in time but did not do the work: {score}"
    return None


def _names() -> dict:
    """The names notebook 11 has imported by its exercise."""

    return {"OffloadMiddleware": OffloadMiddleware, "SummarizeMiddleware": SummarizeMiddleware,
            "LabModel": LabModel, "scenario": scenario}


q1 = Exercise(
    prompt=f"Write the middleware stack (a function of the model) that takes a no-profile model with "
           f"a {WINDOW:,}-token window through the scenario with the transcript pasted and Driftwood's "
           f"export bigger than the window — finished, needle answered, and no request refused.",
    checker=_check_q1,
    hints=[
        "Three walls, one per lesson: Driftwood's export is bigger than the window (section 3: only "
        "offloading moves it); the transcript, counted whole by a summarizer placed before "
        "OffloadMiddleware (the order, section 3); and a no-profile trigger of 170,000 tokens, above "
        "the window (section 1: the fallback rescues a run, it does not plan one).",
        "Offload first, then summarize with a trigger you give in tokens, below the window: "
        "lambda model: [OffloadMiddleware(), SummarizeMiddleware(model, trigger=('tokens', ...))]. "
        "Run it yourself and look for refused calls: [c.kind for c in model.calls if c.error].",
    ],
    solution_text=(
        "answer = lambda model: [OffloadMiddleware(),  # offload first: no result over the window\n"
        "                        SummarizeMiddleware(model, trigger=('tokens', 24_000))]  # below the wall"
    ),
    given=_names,
)
