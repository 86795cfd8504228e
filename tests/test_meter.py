"""labkit.meter: the budget is a cap on what is sent, whatever the model does, and what it shows is
what the server received — held to the project's OpenAI-compatible server (tests/openai_server.py),
which counts every prompt its own way (OpenAI's recipe), through langchain's real HTTP client."""

from __future__ import annotations

import asyncio
import warnings

import pytest
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI

from labkit import LabModel, experiments, scenario
from labkit.meter import BudgetExceeded, Meter
from labkit.trace import Recorder
from labkit.yourmodel import DEFAULT_BUDGET, on_your_model
from tests.openai_server import OpenAIServer

TOLERANCE = 0.05  # labkit's o200k count against the server's: the tokenizer tolerance
LOOPING = ["summarization", "without_deletion", "needle_recovery", "anchors", "cutting_safely",
           "summary_itself", "clinic"]


def chat(server: OpenAIServer, **kwargs) -> ChatOpenAI:
    return ChatOpenAI(model="fake-model", base_url=server.base_url, api_key="dummy", stream_usage=True,
                      **kwargs)


@pytest.fixture
def your_model(monkeypatch):
    """Point LABKIT_MODEL at a server: ``your_model(server)``; the budget is the default."""
    monkeypatch.delenv("LABKIT_BUDGET_TOKENS", raising=False)

    def point(server: OpenAIServer) -> None:
        for key, value in {"LABKIT_MODEL": "openai:fake-model", "LABKIT_BASE_URL": server.base_url,
                           "OPENAI_API_KEY": "dummy", "LABKIT_WINDOW": "64000"}.items():
            monkeypatch.setenv(key, value)

    return point


def run_quietly(experiment):
    lines: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the clinic's archive write fails by design
        return on_your_model(experiment, out=lines.append), lines


@pytest.mark.parametrize("name", LOOPING)
def test_a_looping_model_stops_at_the_budget_not_the_recursion_limit(name, your_model):
    """The server's ``loop`` fetches again whatever a compaction hid, without end (and sends a
    malformed call now and then): the default budget stops it, one line says so, and the server
    received no more than the budget (within the tokenizer tolerance)."""
    with OpenAIServer(window=64_000, behaviours=("loop", "bad_args")) as server:
        your_model(server)
        outcome, lines = run_quietly(getattr(experiments, name)())
    assert isinstance(outcome.yours.error, BudgetExceeded), "the run ended at the budget"
    assert outcome.sent <= DEFAULT_BUDGET, "labkit sent no more than the budget, by its count"
    assert server.received <= DEFAULT_BUDGET * (1 + TOLERANCE), "nor by the server's"
    assert abs(outcome.sent - server.received) <= TOLERANCE * server.received
    stops = [line for line in lines if line.startswith("Stopped before request")]
    assert len(stops) == 1 and "LABKIT_BUDGET_TOKENS" in stops[0], "one line says where and why"
    assert outcome.table().rows[1]["ended with"] == "stopped at the budget"
    assert not outcome.problems, outcome.problems
    loop = [f for f in outcome.findings if f.key == "repeated_work"]
    assert loop and "a loop" in loop[0].evidence(), "diagnose names the loop"


