"""labkit.trace: the Recorder measures what the model saw, and agrees with the model's own count.

The oracle is ``LabModel.calls[i].input_tokens``: the lab model counts every message it received
(the system message too) plus the JSON of each tool schema. A Recorder placed last must arrive at
the same number on every call, however the request was rewritten on the way.
"""

from __future__ import annotations

import asyncio

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ClearToolUsesEdit, ContextEditingMiddleware
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from labkit import LabModel, count_tokens, scenario
from labkit.summarize import SummarizeMiddleware, events_of
from labkit.tokens import PRICES, TokenCounter, cost, tool_schema_tokens
from labkit.trace import KINDS, CallRecord, Recorder, compaction_marks, compactions, kind_of, measure

BIG = 1_000_000  # a window nothing in the scenario reaches


def _agent_calls(model: LabModel) -> list:
    """The model's calls made by the agent loop (summaries are separate calls, not recorded)."""
    return [c for c in model.calls if c.kind == "agent"]


@pytest.fixture(scope="module")
def cleared():
    """Tool results cleared from the request (never from state) once messages pass 50k tokens."""
    model = LabModel(window=BIG)
    edit = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=50_000, keep=3)],
                                    token_counter=count_tokens)
    return model, scenario.run(model, middleware=[edit], turns=scenario.TURNS[:1],
                               recursion_limit=40)


# -- one record per call, and the numbers agree with the model --------------------------------


def test_one_record_per_model_call(naive_1m):
    model, run = naive_1m
    assert run.error is None
    assert len(run.records) == len(model.calls) > 10
    assert [r.index for r in run.records] == list(range(len(run.records)))
    assert all(isinstance(r, CallRecord) for r in run.records)


def test_seen_is_the_sum_of_kinds_and_what_the_model_received(naive_1m):
    model, run = naive_1m
    for rec, call in zip(run.records, model.calls, strict=True):
        assert set(rec.by_kind) == set(KINDS)
        assert rec.seen == sum(rec.by_kind.values())
        assert rec.seen == call.input_tokens == rec.reported_input
        assert rec.messages_seen == len(call.messages)


def test_tool_schemas_are_counted_on_every_call(naive_1m):
    model, run = naive_1m
    fixed = {r.by_kind["tools"] for r in run.records}
    assert len(fixed) == 1 and fixed.pop() > 1000
    assert run.records[0].by_kind["tool"] == 0
    assert run.records[-1].by_kind["tool"] > run.records[-1].seen / 2


def test_system_message_is_counted_like_the_model_counts_it():
    model, rec = LabModel(window=BIG), Recorder()
    prompt = "You are a careful analyst. Cite the export you used."
    run = scenario.run(model, recorder=rec, turns=scenario.TURNS[:1], system_prompt=prompt)
    assert run.error is None
    for r, call in zip(rec.records, model.calls, strict=True):
        assert isinstance(call.messages[0], SystemMessage)
        assert r.by_kind["system"] == count_tokens(SystemMessage(prompt)) > 3
        assert r.seen == call.input_tokens
        assert r.messages_seen == len(call.messages) - 1  # the system message is not in messages


def test_stored_counts_the_state_messages(naive_1m):
    model, run = naive_1m
    # with nothing rewriting the request, the model received exactly the stored history
    for rec, call in zip(run.records, model.calls, strict=True):
        assert rec.stored == count_tokens(call.messages)
        assert rec.messages_stored == rec.messages_seen
        assert rec.saved == 0
    # the last call saw everything but its own answer
    assert run.records[-1].stored == count_tokens(run.messages[:-1])
    assert run.records[-1].messages_stored == len(run.messages) - 1


def test_turns_are_numbered_from_start_turn(naive_1m):
    _, run = naive_1m
    assert [r.turn for r in run.records][0] == 0
    assert sorted({r.turn for r in run.records}) == [0, 1, 2]
    assert [r.turn for r in run.records] == sorted(r.turn for r in run.records)


def test_tool_calls_and_output_tokens_come_from_the_response(naive_1m):
    model, run = naive_1m
    for rec, call in zip(run.records, model.calls, strict=True):
        assert rec.tool_calls == [tc["name"] for tc in call.response.tool_calls]
        assert rec.output_tokens == call.response.usage_metadata["output_tokens"] > 0


# -- a middleware that rewrites the request: seen < stored ------------------------------------


def test_cleared_tool_results_are_seen_but_not_stored(cleared):
    model, run = cleared
    calls = _agent_calls(model)
    assert len(run.records) == len(calls)
    edited = [r for r in run.records if r.saved > 0]
    assert edited, "ClearToolUsesEdit should have cleared something past 50k tokens"
    for rec, call in zip(run.records, calls, strict=True):
        assert rec.seen == call.input_tokens  # still what the model received
    rec, call = next((r, c) for r, c in zip(run.records, calls) if r.saved > 0)
    assert rec.seen - rec.by_kind["tools"] < rec.stored
    assert any(isinstance(m, ToolMessage) and m.content == "[cleared]" for m in call.messages)
    # the state keeps every result in full
    assert not any(isinstance(m, ToolMessage) and m.content == "[cleared]" for m in run.messages)


