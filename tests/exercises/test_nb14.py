"""The checker of notebook 14's exercise runs the anchor it is given, and says why one fails.

Right answers are anchors of different kinds — the todo list, the progress file by labkit's prompt
or one's own words, a middleware of one's own plus the file; wrong ones fail each for its own
reason: no anchor, a prompt that only asks to remember, a goal pinned without the steps done,
both anchors at once (over the token budget), a replaced summarizer, the wrong kind of answer.
"""

import pytest
from deepagents.backends import StateBackend
from deepagents.middleware.summarization import SummarizationMiddleware
from langchain.agents.middleware import AgentMiddleware, TodoListMiddleware
from langchain_core.messages import SystemMessage

from labkit import LabModel
from labkit.exercises import nb14
from labkit.model import PROGRESS_PROMPT


class PinGoal(AgentMiddleware):
    """Adds the user's latest request to every system prompt: the goal, but no steps done."""

    def __init__(self):
        super().__init__()
        self.goal = None

    def before_agent(self, state, runtime):
        self.goal = [m for m in state["messages"] if m.type == "human"][-1].text

    def wrap_model_call(self, request, handler):
        system = request.system_message.text if request.system_message else ""
        pinned = SystemMessage(f"{system}\n\nThe request: {self.goal}")
        return handler(request.override(system_message=pinned))


RIGHT = {
    "todo list": lambda: {"middleware": [TodoListMiddleware()]},
    "labkit's progress prompt": lambda: {"system_prompt": PROGRESS_PROMPT},
    "own words naming the file": lambda: {"system_prompt": "Write your goal and each step done to "
                                                            "/progress.md, and read it when lost."},
    "pinned goal plus the file": lambda: {"middleware": [PinGoal()], "system_prompt": PROGRESS_PROMPT},
}


@pytest.mark.parametrize("make", RIGHT.values(), ids=RIGHT.keys())
def test_right_answers_pass(make):
    assert nb14.q1.check(make()) == "Correct!"


WRONG = {
    "no anchor": (lambda: {}, "said the report was done without writing /reports/weekly.md"),
    "a prompt that only asks": (lambda: {"system_prompt": "Never lose track of the user's goal."},
                                "said the report was done"),
    "a pinned goal": (lambda: {"middleware": [PinGoal()]}, "the goal was kept, but not what was done"),
    "both anchors": (lambda: {"middleware": [TodoListMiddleware()], "system_prompt": PROGRESS_PROMPT},
                     "only updated the anchor .* over the budget of 50%"),
    "a replaced summarizer": (lambda: {"middleware": [SummarizationMiddleware(
        LabModel(), backend=StateBackend(), trigger=("messages", 6), keep=("messages", 3),
        trim_tokens_to_summarize=None)]}, "do not replace the summarizer"),
    "a bare prompt": (lambda: PROGRESS_PROMPT, "answer with a dict"),
    "an unknown key": (lambda: {"prompt": PROGRESS_PROMPT}, "prompt is not one of them"),
    "a middleware that is not a list": (lambda: {"middleware": TodoListMiddleware()}, "is a list"),
}


@pytest.mark.parametrize("make, reason", WRONG.values(), ids=WRONG.keys())
def test_wrong_answers_fail_with_a_reason(make, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb14.q1.require(make())


def test_the_budget_is_what_separates_one_anchor_from_two():
    one = nb14.anchor_share(nb14.run({"system_prompt": PROGRESS_PROMPT})[1])[0]
    both = {"middleware": [TodoListMiddleware()], "system_prompt": PROGRESS_PROMPT}
    two = nb14.anchor_share(nb14.run(both)[1])[0]
    assert one <= nb14.BUDGET < two