def test_one_line_per_request_and_totals_the_server_agrees_with(your_model):
    """Parent, summary and subagent requests each get a line, and the table's input total is what
    the server received: isolation (subagents) and summarization (summary calls)."""
    for make, who, behaviours in ((experiments.isolation, "subagent researcher", ()),
                                  (experiments.summarization, "summary", ("loop",))):
        with OpenAIServer(window=64_000, behaviours=behaviours) as server:
            your_model(server)
            outcome, lines = run_quietly(make())
        shown = [line for line in lines if line.startswith("  request ")]
        assert len(shown) == len(server.chat_requests) == sum(r.sent for r in outcome.requests)
        assert any(f"· {who} ·" in line for line in shown) and any("· parent ·" in line for line in shown)
        row = outcome.table().rows[1]
        assert row["requests"] == len(server.chat_requests)
        assert row["provider's input count"] == server.received, "the server's usage, summed"
        assert abs(row["input tokens sent"] - server.received) <= TOLERANCE * server.received


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_streaming_model_tells_subagents_from_the_parent_as_a_plain_one_does(mode):
    """langchain streams a model made with ``streaming=True`` without handing ``_stream`` the
    request's run manager (where the agent's name is): each request is still told apart."""
    from deepagents import create_deep_agent
    from langchain_core.tools import tool

    @tool
    def fetch_market_data(ticker: str) -> str:
        """Fetch market data."""
        return f"{ticker}: revenue 1.0"

    who = {}
    for streaming in (False, True):
        with OpenAIServer() as server:
            meter = Meter(cap=100_000, out=None)
            model = meter.attach(chat(server, streaming=streaming))
            agent = create_deep_agent(model, tools=[fetch_market_data])
            turn = {"messages": [HumanMessage("Report on Brightloom, Corvid and Driftwood.")]}
            agent.invoke(turn) if mode == "sync" else asyncio.run(agent.ainvoke(turn))
            who[streaming] = [r.who for r in meter.requests]
    assert who[True] == who[False] and {"parent", "subagent general-purpose"} <= set(who[True])


def test_a_malformed_tool_call_is_counted_and_capped_as_it_is_sent(monkeypatch):
    """A reply's call cut off mid-JSON (a long write at max_tokens) is re-sent on every later
    request: counted, so the cap stops the request that carries it."""
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    def long_bad_call(self, number, calls):
        return [{"id": f"call_{number}_bad", "type": "function", "function": {
            "name": "fetch_market_data", "arguments": '{"ticker": "BRLM", "note": "' + "revenue " * 3000}}] \
            if calls else []
    monkeypatch.setattr(OpenAIServer, "extra_calls", long_bad_call)

    @tool
    def fetch_market_data(ticker: str) -> str:
        """Fetch market data."""
        return f"{ticker}: revenue 1.0"

    with OpenAIServer() as server:
        meter = Meter(cap=2_000, out=None)
        with pytest.raises(BudgetExceeded):
            create_agent(meter.attach(chat(server)), tools=[fetch_market_data]).invoke(
                {"messages": [HumanMessage("Report on Brightloom and Corvid.")]})
        refused = meter.requests[-1]
        assert server.received <= meter.cap and refused.outcome == "not sent" and refused.tokens > meter.cap


def test_what_the_model_sends_on_every_call_and_edits_inside_a_message_are_counted():
    """A response_format set in model_kwargs is sent with every request; a message whose content
    list was edited in place is sent at its new size; either way the cap sees it."""
    from pydantic import BaseModel, Field

    class Report(BaseModel):
        summary: str = Field(description="Cover revenue, margins and risks. " * 300)

    schema = {"type": "json_schema", "json_schema": {"name": "Report", "schema": Report.model_json_schema()}}
    with OpenAIServer() as server:
        meter = Meter(cap=1_000, out=None)
        with pytest.raises(BudgetExceeded):
            meter.attach(chat(server, model_kwargs={"response_format": schema})).invoke("hi")
        assert server.received == 0
        meter = Meter(cap=1_000, out=None)
        model, message = meter.attach(chat(server)), HumanMessage([{"type": "text", "text": "hi"}])
        model.invoke([message])
        message.content[0]["text"] = "revenue " * 5000
        with pytest.raises(BudgetExceeded):
            model.invoke([message])
        assert server.received < meter.cap


def test_a_schema_passed_the_anthropic_or_google_way_is_counted():
    """Anthropic's with_structured_output passes output_config, Google's response_json_schema (or
    response_schema): each is counted beside the messages, as response_format is."""
    summary = {"type": "string", "description": "Cover it. " * 200}
    schema = {"type": "object", "properties": {"summary": summary}}
    meter, messages = Meter(out=None), [HumanMessage("hi")]
    plain = meter.count(messages, {})
    for key in ("response_format", "output_config", "response_json_schema", "response_schema"):
        assert meter.count(messages, {key: schema}) > plain + 400, key


def test_a_stream_left_early_is_shown_as_cut_off():
    """A sync stream() loop that stops after its first chunk: the request left, its line says so."""
    with OpenAIServer() as server:
        lines = []
        meter = Meter(cap=10_000, out=lines.append)
        for _ in meter.attach(chat(server, streaming=True)).stream("hi"):
            break
    assert meter.requests[-1].outcome == "cut off" and "cut off" in lines[-1]