def test_deep_summary_is_a_kind_of_its_own(deep_60k):
    model, run = deep_60k
    assert run.error is None
    calls = _agent_calls(model)
    assert len(run.records) == len(calls)
    for rec, call in zip(run.records, calls, strict=True):
        assert rec.seen == call.input_tokens
        has_summary = any(m.additional_kwargs.get("lc_source") == "summarization"
                          for m in call.messages)
        assert (rec.by_kind["summary"] > 0) == has_summary
    after = [r for r in run.records if r.by_kind["summary"] > 0]
    assert after and all(r.seen < r.stored for r in after)
    assert all(r.messages_seen < r.messages_stored for r in after)


def test_deep_overflow_is_recorded_then_retried(deep_60k):
    model, run = deep_60k
    failed = [r for r in run.records if r.error]
    assert len(failed) == 1 and failed[0].error.startswith("ContextOverflowError")
    nxt = run.records[failed[0].index + 1]
    assert nxt.stored == failed[0].stored and nxt.seen < failed[0].seen  # same state, compacted view


# -- compactions, read from the records ------------------------------------------------------


def _record(index, stored, seen, summary=0, error=None):
    by = dict.fromkeys(KINDS, 0)
    by["summary"] = summary
    return CallRecord(index=index, turn=0, stored=0, seen=summary, by_kind=by, messages_stored=stored,
                      messages_seen=seen, error=error)


def test_compactions_are_the_calls_that_first_see_a_new_cut():
    """Worked example. Call 1 sees 4 messages of 9 stored, one of them the summary: the summary
    stands for 9 - (4 - 1) = 6 messages, so the cut is 6. Call 2 sees 6 of 11: 11 - 5 = 6 again,
    the same summary. Call 3 was refused — the model never read what it was sent. Call 4 sees 4 of
    13: a new cut, 10. The labels name the folded messages, 0–5 and 0–9."""
    records = [_record(0, 3, 3), _record(1, 9, 4, 50), _record(2, 11, 6, 50),
               _record(3, 13, 3, 60, error="overflow"), _record(4, 13, 4, 60)]
    run = scenario.Run(messages=[], files={}, records=records)
    assert compactions(records) == compactions(run) == [(1, 6), (4, 10)]
    assert compaction_marks(run) == [(1, "compaction 1: messages 0–5 folded"),
                                     (4, "compaction 2: messages 0–9 folded")]
    assert compactions([]) == compaction_marks([]) == []


@pytest.mark.parametrize("knobs, profile", [
    ({"trigger": ("tokens", 60_000), "keep": ("tokens", 10_000)}, True),
    ({"trigger": ("messages", 12), "keep": ("messages", 6)}, True),
    ({}, False),  # no profile: the 170k trigger never fires; the overflow fallback compacts
], ids=["tokens", "messages", "overflow fallback"])
def test_marks_fall_on_the_first_accepted_call_after_each_event(knobs, profile):
    """The oracle is the middleware's own events: the first call made with as many stored
    messages as the event was created at (the retry, after a refused call) is where it shows."""
    model = LabModel(window=128_000, **({} if profile else {"profile": None}))
    run = scenario.run(model, middleware=[SummarizeMiddleware(model, **knobs)])
    events = events_of(run.state)
    first = [next(r.index for r in run.records if r.messages_stored == e.created_at and not r.error)
             for e in events]
    assert events and [call for call, _ in compaction_marks(run)] == first
    assert [cut for _, cut in compactions(run)] == [e.cut for e in events]


def test_compactions_read_deepagents_runs_too(deep_60k):
    _, run = deep_60k
    refused = next(r.index for r in run.records if r.error)
    assert compactions(run) == [(refused + 1, run.state["_summarization_event"]["cutoff_index"])]


# -- errors and cost --------------------------------------------------------------------------


def test_an_overflow_is_recorded_on_the_last_record():
    model = LabModel(window=128_000)
    run = scenario.run(model)
    assert isinstance(run.error, ContextOverflowError)
    last = run.records[-1]
    assert last.error and last.error.startswith("ContextOverflowError")
    assert last.seen == model.calls[-1].input_tokens > 128_000
    assert last.cost == 0.0 and last.output_tokens == 0 and last.reported_input is None
    assert all(r.error is None for r in run.records[:-1])


@pytest.mark.parametrize("price", ["lab-model", "small", "large", (2.0, 8.0)])
def test_cost_uses_the_price(price):
    rec = Recorder(price=price)
    run = scenario.run(LabModel(window=BIG), recorder=rec, turns=scenario.TURNS[:1])
    per_in, per_out = PRICES[price] if isinstance(price, str) else price
    for r in run.records:
        assert r.cost == pytest.approx((r.seen * per_in + r.output_tokens * per_out) / 1e6)
        assert r.cost == cost(r.seen, r.output_tokens, price) > 0


def test_an_unknown_price_is_refused():
    with pytest.raises(ValueError, match="gpt-9"):
        Recorder(price="gpt-9")


# -- placement, names, async ------------------------------------------------------------------


