"""Exercises for notebook 12 · Isolation with subagents.

q1 is a design task: write a researcher subagent spec that keeps the parent small. The learner
starts from ``draft()`` — a vague description and a prompt with no limit on the reply — and the
checker runs the fan-out with the answer on a 128k window: it passes when the parent delegated,
its largest request stayed under ``PARENT_LIMIT`` tokens, and it still answered the needle. Any
spec that does so is right; the checker says which of the three failed.
"""

from __future__ import annotations

import sys

from labkit import LabModel, scenario
from labkit.exercises.core import Exercise
from labkit.isolate import IsolateMiddleware, SubagentSpec

__all__ = ["PARENT_LIMIT", "WINDOW", "draft", "q1"]

WINDOW = 128_000
PARENT_LIMIT = 10_000


def draft() -> dict:
    """The spec to improve: the researcher's tools, a vague description, no limit on the reply."""
    return {**scenario.researcher(limit=False), "description": "Helps the main agent with tasks."}


def _check_q1(answer) -> str | None:
    if isinstance(answer, SubagentSpec):
        answer = {"name": answer.name, "description": answer.description,
                  "system_prompt": answer.system_prompt, "tools": list(answer.tools)}
    if not isinstance(answer, dict):
        return f"answer with a spec dict like nb12.draft(), not {type(answer).__name__}"
    try:
        SubagentSpec(**answer)
    except Exception as e:  # the learner's spec does not build: say why
        return f"that spec does not build: {type(e).__name__}: {e}"
    model = LabModel(window=WINDOW, delegate_research=True)
    iso = IsolateMiddleware(model, [SubagentSpec(**answer)])
    run = scenario.run(model, middleware=[iso], turns=scenario.FANOUT_TURNS)
    if not run.tool_calls("task"):
        return ("the parent made no task() call: nothing in the description tells it this subagent "
                "does the job at hand, so it did the research itself"
                + (f" — and overflowed at {max(r.seen for r in run.records):,} tokens" if run.error else ""))
    biggest = max((c.reply_tokens for c in iso.children), default=0)
    if run.error or run.peak > PARENT_LIMIT:
        return (f"the parent delegated, but its largest request was {run.peak:,} tokens (the limit is "
                f"{PARENT_LIMIT:,}): the largest reply from a child was {biggest:,} tokens. What does "
                "the system prompt ask the child to return?")
    if not run.score.needle_correct:
        return ("the parent stayed small but could not answer the needle question: no reply or file "
                "kept Brightloom's exact net_revenue_retention_q3")
    return None


q1 = Exercise(
    prompt="Write a researcher subagent spec (a dict with name, description, system_prompt, tools) "
           "that keeps the parent small: with it, the fan-out on a 128k window delegates, the "
           f"parent's largest request stays under {PARENT_LIMIT:,} tokens, and the needle is "
           "answered. Start from nb12.draft().",
    checker=_check_q1,
    hints=[
        "Two things in the draft are wrong, one per section of the notebook: what the parent reads "
        "to choose a subagent, and what the child reads to know what to return.",
        "The description must name the job: the lab parent delegates to a subagent whose "
        "description says who the work is about (a competitor, rival, company, firm, business or "
        "ticker) or what it is (market data, news, research). The system prompt must ask to "
        "'reply with a short report' with each KPI's exact figure "
        "(compare scenario.RESEARCHER_PROMPT with scenario.UNLIMITED_RESEARCHER_PROMPT).",
    ],
    solution_text=(
        "answer = {**nb12.draft(),\n"
        "          \"description\": \"Researches one competitor: its market-data export and news, \"\n"
        "                         \"as a short report with every KPI's exact figure.\",\n"
        "          \"system_prompt\": nb12.draft()[\"system_prompt\"] + \" Then reply with a short \"\n"
        "                           \"report: each KPI with its exact figure, and the week's headline.\"}"
    ),
    given=lambda: {"nb12": sys.modules[__name__]},
)
