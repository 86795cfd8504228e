"""Exercises for notebook 14 · Goal anchors.

q1 asks for an anchor — ``scenario.run``'s keyword arguments (``middleware``, ``system_prompt``) —
for a variant of the notebook's drift machine: deepagents' ``SummarizationMiddleware`` (its
constructor's 4,000-token trim) every ``TRIGGER`` messages keeping ``KEEP``, on the lab model that
says "Done" when it lost its goal (``when_lost="finish"``), with evals' reminding user. The checker
runs it: it passes when nothing is claimed done, the goal is never lost, no step is repeated, the
goal is completed, and the calls made only to update the anchor take at most ``BUDGET`` of the
input tokens. A todo list, a progress file, one's own prompt naming the file, or one's own
middleware plus the file pass; no anchor, a prompt that only asks to remember, a goal pinned
without the steps done, and both anchors at once (over the budget) do not.
"""

from __future__ import annotations

from typing import Any

from deepagents.backends import StateBackend
from deepagents.middleware.summarization import SummarizationMiddleware

from labkit import evals, scenario
from labkit.exercises.core import Exercise
from labkit.model import PROGRESS_PROMPT, LabModel

__all__ = ["q1"]

TRIGGER, KEEP, BUDGET = 6, 3, 0.5
KEYS = ("middleware", "system_prompt")


def run(answer: dict):
    """The variant, run with ``answer``'s middleware and system prompt: ``(run, model)``."""
    model = LabModel(window=1_000_000, when_lost="finish")
    middleware = [*answer.get("middleware", []), SummarizationMiddleware(
        model, backend=StateBackend(), trigger=("messages", TRIGGER), keep=("messages", KEEP))]
    kwargs = {"system_prompt": answer["system_prompt"]} if answer.get("system_prompt") else {}
    result = scenario.run(model, middleware=middleware, harness="deep",
                          turns=evals.reminded(scenario.TURNS, model, 2), **kwargs)
    return result, model


def anchor_share(model) -> tuple[float, int, int]:
    """(share of input tokens, calls, agent calls): the agent calls whose every tool call keeps
    an anchor (``evals.anchor_calls``) — each a model call made only to update it."""
    agent = [c for c in model.calls if c.kind == "agent" and c.response is not None]
    own = [c for c in agent if c.response.tool_calls
           and len(evals.anchor_calls([c.response])) == len(c.response.tool_calls)]
    total = sum(c.input_tokens for c in model.calls)
    return sum(c.input_tokens for c in own) / max(total, 1), len(own), len(agent)


def _form(answer: Any) -> str | None:
    """Why ``answer`` is not a dict of the two keyword arguments, or None."""
    if not isinstance(answer, dict):
        return ("answer with a dict of scenario.run's keyword arguments, such as "
                f"{{'middleware': [...], 'system_prompt': '...'}}, not {repr(answer)[:60]}")
    if unknown := sorted(map(str, set(answer) - set(KEYS))):
        return f"the dict takes only {' and '.join(KEYS)}; {', '.join(unknown)} is not one of them"
    middleware, prompt = answer.get("middleware", []), answer.get("system_prompt")
    if not isinstance(middleware, (list, tuple)):
        return f"middleware is a list of middleware, not {middleware!r}"
    if prompt is not None and not isinstance(prompt, str):
        return f"system_prompt is a string, not {prompt!r}"
    if any(isinstance(m, SummarizationMiddleware) or getattr(m, "name", "") == "SummarizationMiddleware"
           for m in middleware):
        return ("the compaction is the given (the checker adds it): anchor the goal, "
                "do not replace the summarizer")
    return None


def _check_q1(answer: Any) -> str | None:
    if problem := _form(answer):
        return problem
    try:
        result, model = run(answer)
    except Exception as e:  # noqa: BLE001 — a learner's middleware may fail; say how, do not raise
        return f"the run failed with your configuration: {type(e).__name__}: {str(e)[:120]}"
    score, where = result.score, f"compacting every {TRIGGER} messages and keeping {KEEP}"
    outputs = {t.key: t.output for t in scenario.tasks()}
    if claimed := evals.claimed_done(result):
        return (f"{where}, the agent said the {claimed[0]} was done without writing "
                f"{outputs[claimed[0]]}: nothing carried the goal past the compaction")
    if score.goal_lost:
        return f"{where}, the agent lost its goal {score.goal_lost} time(s) and asked what to do"
    if score.steps_repeated:
        ended = f"; the run ended with {score.error.split(':')[0]}" if score.error else ""
        return (f"the goal was kept, but not what was done: the agent redid {score.steps_repeated} "
                f"steps (such as {score.repeated[0]}){ended}")
    if not score.goal_completed:
        return f"the run did not write {', '.join(score.missing) or 'its files'}"
    share, own, calls = anchor_share(model)
    if share > BUDGET:
        return (f"the goal was kept, but {own} of {calls} model calls only updated the anchor and "
                f"took {share:.0%} of the input tokens, over the budget of {BUDGET:.0%}")
    return None


q1 = Exercise(
    prompt=f"Compaction every {TRIGGER} messages keeping {KEEP}, on LabModel(when_lost='finish'): "
           "give scenario.run's middleware and/or system_prompt, as a dict, so that both files are "
           "written, nothing is claimed done and no step repeated, while the calls made only to "
           f"update the anchor take at most {BUDGET:.0%} of the input tokens.",
    checker=_check_q1,
    hints=[
        "The goal alone is not enough: after a compaction the agent must also see which steps are "
        "done, or it starts again from Brightloom. Sections 5 and 6 each show an anchor that carries "
        "both.",
        "Each anchor update is a model call that re-sends the whole context, so two anchors pay "
        "twice. One is enough: TodoListMiddleware(), or a system prompt naming /progress.md.",
    ],
    solution_text="answer = {'system_prompt': PROGRESS_PROMPT}  # or {'middleware': "
                  "[TodoListMiddleware()]}: one anchor that carries the goal and the steps done",
    given=lambda: {"PROGRESS_PROMPT": PROGRESS_PROMPT},
)
