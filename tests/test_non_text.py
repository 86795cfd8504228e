"""Content a real provider puts in messages that is not plain text: OpenAI's Responses API items
(``create_deep_agent`` uses that API for ``openai:`` models), Anthropic's server tools, and an
image a tool returns. labkit's instruments and middleware count it and the agent runs; only the
lab model's own count refuses what it cannot see."""

from __future__ import annotations

import json

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

from labkit import Recorder, scenario
from labkit.meter import Meter
from labkit.offload import OffloadMiddleware
from labkit.summarize import SummarizeMiddleware
from labkit.tokens import TOKENS_PER_MESSAGE, TokenCounter, message_text
from tests.conftest import Scripted

# An AIMessage as langchain-openai builds it from a Responses API reply (its output items, in
# order: a reasoning summary, a function call, a web search, the text).
RESPONSES = AIMessage(
    content=[{"type": "reasoning", "id": "rs_1",
              "summary": [{"type": "summary_text", "text": "Check BRLM."}]},
             {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup",
              "arguments": '{"ticker": "BRLM"}', "status": "completed"},
             {"type": "web_search_call", "id": "ws_1", "status": "completed",
              "action": {"type": "search", "query": "BRLM news"}},
             {"type": "text", "text": "Looking it up.", "annotations": [], "id": "msg_1"}],
    tool_calls=[{"name": "lookup", "args": {"ticker": "BRLM"}, "id": "call_1", "type": "tool_call"}],
    response_metadata={"model_provider": "openai"})

ANTHROPIC = AIMessage(
    content=[{"type": "thinking", "thinking": "Search first.", "signature": "sig"},
             {"type": "redacted_thinking", "data": "opaque"},
             {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "BRLM"}},
             {"type": "web_search_tool_result", "tool_use_id": "s1",
              "content": [{"type": "web_search_result", "title": "BRLM up", "url": "https://example.invalid"}]}],
    response_metadata={"model_provider": "anthropic"})

PNG = {"type": "image", "base64": "iVBORw0KGgo" * 40, "mime_type": "image/png"}


def test_a_responses_api_reply_counts_its_reasoning_search_and_text_and_its_call_once():
    text = message_text(RESPONSES)
    assert text.split("\n") == ["Check BRLM.", 'web_search{"query": "BRLM news", "type": "search"}',
                                 "Looking it up.", 'lookup{"ticker": "BRLM"}']
    assert text.count("lookup") == 1  # the function_call item is the tool call, counted once
    assert message_text(RESPONSES, text_only=True) == "Looking it up."


def test_anthropics_server_tools_and_redacted_thinking_count_as_their_json():
    assert message_text(ANTHROPIC).split("\n") == [
        "Search first.", json.dumps({"data": "opaque", "type": "redacted_thinking"}),
        'web_search{"query": "BRLM"}',
        json.dumps([{"title": "BRLM up", "type": "web_search_result", "url": "https://example.invalid"}])]


def test_an_image_still_raises_for_the_lab_and_counts_as_its_data_for_the_instruments():
    message = ToolMessage([{"type": "text", "text": "Chart"}, PNG], tool_call_id="c1")
    with pytest.raises(ValueError, match=r"type 'image' at index 1"):
        message_text(message)
    counting = TokenCounter(non_text="count")
    n = counting.message(message)
    assert n == TokenCounter().text(str(message.content)) + TOKENS_PER_MESSAGE  # the Meter's rule
    with pytest.raises(ValueError, match="type 'image'"):  # counted once by object: not for this one
        TokenCounter().message(message)
    with pytest.raises(ValueError, match="non_text must be"):
        TokenCounter(non_text="skip")


@tool
def chart(ticker: str) -> list:
    """The market chart of a ticker."""
    return [{"type": "text", "text": f"Chart for {ticker}"}, PNG]


def _agent_with_an_image(middleware):
    model = Scripted(messages=iter([
        AIMessage("", tool_calls=[{"name": "chart", "args": {"ticker": "BRLM"}, "id": "c1",
                                   "type": "tool_call"}]),
        AIMessage("Done.")]))
    meter = Meter(cap=1_000_000, out=None)
    return create_agent(meter.attach(model), [chart], middleware=middleware), meter


def test_an_agent_whose_tool_returns_an_image_runs_under_labkits_middleware_and_instruments(tmp_path):
    rec = Recorder()
    summarize = SummarizeMiddleware(Scripted(messages=iter([])), trigger=("tokens", 100_000),
                                    keep=("messages", 4))
    agent, meter = _agent_with_an_image([OffloadMiddleware(window=128_000), summarize, rec])
    run = scenario.capture(agent, "BRLM chart", rec)
    assert run.error is None and [m.type for m in run.messages] == ["human", "ai", "tool", "ai"]
    shown = [r.seen - r.by_kind["tools"] for r in rec.records]  # the scripted model binds no tools
    assert shown == [r.tokens for r in meter.requests]  # what the Recorder shows is what was sent
    assert rec.records[1].seen - rec.records[0].seen > 100  # the image's data counted


def test_a_fold_over_images_archives_them_with_their_messages():
    """Summarize folds a thread whose tool results carry images: the run goes on and the archive
    holds every image block word for word."""
    from langgraph.checkpoint.memory import InMemorySaver

    from labkit import LabModel
    from labkit.summarize import events_of, read_archive

    calls = [AIMessage("", tool_calls=[{"name": "chart", "args": {"ticker": f"T{i}"}, "id": f"c{i}",
                                        "type": "tool_call"}]) for i in range(6)]
    rec = Recorder()
    fold = SummarizeMiddleware(LabModel(), trigger=("messages", 6), keep=("messages", 2))
    model = Scripted(messages=iter([*calls, AIMessage("done")]))
    agent = create_agent(model, [chart], middleware=[fold, rec], checkpointer=InMemorySaver())
    run = scenario.capture(agent, "charts", rec, config={"configurable": {"thread_id": "x"}})
    assert run.error is None and len(events_of(run.state)) == 2
    archive = run.files["/conversation_history/x.md"]
    kept = [b for s in read_archive(archive) for m in s.messages if isinstance(m.content, list)
            for b in m.content if isinstance(b, dict) and b.get("type") == "image"]
    assert kept and all(b == PNG for b in kept)


def test_replay_and_the_knobs_read_a_run_with_an_image_as_the_recorder_counted_it():
    from labkit import replay, widgets

    rec = Recorder()
    agent, _ = _agent_with_an_image([rec])
    run = scenario.capture(agent, "BRLM chart", rec)
    again = replay.replay(run, window=1_000_000)
    assert list(again.seen) == [r.seen for r in run.records]
    assert "not a valid setting" not in widgets.knobs_result(run)["status"]