def test_a_recorder_placed_first_sees_the_request_before_it_is_edited():
    early = Recorder(name="early")
    edit = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=50_000, keep=3)],
                                    token_counter=count_tokens)
    run = scenario.run(LabModel(window=BIG), middleware=[early, edit], turns=scenario.TURNS[:1],
                       recursion_limit=20)
    assert len(early.records) == len(run.records)
    for first, last in zip(early.records, run.records, strict=True):
        assert first.stored == last.stored
        assert first.saved == 0 and first.messages_seen == first.messages_stored
        assert first.seen >= last.seen
    assert any(first.seen > last.seen for first, last in zip(early.records, run.records))


def test_keep_requests_keeps_what_each_call_was_sent():
    """With ``keep_requests=True`` each record carries the request as it left for the model:
    the messages the lab model received (its call log has the system message first), the system
    message, and the tool objects — measuring them again gives the record's own numbers. The
    default keeps none."""
    system = "You are a research assistant."
    plain = Recorder(name="plain")
    model, rec = LabModel(window=BIG), Recorder(keep_requests=True)
    run = scenario.run(model, middleware=[plain], recorder=rec, turns=scenario.TURNS[:1],
                       recursion_limit=20, system_prompt=system)
    assert run.records == rec.records and all(r.request is None for r in plain.records)
    for r, call in zip(rec.records, model.calls, strict=True):
        sent = r.request
        assert sent.system.content == system
        assert [sent.system, *sent.messages] == call.messages
        assert sent.tool_names == call.tools and {"fetch_market_data", "read_file"} <= set(call.tools)
        assert measure(sent.messages, sent.system, sent.tools, TokenCounter()) == r.by_kind
    assert "request" not in repr(rec.records[0])  # a kept request never floods a printed record


def test_two_recorders_need_two_names():
    model = LabModel(window=BIG)
    with pytest.raises(AssertionError, match="duplicate"):
        create_agent(model, tools=scenario.tools(), middleware=[Recorder(), Recorder()])
    create_agent(model, tools=scenario.tools(), middleware=[Recorder(name="a"), Recorder()])


def test_async_path_records_through_awrap_model_call():
    class AsyncOnly(Recorder):
        def wrap_model_call(self, request, handler):
            raise AssertionError("ainvoke must go through awrap_model_call")

    model, rec = LabModel(window=BIG), AsyncOnly()
    agent = create_agent(model, tools=scenario.tools(), middleware=[rec])
    out = asyncio.run(agent.ainvoke({"messages": [HumanMessage(scenario.REQUEST)]}))
    assert len(rec.records) == len(model.calls) > 10
    assert [r.seen for r in rec.records] == [c.input_tokens for c in model.calls]
    assert out["messages"][-1].content  # the run finished


def test_async_errors_are_recorded():
    model, rec = LabModel(window=1_000), Recorder()
    agent = create_agent(model, tools=scenario.tools(), middleware=[rec])
    with pytest.raises(ContextOverflowError):
        asyncio.run(agent.ainvoke({"messages": [HumanMessage(scenario.REQUEST)]}))
    assert rec.records[-1].error.startswith("ContextOverflowError")


def test_an_inner_middleware_may_answer_in_place_of_the_model():
    class Canned(AgentMiddleware):  # inside the Recorder: answers without calling the model
        def wrap_model_call(self, request, handler):
            return AIMessage("done", usage_metadata={"input_tokens": 7, "output_tokens": 2,
                                                     "total_tokens": 9})

    model, rec = LabModel(window=BIG), Recorder()
    agent = create_agent(model, tools=[], middleware=[rec, Canned()])
    agent.invoke({"messages": [HumanMessage("hi")]})
    assert model.calls == []
    [r] = rec.records
    assert (r.output_tokens, r.reported_input) == (2, 7)
    assert r.seen == count_tokens([HumanMessage("hi")])


# -- the pure parts ---------------------------------------------------------------------------


def test_kind_of():
    summary = HumanMessage("## SESSION INTENT ...", additional_kwargs={"lc_source": "summarization"})
    assert kind_of(summary) == "summary"
    assert kind_of(SystemMessage("s")) == "system"
    assert kind_of(HumanMessage("h")) == "human"
    assert kind_of(AIMessage("a")) == "ai"
    assert kind_of(ToolMessage("t", tool_call_id="1")) == "tool"


def test_measure_splits_by_kind_and_counts_schemas_like_tokens():
    tools = scenario.tools()
    msgs = [HumanMessage("hello"), AIMessage("", tool_calls=[
        {"name": "search_news", "args": {"ticker": "BRLM"}, "id": "1", "type": "tool_call"}]),
        ToolMessage("news", tool_call_id="1")]
    by = measure(msgs, SystemMessage("be brief"), tools, TokenCounter())
    assert by["tools"] == tool_schema_tokens(tools)
    assert by["system"] == count_tokens(SystemMessage("be brief"))
    assert by["human"] + by["ai"] + by["tool"] == count_tokens(msgs)
    assert by["summary"] == 0
    assert measure([]) == dict.fromkeys(KINDS, 0)
