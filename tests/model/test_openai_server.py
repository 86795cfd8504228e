"""get_model() on a real HTTP client: langchain-openai's ChatOpenAI, built from LABKIT_MODEL and
LABKIT_BASE_URL, against the fake OpenAI-compatible server in tests/openai_server.py (127.0.0.1).

What the lab model cannot show: the wire format (usage, streamed chunks, parallel tool calls, a
provider's 400 on overflow) and an agent loop driven by a model that stops early.
"""

from __future__ import annotations

import openai
import pytest
from langchain_core.exceptions import ContextOverflowError
from langchain_openai import ChatOpenAI

from labkit import get_model, scenario
from labkit.model import describe
from labkit.summarize import SummarizeMiddleware, events_of
from labkit.trace import Recorder
from tests.openai_server import INVENTED, OpenAIServer, policy, prompt_tokens


@pytest.fixture
def model(openai_server, monkeypatch):
    """get_model() pointed at the fake server, with a 32,000-token window from LABKIT_WINDOW."""
    monkeypatch.setenv("LABKIT_MODEL", "openai:fake-model")
    monkeypatch.setenv("LABKIT_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    monkeypatch.setenv("LABKIT_WINDOW", "32000")
    return get_model(max_retries=0)


def test_get_model_builds_chat_openai_for_the_endpoint(model, openai_server):
    assert isinstance(model, ChatOpenAI) and model.stream_usage
    assert model.profile["max_input_tokens"] == 32_000
    assert describe(model) == f"openai:fake-model at {openai_server.base_url}, window 32,000 (LABKIT_WINDOW)"


def test_a_plain_invoke_reports_usage(model, openai_server):
    reply = model.invoke("hello")
    body = openai_server.chat_requests[-1]
    assert body["model"] == "fake-model" and not body.get("stream")
    prompt = prompt_tokens(body["messages"], body.get("tools", []))
    assert reply.usage_metadata["input_tokens"] == prompt == 3 + 3 + 1, "OpenAI's recipe: 3 + 3 + 'hello'"
    assert reply.content.startswith("Summary:"), "no tools offered: a short text answer"


def test_streaming_reports_usage_in_its_last_chunk(model, openai_server):
    chunks = list(model.stream("hello"))
    assert openai_server.chat_requests[-1]["stream_options"] == {"include_usage": True}
    whole = sum(chunks[1:], chunks[0])
    assert whole.content.startswith("Summary:")
    assert whole.usage_metadata and whole.usage_metadata["input_tokens"] > 0


@pytest.mark.parametrize("stream", [False, True])
def test_a_user_turn_gets_two_parallel_tool_calls(model, stream):
    bound = model.bind_tools(scenario.tools())
    if stream:
        chunks = list(bound.stream(scenario.REQUEST))
        reply = sum(chunks[1:], chunks[0])
    else:
        reply = bound.invoke(scenario.REQUEST)
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [
        ("fetch_market_data", {"ticker": "BRLM"}), ("search_news", {"ticker": "BRLM"})]


def test_asked_for_an_exact_figure_it_invents_one(model):
    reply = model.bind_tools(scenario.tools()).invoke(scenario.NEEDLE_QUESTION)
    assert reply.content == INVENTED and not reply.tool_calls, "it makes a figure up rather than look"


def test_models_are_listed(openai_server):
    client = openai.OpenAI(base_url=openai_server.base_url, api_key="dummy", max_retries=0)
    assert [m.id for m in client.models.list()] == ["fake-model"]


def test_a_request_above_the_window_is_refused_with_openais_error(model, openai_server):
    """The server answers OpenAI's 400 ``context_length_exceeded`` body. langchain-openai 1.7.4
    maps it to ContextOverflowError only when ``"context_length_exceeded" in str(e)``, and the
    openai 3.x client's ``str(e)`` carries only the message: the code is in ``e.code``/``e.body``.
    So on this pair the overflow arrives as a plain invalid-request error, which labkit's
    SummarizeMiddleware recognises by its code (the test below)."""
    with pytest.raises(openai.BadRequestError) as caught:
        model.invoke("word " * 40_000)
    assert caught.value.status_code == 400 and caught.value.code == "context_length_exceeded"
    assert "maximum context length" in caught.value.message
    assert not isinstance(caught.value, ContextOverflowError), (
        "langchain-openai now maps this to ContextOverflowError: update this test and the docstring")


def test_policy_calls_one_more_tool_then_stops_early():
    tools = [{"type": "function", "function": {"name": n}} for n in ("fetch_market_data", "search_news")]
    user = {"role": "user", "content": scenario.REQUEST}
    first = {"role": "assistant", "tool_calls": [{"function": {"name": "fetch_market_data",
                                                               "arguments": '{"ticker": "BRLM"}'}}]}
    result = {"role": "tool", "content": "..."}
    assert policy([user, first, result], tools) == ("", [("fetch_market_data", {"ticker": "CRVD"})])
    second = {"role": "assistant", "tool_calls": [{"function": {"name": "fetch_market_data",
                                                                "arguments": '{"ticker": "CRVD"}'}}]}
    text, calls = policy([user, first, result, second, result], tools)
    assert calls == [] and text.startswith("Done"), "it stops after three calls, with no report written"


def test_the_scenario_runs_an_agent_loop_on_the_server(monkeypatch):
    """One turn through create_agent: the parallel calls, one more fetch, an early stop — with
    SummarizeMiddleware compacting at 4 messages, so its summary calls go to the server too."""
    with OpenAIServer(window=1_000_000) as server:
        monkeypatch.setenv("LABKIT_MODEL", "openai:fake-model")
        monkeypatch.setenv("LABKIT_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "dummy")
        model = get_model(max_retries=0)
        recorder = Recorder()
        summarize = SummarizeMiddleware(model, trigger=("messages", 4), keep=("messages", 2))
        run = scenario.run(model, middleware=[summarize], turns=scenario.TURNS[:1], recorder=recorder,
                           export_scale=0.05)
        requests = server.chat_requests
    assert run.error is None and run.turns_completed == 1
    agent_calls = [b for b in requests if b.get("tools")]
    summary_calls = [b for b in requests if not b.get("tools")]
    assert len(recorder.records) == len(agent_calls) == 3, "the Recorder saw every agent call"
    assert [r.tool_calls for r in recorder.records] == [["fetch_market_data", "search_news"],
                                                        ["fetch_market_data"], []]
    assert all(r.reported_input for r in recorder.records), "usage came back from the server"
    assert summary_calls and "<messages>" in summary_calls[0]["messages"][0]["content"]
    assert run.messages[-1].content.startswith("Done"), "it stopped early, with no report"
    assert "/reports/weekly.md" not in run.files


def test_summarize_treats_openais_context_length_error_as_an_overflow(monkeypatch):
    """The flip of the test above: the same 400 arrives through the agent loop, and labkit's
    fallback recognises it by its code — it compacts and retries, and the turn goes on. With a
    trigger it never reaches (a million tokens), only the overflow can make it compact."""
    with OpenAIServer(window=6_000) as server:
        monkeypatch.setenv("LABKIT_MODEL", "openai:fake-model")
        monkeypatch.setenv("LABKIT_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "dummy")
        model = get_model(max_retries=0)
        summarize = SummarizeMiddleware(model, trigger=("tokens", 1_000_000), keep=("messages", 2))
        run = scenario.run(model, middleware=[summarize], turns=scenario.TURNS[:1], export_scale=0.1)
        refused = [r for r in run.records if r.error]
    events = events_of(run.state)
    assert refused and "maximum context length" in refused[0].error
    assert events and events[0].reason == "overflow", "the fallback fired on OpenAI's own error"
