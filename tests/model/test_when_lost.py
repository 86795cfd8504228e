"""The lab model's two faces of goal drift (notebook 14): asked, or claimed done.

``LabModel(when_lost="finish")`` changes only what it says when it can no longer see its goal:
it declares the work in view finished (``prompts.CLAIMED_DONE``) instead of asking
(``prompts.GOAL_LOST``). A goal anchor puts the goal back in view, so neither happens.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from labkit import LabModel, evals, prompts
from labkit.model._context import read_view
from labkit.model.behaviour import act
from tests.conftest import ai_call

EXPORT = "# Market data export — Brightloom (BRLM)\nkpi,BRLM,x,1"


def _lost_view():
    """A context with work in view and no request: a fetch and its result, nothing else."""
    return read_view([HumanMessage("Previous conversation was too long to summarize."),
                      ai_call("fetch_market_data", {"ticker": "BRLM"}, "c1"),
                      ToolMessage(EXPORT, tool_call_id="c1")])


def test_by_default_it_asks_when_the_goal_is_lost():
    assert act(_lost_view(), []).text == prompts.GOAL_LOST


def test_when_lost_finish_it_declares_the_visible_work_done():
    reply = act(_lost_view(), [], when_lost="finish").text
    assert reply == prompts.CLAIMED_DONE.format(work="I pulled the market data for Brightloom")
    assert not reply.rstrip().endswith("?"), "no question: the user is not asked anything"


def test_a_bad_when_lost_is_refused():
    with pytest.raises(ValueError):
        LabModel(when_lost="guess")


@pytest.fixture(scope="module")
def finishing():
    return {a: evals.forced_compaction(a, model=LabModel(window=1_000_000, when_lost="finish"))
            for a in evals.ANCHORS}


def test_forced_compaction_on_a_finishing_model_claims_the_report_done(finishing):
    run = finishing["none"]
    assert evals.claimed_done(run) == ["report"]
    assert run.score.goal_lost == 0 and run.score.asked_user == 0
    assert not run.score.goal_completed and run.score.no_report


@pytest.mark.parametrize("anchor", ["todo", "progress"])
def test_an_anchor_keeps_a_finishing_model_from_claiming_done(finishing, anchor):
    run = finishing[anchor]
    assert evals.claimed_done(run) == [] and run.score.goal_completed


def test_the_claimed_done_reply_is_never_a_goal_lost_reply(finishing):
    answers = [m.text for m in finishing["none"].messages if isinstance(m, AIMessage) and not m.tool_calls]
    assert prompts.GOAL_LOST not in answers
    assert any(a.startswith("Done: I pulled") for a in answers)