def test_a_request_cancelled_before_its_reply_is_shown_as_cut_off():
    """asyncio.wait_for gives up on a slow reply: the request left (counted) and is shown as cut
    off, not as answered."""
    with OpenAIServer(behaviours=("slow",)) as server:
        lines = []
        meter = Meter(cap=10_000, out=lines.append)
        model = meter.attach(chat(server))
        with pytest.raises(asyncio.TimeoutError):
            asyncio.run(asyncio.wait_for(model.ainvoke("hi"), 0.15))
    assert meter.requests[-1].outcome == "cut off" and meter.sent == meter.requests[-1].tokens
    assert "cut off before the reply ended" in lines[-1]


def test_an_anthropic_model_used_before_attach_sends_each_request_once():
    """ChatAnthropic caches its client's parameters (max_retries among them) on first use: the
    meter's copy rebuilds them, so the SDK does not retry behind the meter."""
    from langchain_anthropic import ChatAnthropic

    from labkit._client_retries import without_client_retries

    model = ChatAnthropic(model="claude-haiku-4-5", api_key="k", base_url="http://127.0.0.1:9")
    assert model._client_params["max_retries"] == 2  # cached, as after a first call
    assert without_client_retries(model)._client_params["max_retries"] == 0


def test_retries_are_shown_counted_and_capped(your_model):
    """A 429 (Retry-After: 0) and a 500 on requests 2 and 3 (the second call, tried three times),
    a reset on request 5: each is a line saying it is retried, each counted as sent (the server
    received it), and the run goes on."""
    with OpenAIServer(window=64_000, failures={2: "429", 3: "500", 5: "reset"}) as server:
        your_model(server)
        outcome, lines = run_quietly(experiments.token_counts())
    retried = [line for line in lines if "retrying in" in line]
    assert [line.split("failed: ")[1].split(":")[0] for line in retried] == [
        "rate limited (429)", "server error (500)", "connection reset"]
    assert outcome.yours.error is None and outcome.requests[1].outcome == "retried"
    assert sum(r.sent for r in outcome.requests) == len(server.chat_requests)
    assert abs(outcome.sent - server.received) <= TOLERANCE * server.received


@pytest.mark.parametrize(("server_kwargs", "expected"), [
    ({"key": "sk-right"}, ["authentication failed (401)", "Incorrect API key", "check OPENAI_API_KEY"]),
    ({"models": ("another-model",)}, ["not found (404)", "does not exist", "check the name in LABKIT_MODEL"]),
    ({"failures": {1: "500", 2: "500", 3: "500"}}, ["server error (500)", "Sorry about that",
                                                     "run the cell again later"]),
    ({"failures": {1: "reset", 2: "reset", 3: "reset"}}, ["connection reset", "Connection reset by peer",
                                                           "run the cell again"]),
])
def test_a_providers_error_is_its_message_and_what_to_do(server_kwargs, expected, your_model):
    with OpenAIServer(window=64_000, **server_kwargs) as server:
        your_model(server)
        outcome, lines = run_quietly(experiments.token_counts())
    said = next(line for line in lines if line.startswith("  request ") and "failed:" in line
                and "retrying" not in line)
    for words in expected:
        assert words in said, said
    assert lines[-len(outcome.observations) - 1].startswith("Your run ended early: " + expected[0])
    assert outcome.table().rows[1]["ended with"] == expected[0]


def test_a_refused_connection_sends_nothing_and_says_where(your_model, monkeypatch):
    with OpenAIServer() as server:
        port_url = server.base_url
    your_model(server)
    monkeypatch.setenv("LABKIT_BASE_URL", port_url)  # stopped: nothing listens there now
    outcome, lines = run_quietly(experiments.token_counts())
    said = next(line for line in lines if "failed:" in line)
    assert "connection refused" in said and port_url in said and "LABKIT_BASE_URL" in said
    assert outcome.sent == 0 and outcome.requests[0].outcome == "not delivered"


