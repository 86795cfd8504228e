"""Exercises for notebook 03 · Middleware: hooks in the agent loop."""

from __future__ import annotations

import inspect
from collections import Counter
from functools import cache

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, HumanMessage

from labkit import LabModel, scenario
from labkit.exercises.core import Exercise

__all__ = ["q1", "q2"]


def _check_q1(answer) -> str | None:
    if not isinstance(answer, str):
        return f"answer with the name of one middleware as a string: 'A', 'B' or 'C' (not {answer!r})"
    name = answer.strip().strip("'\"").upper()
    if name == "A":
        return ("A is first in the list, so it is the outermost layer: its wrap_model_call gets the "
                "request first, before B and C have touched it")
    if name == "B":
        return "B is in the middle: it hands the request on to someone else before the model"
    if name != "C":
        return f"the list holds A, B and C only, not {answer!r}"
    return None


q1 = Exercise(
    prompt="An agent is built with middleware=[A, B, C], each with a wrap_model_call. Whose "
           "wrap_model_call sees the request last, just before it goes to the model? "
           "Answer 'A', 'B' or 'C'.",
    checker=_check_q1,
    hints=[
        "Look at the table of section 2: whose 'wrap_model_call ▶' row came first, A's or B's?",
        "The first middleware in the list is the outermost layer; each calls handler(request) "
        "to pass the request one layer inward.",
    ],
    solution_text="answer = 'C'  # the last in the list is the innermost layer, next to the model",
)


@cache
def _expected() -> dict[str, int]:
    """Tool calls per tool name in the first turn of the scenario (create_agent, data tools)."""

    agent, _ = _agent([])
    out = agent.invoke({"messages": [_request()]})
    return dict(Counter(tc["name"] for m in out["messages"] if isinstance(m, AIMessage)
                        for tc in m.tool_calls))


def _request():
    return HumanMessage(scenario.REQUEST)


def _agent(middleware: list):
    model = LabModel(window=1_000_000)
    return create_agent(model, tools=scenario.tools(), middleware=middleware), model


def _names() -> dict:
    """The names notebook 03 has imported by its second exercise."""

    return {"AgentMiddleware": AgentMiddleware, "Counter": Counter}


def _check_q2(answer) -> str | None:
    if not (inspect.isclass(answer) and issubclass(answer, AgentMiddleware)):
        return f"give the class itself (a subclass of AgentMiddleware), not {answer!r}"
    if answer.after_model is AgentMiddleware.after_model:
        return "your class has no after_model hook: count the tool calls there"
    try:
        counter = answer()
    except TypeError as e:
        return f"ToolCounter() should need no arguments, but: {e}"
    agent, _ = _agent([counter])
    agent.invoke({"messages": [_request()]})
    counts = getattr(counter, "counts", None)
    if counts is None:
        return "after the run, the instance should have a .counts attribute (a dict or Counter)"
    got, want = dict(Counter(counts)), _expected()
    if got != want:
        return (f"after the first turn .counts is {got}, but the model called {want}; in "
                "after_model, state['messages'][-1] is the AI message just added")
    return None


q2 = Exercise(
    prompt="Write a middleware class ToolCounter whose after_model hook counts the tool calls "
           "the model just made, per tool name, in self.counts (a dict or a Counter).",
    checker=_check_q2,
    hints=[
        "after_model(self, state, runtime) runs once per model call, after the AI message has "
        "been added to state['messages'].",
        "state['messages'][-1].tool_calls is a list of dicts with a 'name' key.",
        "Create self.counts = Counter() in __init__ (after super().__init__()), then "
        "self.counts.update(tc['name'] for tc in ...) in after_model; return None.",
    ],
    solution_text=(
        "class ToolCounter(AgentMiddleware):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.counts = Counter()\n\n"
        "    def after_model(self, state, runtime):\n"
        "        self.counts.update(tc['name'] for tc in state['messages'][-1].tool_calls)"
    ),
    given=_names,
    answer_name="ToolCounter",  # the notebook checks the class: nb03.q2.check(ToolCounter)
)
