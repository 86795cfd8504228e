"""The checkers of notebook 03's exercises accept right answers and reject wrong ones."""

from collections import Counter

import pytest
from langchain.agents.middleware import AgentMiddleware

from labkit.exercises import nb03

# -- q1: whose wrap_model_call sees the request last? -----------------------------------------


@pytest.mark.parametrize("right", ["C", "c", " C ", "'C'"])
def test_q1_right_answer_passes(right):
    assert nb03.q1.check(right) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    ("A", "outermost"), ("B", "middle"), ("D", "A, B and C only"), (["C"], "string"),
])
def test_q1_wrong_answers_fail_with_a_reason(wrong, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb03.q1.require(wrong)


# -- q2: a middleware that counts tool calls per tool name in after_model ---------------------


class ToolCounter(AgentMiddleware):  # the solution
    def __init__(self):
        super().__init__()
        self.counts = Counter()

    def after_model(self, state, runtime):
        self.counts.update(tc["name"] for tc in state["messages"][-1].tool_calls)


class DictCounter(AgentMiddleware):  # also right: a plain dict, counted by hand
    def __init__(self):
        super().__init__()
        self.counts = {}

    def after_model(self, state, runtime):
        for tc in state["messages"][-1].tool_calls:
            self.counts[tc["name"]] = self.counts.get(tc["name"], 0) + 1


class CountsModelCalls(ToolCounter):  # wrong: one per model call, named after the first tool
    def after_model(self, state, runtime):
        calls = state["messages"][-1].tool_calls
        self.counts[calls[0]["name"] if calls else "none"] += 1


class CountsTheWholeHistory(ToolCounter):  # wrong: re-counts every earlier AI message each time
    def after_model(self, state, runtime):
        for m in state["messages"]:
            self.counts.update(tc["name"] for tc in getattr(m, "tool_calls", []))


class BeforeModel(ToolCounter):  # wrong: counts in before_model, where the new call is not there
    after_model = AgentMiddleware.after_model

    def before_model(self, state, runtime):
        self.counts.update(tc["name"] for tc in getattr(state["messages"][-1], "tool_calls", []))


class NoCounts(AgentMiddleware):
    def after_model(self, state, runtime):
        return None


class NeedsArgs(ToolCounter):
    def __init__(self, label):
        super().__init__()


def test_q2_expected_counts_are_the_scenario_first_turn():
    assert nb03._expected() == {"fetch_market_data": 5, "search_news": 5}


@pytest.mark.parametrize("right", [ToolCounter, DictCounter])
def test_q2_right_answers_pass(right):
    assert nb03.q2.check(right) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    (ToolCounter(), "the class itself"),
    (Counter, "the class itself"),
    (BeforeModel, "no after_model hook"),
    (NeedsArgs, "no arguments"),
    (NoCounts, ".counts attribute"),
    (CountsModelCalls, "but the model called"),
    (CountsTheWholeHistory, "but the model called"),
])
def test_q2_wrong_answers_fail_with_a_reason(wrong, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb03.q2.require(wrong)