def test_a_setting_to_fix_is_one_line_not_a_traceback(monkeypatch):
    monkeypatch.setenv("LABKIT_MODEL", "anthropic:claude-haiku-4-5")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    outcome, lines = run_quietly(experiments.token_counts())
    assert outcome.yours is None and lines == [outcome.refused] and "ANTHROPIC_API_KEY" in lines[0]


def test_missing_usage_is_shown_as_missing_never_as_zero(your_model):
    with OpenAIServer(window=64_000, behaviours=("no_usage",)) as server:
        your_model(server)
        outcome, lines = run_quietly(experiments.token_counts())
    row = outcome.table().rows[1]
    assert row["provider's input count"] == row["output tokens"] == "not reported"
    assert all("usage not reported" in line for line in lines if line.startswith("  request "))


@pytest.mark.parametrize("streaming", [False, True])
def test_the_cap_holds_on_streams_and_plain_calls(streaming):
    with OpenAIServer(window=1_000_000, behaviours=("loop",)) as server:
        meter = Meter(cap=20_000, out=None)
        run = scenario.run(meter.attach(chat(server, streaming=streaming)), turns=scenario.TURNS[:1],
                           export_scale=0.05)
    assert isinstance(run.error, BudgetExceeded) and meter.sent <= 20_000
    assert server.received <= 20_000 * (1 + TOLERANCE)
    assert [r.outcome for r in meter.requests][-1] == "not sent"


def test_the_cap_holds_in_async_calls_and_streams():
    async def go(model):
        await model.ainvoke([HumanMessage("Brightloom " * 300)])
        async for _ in model.astream([HumanMessage("Corvid " * 300)]):
            pass
        await model.ainvoke([HumanMessage("Driftwood " * 300)])

    with OpenAIServer(window=1_000_000) as server:
        meter = Meter(cap=1_250, out=None)  # each request is ~604 tokens: the third would cross it
        with pytest.raises(BudgetExceeded):
            asyncio.run(go(meter.attach(chat(server))))
    assert len(server.chat_requests) == 2 and [r.outcome for r in meter.requests] == ["ok", "ok", "not sent"]
    assert meter.sent == sum(r.tokens for r in meter.requests[:2]) <= 1_250


def test_on_the_lab_model_the_meter_counts_what_the_recorder_and_the_model_count():
    """The estimate is the meter's count on the lab run: the parent's requests as the Recorder
    measures them, summary calls and children included — and what LabModel itself counted."""
    meter, recorder = Meter(out=None), Recorder()
    model = meter.attach(LabModel(window=32_000))
    scenario.run(model, turns=scenario.TURNS[:1], export_scale=0.05, recorder=recorder)
    assert [r.tokens for r in meter.requests] == [r.seen for r in recorder.records]
    assert meter.sent == sum(c.input_tokens for c in model.calls) == meter.reported
    assert isinstance(model, LabModel) and model.profile["max_input_tokens"] == 32_000


def test_client_retries_are_switched_off_so_every_retry_is_seen():
    with OpenAIServer() as server:
        model = chat(server)
        metered = Meter(out=None).attach(model)
    assert model.root_client.max_retries == 2, "the learner's own model is left as it was"
    assert metered.root_client.max_retries == 0 and metered.root_async_client.max_retries == 0


def test_a_bad_cap_is_refused():
    for cap in (0, -1, 2.5, True, "100"):
        with pytest.raises(ValueError, match="cap"):
            Meter(cap=cap)


@pytest.mark.parametrize("behaviour", ["no_tools", "long", "slow", "unknown_tool"])
def test_a_model_that_answers_in_prose_at_length_slowly_or_off_script_breaks_nothing(behaviour, your_model):
    with OpenAIServer(window=64_000, behaviours=(behaviour,)) as server:
        your_model(server)
        outcome, lines = run_quietly(experiments.summarization())
    assert outcome.yours.error is None and not outcome.problems, outcome.problems
    assert outcome.table().rows[1]["provider's input count"] == server.received
    if behaviour == "no_tools":
        assert outcome.yours.tool_calls() == [] and any("a text reply" in line for line in lines)
    if behaviour == "long":
        assert outcome.table().rows[1]["output tokens"] > 1_000, "long answers, counted as output"


