"""Outside the lab scenario, a prompt that names what a bound tool does gets one call to it
(``labkit.model._prose``, issue 10), arguments copied from the prompt by fixed word rules.

Worked example (``test_a_prompt_naming_a_tool_gets_one_call_then_the_result_relayed``): "What is
the weather in San Francisco, CA?" shares the word "weather" with ``get_weather`` ("Get the
weather at a location."); "What" opens the sentence, so the capitalised phrase is "San
Francisco, CA", and the only text argument, ``location``, gets it. The tool says "It's sunny.",
and the next reply relays that.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from labkit import prompts, scenario
from labkit.model import LabModel
from labkit.model._prose import named_tool, prose_args
from tests.conftest import called


@tool
def get_weather(location: str) -> str:
    """Get the weather at a location."""
    return "It's sunny."


@tool
def create_customer(customer_name: str, description: str, employees: int = 1) -> str:
    """Create a customer record."""
    return f"Created {customer_name} ({employees})"


def ask(messages: list, tools: list):
    return LabModel().bind_tools(tools).invoke(messages)


def test_a_prompt_naming_a_tool_gets_one_call_then_the_result_relayed():
    messages = [HumanMessage("What is the weather in San Francisco, CA?")]
    reply = ask(messages, [get_weather, create_customer])
    assert called(reply) == [("get_weather", {"location": "San Francisco, CA"})], \
        "the prompt says 'weather': one call to get_weather, the place copied from the prompt"
    result = get_weather.invoke(reply.tool_calls[0])
    answer = ask([*messages, reply, result], [get_weather, create_customer])
    assert answer.content == "The tool returned: It's sunny." and not answer.tool_calls


@pytest.mark.parametrize(("prompt", "args"), [
    ("Create a customer named '你好啊集团' (Hello Group), 12 employees",
     {"customer_name": "你好啊集团", "description": "<description>", "employees": 12}),
    ('Add the customer "Zoë & Co"', {"customer_name": "Zoë & Co", "description": "<description>"}),
    ("New customers: Acme Widgets Ltd", {"customer_name": "Acme Widgets Ltd",
                                          "description": "<description>"}),
    ("Please add a customer", {"customer_name": "<customer_name>", "description": "<description>"}),
])
def test_arguments_come_from_the_prompt_or_show_they_were_not_understood(prompt, args):
    reply = ask([HumanMessage(prompt)], [get_weather, create_customer])
    assert called(reply) == [("create_customer", args)], \
        "quoted text, else the capitalised phrase, fills the first text argument exactly"


@pytest.mark.parametrize("prompt", ["hello", "Hello! Who are you?", "What is the capital of France?",
                                    "Tell me what you can do."])
def test_a_prompt_naming_no_bound_tool_still_gets_the_intro(prompt):
    reply = ask([HumanMessage(prompt)], [get_weather, create_customer])
    assert reply.content == prompts.LAB_MODEL_INTRO and not reply.tool_calls


def test_the_scenario_is_untouched_by_the_prose_rule():
    """A scenario request that happens to share a word with a bound tool still runs the script."""
    request = scenario.tasks()[0].request
    reply = ask([HumanMessage(request)], [*scenario.tools(), get_weather, create_customer])
    assert reply.tool_calls and reply.tool_calls[0]["name"] in {t.name for t in scenario.tools()}


def test_ties_go_to_the_first_bound_tool_and_common_words_never_match():
    schemas = [convert_to_openai_tool(t) for t in (get_weather, create_customer)]
    assert named_tool("weather for a customer", schemas)["function"]["name"] == "get_weather"
    assert named_tool("get the location of it", schemas)["function"]["name"] == "get_weather"
    assert named_tool("what is this for", schemas) is None
    assert prose_args(schemas[0], "weather", lambda n, p: f"<{n}>") == {"location": "<location>"}


def test_an_apostrophe_inside_a_word_quotes_nothing():
    schema = convert_to_openai_tool(get_weather)
    unknown = lambda name, prop: "?"  # noqa: E731 — the placeholder for an argument the prompt lacks
    quoted = prose_args(schema, "Check the user's notes for 'Lyon, FR' today", unknown)
    assert quoted == {"location": "Lyon, FR"}
    assert prose_args(schema, "the user's and the team's weather", unknown) == {"location": "?"}, "no quote"
