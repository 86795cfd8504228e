"""The checker of notebook 07's exercise accepts knobs that keep the trigger under deepagents' input
budget and rejects the others with the reason, in the learner's words."""

from __future__ import annotations

import pytest
from deepagents.backends import StateBackend
from deepagents.middleware.summarization import create_summarization_middleware
from langchain.agents.middleware import ModelRequest

from labkit import LabModel
from labkit.exercises import nb07


def test_the_budget_is_deepagents_own():
    """deepagents' input budget for the 128,000-token lab model: int(128,000 * 0.95) = 121,600,
    less the model's 4,096 output tokens = 117,504 — the checker's bar, read from the installed
    middleware as the oracle."""
    model = LabModel(window=nb07.WINDOW)
    deep = create_summarization_middleware(model, StateBackend())
    assert deep._input_budget(ModelRequest(model=model, messages=[])) == nb07.BUDGET == 117_504
    assert LabModel(window=nb07.WINDOW, profile=None).max_output_tokens == 4_096


def test_q1_accepts_the_solution():
    """The solution's trigger, 100,000 tokens, is under the 117,504-token budget: every request the
    middleware sends uncompacted is under 100,000, so none can be refused (measured: two
    compactions, both by the trigger, no refused call)."""
    answer = nb07.q1.solve()
    assert nb07.q1.require(answer) == "Correct!"
    said = nb07.outcome(tuple(sorted(answer.items())))
    assert said["refused"] == []
    assert set(said["reasons"]) == {"trigger"}


@pytest.mark.parametrize("right", [
    {"trigger": ("tokens", 100_000)},
    {"trigger": ("tokens", 110_000)},
    {"trigger": ("tokens", 117_503)},
    {"trigger": ("tokens", 60_000), "keep": ("tokens", 10_000)},
    {"window": 128_000, "trigger": ("fraction", 0.85), "keep": ("fraction", 0.10)},
])
def test_q1_accepts_any_trigger_below_the_input_budget(right):
    assert nb07.q1.require(right) == "Correct!"


BUDGET_RULE = (r"Set the trigger below 117,504 tokens, deepagents' input budget: "
               r"int\(128,000 \* 0\.95\) = 121,600, the window less a 5% margin, minus the 4,096 tokens")


@pytest.mark.parametrize("wrong, says", [
    # at the window, or between the budget and the window: it fits the window, not the budget
    ({"trigger": ("tokens", 128_000)},
     r"your trigger fires at 128,000 tokens: under the 128,000-token window, but at or above the "
     r"input budget.*no room for the answer.*" + BUDGET_RULE),
    ({"trigger": ("tokens", 117_504)}, r"fires at 117,504 tokens.*at or above the input budget"),
    ({"window": 128_000, "trigger": ("fraction", 0.95)}, r"fires at 121,600 tokens.*input budget"),
    ({"window": 200_000, "trigger": ("fraction", 0.6)},
     r"fires at 120,000 tokens \(you told the middleware window=200,000.*input budget"),
    # the old accepted answer: the run survives, but only by the luck of this trajectory
    ({"trigger": ("tokens", 153_383)}, r"your trigger fires at 153,383 tokens, above the model's "
                                      r"128,000-token window: this run slipped through only because"),
    ({}, r"the fallback trigger fires at 170,000 tokens.*call 9 asked for 153,383 tokens.*overflow "
         r"fallback.*" + BUDGET_RULE),
    ({"trigger": ("tokens", 170_000)},
     r"call 9 asked for 153,383 tokens — over the window, under the trigger"),
    ({"window": 200_000, "trigger": ("fraction", 0.85)}, r"you told the middleware window=200,000"),
    ({"trigger": ("messages", 12)}, r"counts messages, not tokens"),
    ({"trigger": ("fraction", 0.85)}, r"labkit refuses to build.*no profile"),
    ({"trigger": ("tokens", 100_000), "keep": ("tokens", 100_000)}, r"labkit refuses to build.*keep"),
    ({"trigger": ("tokens", 100_000), "model": "x"}, r"'model' is not one"),
    (("tokens", 100_000), r"dict of knobs, such as \{'trigger': \('tokens', 100000\)\}"),
    (100_000, r"answer with a dict of knobs"),
])
def test_q1_rejects_wrong_answers_with_a_reason(wrong, says):
    with pytest.raises(AssertionError, match=f"Not yet: .*{says}"):
        nb07.q1.require(wrong)