def test_a_tiny_window_is_an_overflow_said_with_what_to_do(your_model):
    with OpenAIServer(window=1_000) as server:
        your_model(server)
        outcome, lines = run_quietly(experiments.token_counts())
    said = next(line for line in lines if "refused:" in line)
    assert "context overflow" in said and "maximum context length is 1000" in said and "LABKIT_WINDOW" in said
    assert outcome.requests[0].outcome == "overflow"
    assert outcome.table().rows[1]["ended with"] == "context overflow"


def test_retries_wait_as_long_as_the_provider_asks(monkeypatch):
    """Retry-After: 0 from the server, so no wait; without it, the meter's own backoff."""
    waits = []
    with OpenAIServer(failures={1: "429", 3: "500"}) as server:
        meter = Meter(out=None, sleep=waits.append, wait=0.5)
        model = meter.attach(chat(server))
        model.invoke("hello")
        model.invoke("hello")
    assert waits == [0.0, 0.5], "429 said Retry-After: 0; the 500 said nothing: 0.5 s, the first backoff"
    assert [r.outcome for r in meter.requests] == ["retried", "ok", "retried", "ok"]


def test_anthropics_client_retries_are_switched_off_too():
    from langchain_anthropic import ChatAnthropic

    model = ChatAnthropic(model="claude-haiku-4-5", api_key="sk-test", max_retries=2)
    metered = Meter(out=None).attach(model)
    assert model.max_retries == 2 and metered.max_retries == 0 and metered._client.max_retries == 0
    assert isinstance(metered, ChatAnthropic)


def test_parallel_children_never_take_the_total_over_the_cap():
    """The fan-out's three children ask at once; the cap is checked under one lock, so the
    requests that would cross it are refused, whichever child asks."""
    with OpenAIServer(window=64_000) as server:
        meter = Meter(cap=8_000, out=None)
        run = experiments.isolation().run(meter.attach(chat(server)), ())
    assert isinstance(run.error, BudgetExceeded) and meter.sent <= 8_000
    assert server.received <= 8_000 * (1 + TOLERANCE)
    assert any(r.who.startswith("subagent") and r.sent for r in meter.requests), "children did run"


def test_a_run_stopped_at_the_budget_is_still_named_a_loop_after_save_and_load(your_model, tmp_path):
    from labkit.diagnose import diagnose

    with OpenAIServer(window=64_000, behaviours=("loop",)) as server:
        your_model(server)
        outcome, _ = run_quietly(experiments.without_deletion())
    loaded = scenario.load_run(outcome.yours.save(tmp_path / "run.json"))
    assert type(loaded.error).__name__ == "BudgetExceeded"
    assert any("a loop" in f.evidence() for f in diagnose(loaded) if f.key == "repeated_work")


def test_content_that_is_not_text_is_counted_whole_and_sent():
    """An image block: labkit's text counter refuses it, the meter counts the whole content (its
    data included: more than a provider bills, never less) and the request still goes."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    image = HumanMessage(content=[{"type": "text", "text": "what is this?"}, {
        "type": "image_url", "image_url": {"url": "data:image/png;base64," + "QUJD" * 500}}])
    meter = Meter(out=None)
    model = meter.attach(GenericFakeChatModel(messages=iter([AIMessage("a chart")])))
    assert model.invoke([image]).text == "a chart"
    assert meter.requests[0].tokens > 500 and meter.requests[0].outcome == "ok"


def test_a_structured_output_schema_is_counted_with_the_request():
    schema = {"type": "json_schema", "json_schema": {"name": "report", "schema": {
        "type": "object", "properties": {f"field_{i}": {"type": "string", "description": "a figure " * 20}
                                         for i in range(20)}}}}
    meter, question = Meter(out=None), [HumanMessage("Summarise Brightloom.")]
    assert meter.count(question, {"response_format": schema}) > meter.count(question, {}) + 500


def test_a_model_metered_twice_is_held_to_both_caps():
    with OpenAIServer() as server:
        inner = Meter(cap=100, out=None)
        outer = Meter(cap=100_000, out=None)
        model = outer.attach(inner.attach(chat(server)))
        with pytest.raises(BudgetExceeded):
            model.invoke("Brightloom " * 300)
        assert server.chat_requests == [] and inner.requests[0].outcome == "not sent"
        small = Meter(cap=100_000, out=None)
        both = outer.attach(small.attach(chat(server)))
        both.invoke("Brightloom please")
    assert len(server.chat_requests) == 1 and small.sent == outer.requests[-1].tokens > 0


def test_langchains_retry_wrappers_do_not_send_again_what_the_meter_gave_up_on():
    """BudgetExceeded is a non-retryable langchain ModelError, and a provider error the meter has
    retried is marked so: langchain's default_retry_on (its retry middleware, its summarizer)
    leaves both alone."""
    from langchain.agents.middleware._retry import default_retry_on

    assert default_retry_on(BudgetExceeded("over")) is False
    with OpenAIServer(failures={1: "500", 2: "500", 3: "500"}) as server:
        meter = Meter(out=None, sleep=lambda s: None)
        with pytest.raises(Exception) as caught:
            meter.attach(chat(server)).with_retry(retry_if_exception_type=default_retry_on,  # as langchain's
                                                  stop_after_attempt=3).invoke("hello")  # summarizer does
    assert default_retry_on(caught.value) is False
    assert len(server.chat_requests) == 3, "the meter's three attempts, and no more"


def test_a_wrapped_model_is_one_line_not_a_traceback(monkeypatch):
    monkeypatch.setenv("LABKIT_BUDGET_TOKENS", "1000000")
    with OpenAIServer() as server:
        outcome, lines = run_quietly_with(experiments.token_counts(), chat(server).with_retry())
    assert outcome.yours is None and "pass the model itself" in outcome.refused and server.chat_requests == []


def run_quietly_with(experiment, model):
    lines: list[str] = []
    return on_your_model(experiment, model=model, out=lines.append), lines


def test_one_repeat_before_the_budget_is_not_called_a_loop():
    from langchain_core.messages import AIMessage, ToolMessage

    from labkit.diagnose import diagnose

    call = {"name": "fetch_market_data", "args": {"ticker": "BRLM"}, "id": "a", "type": "tool_call"}
    messages = [HumanMessage(scenario.REQUEST)]
    for i in range(2):
        messages += [AIMessage("", tool_calls=[{**call, "id": f"c{i}"}]),
                     ToolMessage("x", tool_call_id=f"c{i}")]
    once = scenario.Run(messages=messages, files={}, error=BudgetExceeded("stopped"))
    found = [f for f in diagnose(once) if f.key == "repeated_work"]
    assert found and "a loop" not in found[0].evidence()
    messages += [AIMessage("", tool_calls=[{**call, "id": "c2"}]), ToolMessage("x", tool_call_id="c2")]
    twice = scenario.Run(messages=messages, files={}, error=BudgetExceeded("stopped"))
    assert any("a loop" in f.evidence() for f in diagnose(twice) if f.key == "repeated_work")


def test_a_long_retry_after_is_capped_and_googles_client_sends_once():
    """README: labkit waits as Retry-After asks, at most 20 s; Google's client (whose 0 means its
    default of five retries) is given max_retries=1, one attempt."""
    import httpx
    import openai
    from langchain_google_genai import ChatGoogleGenerativeAI

    response = httpx.Response(429, headers={"retry-after": "60"},
                              request=httpx.Request("POST", "http://127.0.0.1/v1/chat/completions"))
    error = openai.RateLimitError("slow down", response=response, body=None)
    meter = Meter(out=None)
    record = meter._admit("parent", 10, 1)
    assert meter._failed(record, error, None, sent_anything=False) == meter.max_wait == 20.0
    google = ChatGoogleGenerativeAI(model="gemini-2.5-flash", google_api_key="not-used")
    assert Meter(out=None).attach(google).max_retries == 1 and google.max_retries != 1


def test_a_request_that_never_reached_the_provider_gives_its_tokens_back():
    import httpx

    meter = Meter(cap=1_000, out=None)
    record = meter._admit("parent", 600, 1)
    with pytest.raises(httpx.ConnectError):
        meter._failed(record, httpx.ConnectError("[Errno 111] Connection refused"), None, False)
    assert record.outcome == "not delivered" and meter.sent == 0
    assert meter._admit("parent", 900, 1).sent, "the cap still has room for it"
