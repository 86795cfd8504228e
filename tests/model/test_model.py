"""LabModel's behaviour, one section per promise of its module docstring (issue 2, point 3).

Most tests hand-build a short history and look at the next reply; a few run the scenario
through langchain / deepagents. deepagents itself is the oracle where its behaviour depends on
the model (its summarization defaults, its summary prompt, its file tools' schemas).
"""

from __future__ import annotations

import functools
import hashlib
import json
import operator
import re

import pytest
from deepagents.middleware.filesystem import FilesystemMiddleware
from deepagents.middleware.summarization import (
    DEEPAGENTS_DEFAULT_SUMMARY_PROMPT,
    compute_summarization_defaults,
)
from langchain.agents.middleware.summarization import DEFAULT_SUMMARY_PROMPT
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage, get_buffer_string
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

from labkit import prompts, scenario
from labkit.model import InvalidHistoryError, LabModel
from labkit.model import lab_summary as summarize
from labkit.offload import OffloadMiddleware
from labkit.tokens import count_tokens, tool_schema_tokens
from tests.conftest import ai_call, assert_snapshot, called, fetched, news

DATA_TOOLS = scenario.tools()
FILE_TOOLS = {t.name: t for t in FilesystemMiddleware().tools}
FIGURE = scenario.needle().answer  # the exact value the needle question asks for


# -- building histories --------------------------------------------------------------------------


def ask(messages: list, tools=DATA_TOOLS, model: LabModel | None = None, **bind) -> AIMessage:
    return (model or LabModel(window=200_000)).bind_tools(list(tools), **bind).invoke(messages)


def drive(model: LabModel, messages: list, tools: list, limit: int = 10) -> AIMessage:
    """A minimal agent loop: call the model, run the tools it asks for, until it answers."""
    bound, by_name = model.bind_tools(tools), {t.name: t for t in tools}
    for _ in range(limit):
        reply = bound.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            return reply
        messages.extend(by_name[tc["name"]].invoke(tc) for tc in reply.tool_calls)
    raise AssertionError(f"no answer after {limit} model calls")


ARCHIVE = "/conversation_history/session_0123abcd.md"


def archive_summary(summary: str, path: str = ARCHIVE) -> HumanMessage:
    """A summary message in deepagents' words, pointing at its archive file."""
    return HumanMessage(
        "You are in the middle of a conversation that has been summarized.\n\nThe full "
        f"conversation history has been saved to {path} should you need to refer back to it for "
        f"details.\n\nA condensed summary follows:\n<summary>\n{summary}\n</summary>",
        additional_kwargs={"lc_source": "summarization"},
    )


def offload_stub(ticker: str, call_id: str) -> ToolMessage:
    """What an offloaded export looks like in context: a path and a head/tail preview."""
    lines = scenario.export_text(ticker).splitlines()
    preview = "\n".join([*lines[:5], f"... [{len(lines) - 10} lines truncated] ...", *lines[-5:]])
    return ToolMessage(
        f"Tool result too large, the result of this tool call {call_id} was saved in the "
        f"filesystem at this path: /large_tool_results/{call_id}\n\nYou can read the result from "
        f"the filesystem by using the read_file tool.\n\n{preview}",
        tool_call_id=call_id, name="fetch_market_data")


# -- overflow is real ----------------------------------------------------------------------------

HISTORY = [HumanMessage(scenario.REQUEST), *fetched("BRLM", "c1")]


def test_input_exactly_at_the_window_is_accepted_and_one_token_more_overflows():
    n = count_tokens(HISTORY) + tool_schema_tokens(DATA_TOOLS)
    assert ask(HISTORY, model=LabModel(window=n)).usage_metadata["input_tokens"] == n
    ask(HISTORY, model=LabModel(window=n + 1))
    with pytest.raises(ContextOverflowError, match=f"{n} tokens exceed .* window of {n - 1}"):
        ask(HISTORY, model=LabModel(window=n - 1))


def test_tool_schemas_count_against_the_window():
    window = count_tokens(HISTORY)  # the messages fit exactly; the schemas do not
    LabModel(window=window).invoke(HISTORY)
    with pytest.raises(ContextOverflowError):
        ask(HISTORY, model=LabModel(window=window))


@pytest.mark.parametrize("window", [0, -5, 1.5, 2.0, "128000", True, None])
def test_a_window_that_is_not_a_positive_int_is_refused_by_name(window):
    with pytest.raises(ValueError, match="window"):
        LabModel(window=window)


def test_an_unknown_parameter_is_refused_instead_of_ignored():
    with pytest.raises(ValueError, match="windows"):
        LabModel(windows=60_000)


# -- profile ------------------------------------------------------------------------------------


@pytest.mark.parametrize("window", [1, 60_000, 128_000, 1_000_000])
def test_profile_max_input_tokens_is_the_window(window):
    assert LabModel(window=window).profile["max_input_tokens"] == window


def test_profile_none_means_no_profile():
    assert LabModel(window=60_000, profile=None).profile is None


def test_deepagents_uses_fractions_with_the_profile_and_fixed_defaults_without():
    with_profile = compute_summarization_defaults(LabModel(window=60_000))
    assert with_profile["trigger"][0] == "fraction" and with_profile["keep"][0] == "fraction"
    without = compute_summarization_defaults(LabModel(window=60_000, profile=None))
    assert without["trigger"] == ("tokens", 170000)
    assert without["keep"] == ("messages", 6)


# -- bind_tools, tool_choice, streaming, usage, metadata ----------------------------------------


def test_tool_choice_any_forces_a_call_even_outside_the_scenario():
    assert ask([HumanMessage("hello")]).tool_calls == []
    reply = ask([HumanMessage("hello")], tool_choice="any")
    assert called(reply) == [("fetch_market_data", {"ticker": "<ticker>"})]  # a visible placeholder


def test_tool_choice_by_name_restricts_the_scenario_step_to_that_tool():
    request = [HumanMessage(scenario.REQUEST)]
    assert called(ask(request)) == [("fetch_market_data", {"ticker": "BRLM"})]
    assert called(ask(request, tool_choice="search_news")) == [("search_news", {"ticker": "BRLM"})]


def test_tool_choice_none_means_no_tool_call():
    reply = ask([HumanMessage(scenario.REQUEST)], tool_choice="none")
    assert reply.tool_calls == [] and reply.content


def test_bind_tools_converts_each_distinct_tool_once():
    """create_agent binds the tools again on every model call: the schemas are langchain's own,
    converted once — the same tools rebuilt for another run are not converted again."""
    first = LabModel().bind_tools(DATA_TOOLS).kwargs["tools"]
    again = LabModel().bind_tools(scenario.tools()).kwargs["tools"]
    assert first == [convert_to_openai_tool(t) for t in DATA_TOOLS], "langchain's schemas, unchanged"
    assert all(a is b for a, b in zip(first, again, strict=True)), "rebuilt tools reuse the schemas"


def test_tool_choice_naming_an_unbound_tool_is_a_clear_error():
    with pytest.raises(ValueError, match=r"'grep' names no bound tool.*fetch_market_data"):
        LabModel().bind_tools(DATA_TOOLS, tool_choice="grep")


@pytest.mark.parametrize("messages", [
    [HumanMessage("hello")],
    [HumanMessage(scenario.REQUEST), *fetched("BRLM", "c1")],
], ids=["text", "tool-call"])
def test_streaming_gives_the_same_final_message_as_invoke(messages):
    invoked = ask(messages, model=LabModel())
    chunks = list(LabModel().bind_tools(DATA_TOOLS).stream(messages))
    streamed = functools.reduce(operator.add, chunks)
    assert streamed.content == invoked.content
    assert streamed.tool_calls == invoked.tool_calls
    assert streamed.usage_metadata == invoked.usage_metadata
    assert chunks[-1].chunk_position == "last"
    assert sum(bool(c.usage_metadata) for c in chunks) == 1  # usage is counted once
    if invoked.content:
        assert len(chunks) > 10  # it really streams, word by word


def test_usage_input_tokens_is_labkit_tokens_count_of_the_same_input():
    messages = [HumanMessage(scenario.REQUEST), *fetched("BRLM", "c1"), *news("BRLM", "c2")]
    tools = [*DATA_TOOLS, FILE_TOOLS["grep"]]
    usage = ask(messages, tools=tools).usage_metadata
    assert usage["input_tokens"] == count_tokens(messages) + tool_schema_tokens(tools)
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0


def test_response_metadata_names_model_and_provider():
    meta = LabModel().invoke("hello").response_metadata
    assert (meta["model_name"], meta["model_provider"]) == ("lab-model", "labkit")
    assert meta["finish_reason"] == "stop"
    assert ask([HumanMessage(scenario.REQUEST)]).response_metadata["finish_reason"] == "tool_calls"


def test_structured_output_is_a_forced_call_with_visible_placeholders():
    class Joke(BaseModel):
        setup: str
        punchline: str
        rating: int = 3

    joke = LabModel().with_structured_output(Joke).invoke("Tell me a joke about cats.")
    assert joke == Joke(setup="<setup>", punchline="<punchline>")  # valid, visibly not understood


def test_a_per_call_model_name_renames_the_reply_but_not_what_it_says():
    model = LabModel()
    renamed = model.invoke("hello", model="lab-model-b")
    assert renamed.response_metadata["model_name"] == "lab-model-b"
    assert model._get_ls_params(model="lab-model-b")["ls_model_name"] == "lab-model-b"
    assert renamed.content == model.invoke("hello").content


def test_a_stop_sequence_cuts_the_reply():
    full = LabModel().invoke("hello").content
    cut = LabModel(stop=["scripted"]).invoke("hello").content
    assert full.startswith(cut) and "scripted" in full and "scripted" not in cut


# -- it works from evidence ---------------------------------------------------------------------

WORK = [HumanMessage(scenario.REQUEST), *fetched("BRLM", "c1"), *news("BRLM", "c2"),
        *fetched("CRVD", "c3")]


def test_visible_evidence_moves_it_to_the_next_step():
    assert called(ask(WORK)) == [("search_news", {"ticker": "CRVD"})]


def test_removing_a_result_makes_it_redo_that_step():
    without_brlm_export = [WORK[0], *WORK[3:]]  # the fetch call and its ToolMessage are gone
    assert called(ask(without_brlm_export)) == [("fetch_market_data", {"ticker": "BRLM"})]


def test_a_summary_line_quoting_the_evidence_counts_as_done():
    summary = summarize(get_buffer_string(WORK[:5]))
    assert "Market data export — Brightloom (BRLM): done" in summary
    reply = ask([archive_summary(summary), *WORK[5:]])
    assert called(reply) == [("search_news", {"ticker": "CRVD"})]


# -- it needs the goal --------------------------------------------------------------------------


def test_evidence_without_the_request_or_a_summary_intent_loses_the_goal():
    reply = ask([HumanMessage("Carry on."), *fetched("BRLM", "c1")])
    assert reply.content == prompts.GOAL_LOST and not reply.tool_calls


def test_a_summary_intent_in_place_of_the_request_keeps_the_task_going():
    summary = summarize(get_buffer_string(HISTORY))
    assert scenario.REQUEST in summary.split("## SUMMARY")[0]
    message = HumanMessage(f"Here is a summary of the conversation to date:\n\n{summary}")
    assert called(ask([message])) == [("search_news", {"ticker": "BRLM"})]


def test_the_goal_summarized_away():
    """The cut point falls after the request: the summarized slice never saw it, so the
    summary's SESSION INTENT is "None", and the model given [summary + rest] has lost the goal."""
    older, rest = WORK[1:5], WORK[5:]  # the request (WORK[0]) is dropped with the old messages
    prompt = DEEPAGENTS_DEFAULT_SUMMARY_PROMPT.format(messages=get_buffer_string(older))
    summary = LabModel().invoke([HumanMessage(prompt)]).content
    assert re.search(r"## SESSION INTENT\nNone\n", summary)
    reply = ask([archive_summary(summary), *rest])
    assert reply.content == prompts.GOAL_LOST and not reply.tool_calls


# -- it recovers facts only from context or files -----------------------------------------------

QUESTION = HumanMessage(scenario.NEEDLE_QUESTION)


def test_a_visible_fact_is_answered_exactly():
    reply = ask([*HISTORY, QUESTION])
    assert FIGURE in reply.content and not reply.tool_calls


@pytest.mark.parametrize("visible, path", [
    ([HumanMessage(scenario.REQUEST), ai_call("fetch_market_data", {"ticker": "BRLM"}, "call_1"),
      offload_stub("BRLM", "call_1")], "/large_tool_results/call_1"),
    ([archive_summary(summarize(get_buffer_string(HISTORY)))], ARCHIVE),
], ids=["offload-stub", "archive"])
def test_a_fact_gone_from_context_is_grepped_from_the_path_it_can_see(visible, path):
    history = [*visible, QUESTION]
    assert FIGURE not in get_buffer_string(history)
    reply = ask(history, tools=[*DATA_TOOLS, FILE_TOOLS["grep"], FILE_TOOLS["read_file"]])
    assert called(reply) == [("grep", {"pattern": scenario.needle().pattern, "path": path,
                                       "output_mode": "content"})]


def test_with_only_read_file_it_pages_through_the_file():
    history = [HumanMessage(scenario.REQUEST),
               ai_call("fetch_market_data", {"ticker": "BRLM"}, "call_1"),
               offload_stub("BRLM", "call_1"), QUESTION]
    tools = [*DATA_TOOLS, FILE_TOOLS["read_file"]]
    first = ask(history, tools=tools)
    assert called(first) == [("read_file", {"file_path": "/large_tool_results/call_1",
                                            "offset": 0, "limit": 200})]
    page = "\n".join(scenario.export_text("BRLM").splitlines()[:200])
    history += [first, ToolMessage(f"@@ lines 1-200 of 844 | next offset 200 @@\n{page}",
                                   tool_call_id=first.tool_calls[0]["id"], name="read_file")]
    assert called(ask(history, tools=tools))[0][1]["offset"] == 200


def test_with_no_fact_and_no_path_it_declines_to_give_a_number():
    reply = ask([QUESTION], tools=[*DATA_TOOLS, FILE_TOOLS["grep"]])
    assert reply.content == prompts.NEEDLE_NOT_FOUND.format(detail="")
    assert not reply.tool_calls and not re.search(r"\d+(\.\d+)?%", reply.content)


def test_a_path_already_searched_in_vain_is_not_searched_again():
    history = [HumanMessage(scenario.REQUEST), ai_call("fetch_market_data", {"ticker": "BRLM"}, "c1"),
               offload_stub("BRLM", "c1"), QUESTION,
               ai_call("grep", {"pattern": "x", "path": "/large_tool_results/c1"}, "c2"),
               ToolMessage("No matches found", tool_call_id="c2", name="grep")]
    reply = ask(history, tools=[*DATA_TOOLS, FILE_TOOLS["grep"]])
    assert not reply.tool_calls and FIGURE not in reply.content


def test_end_to_end_the_needle_is_recovered_only_through_a_file(deep_60k):
    model, run = deep_60k
    assert run.error is None and run.score.needle_correct
    agent = [c for c in model.calls if c.kind == "agent"]
    asked = next(i for i, c in enumerate(agent)
                 if any(m.content == scenario.NEEDLE_QUESTION for m in c.messages))
    grep = next(i for i in range(asked, len(agent))
                if agent[i].response and called(agent[i].response)
                and called(agent[i].response)[0][0] == "grep")
    answer = agent[grep + 1]
    for c in agent[asked:grep + 1]:  # up to the grep, the figure was nowhere in its context
        assert FIGURE not in get_buffer_string(c.messages)
    holders = [m for m in answer.messages if FIGURE in get_buffer_string([m])]
    assert [(m.type, m.name) for m in holders] == [("tool", "grep")]
    assert "/conversation_history/" in called(agent[grep].response)[0][1]["path"]
    assert FIGURE in answer.response.content


# -- as a summarizer ----------------------------------------------------------------------------

TRANSCRIPT = get_buffer_string([*HISTORY, *news("BRLM", "c2")])
PROMPTS = {
    "deepagents": DEEPAGENTS_DEFAULT_SUMMARY_PROMPT.format(messages=TRANSCRIPT),
    "langchain": DEFAULT_SUMMARY_PROMPT.format(messages=TRANSCRIPT),
    "labkit": prompts.SUMMARY_PROMPT.format(fidelity="", messages=TRANSCRIPT),
}


@pytest.mark.parametrize("which", PROMPTS)
def test_a_summary_prompt_gets_the_four_sections_quoting_evidence_without_figures(which):
    model = LabModel()
    summary = model.invoke([HumanMessage(PROMPTS[which])]).content
    assert re.findall(r"^## (.+)$", summary, re.M) == list(prompts.SUMMARY_SECTIONS)
    assert "Market data export — Brightloom (BRLM): done" in summary
    assert "News digest — Brightloom (BRLM): done" in summary
    assert "BRLM net_revenue_retention_q3: reported (exact figure not kept)" in summary
    assert FIGURE not in summary and FIGURE in TRANSCRIPT
    assert model.calls[-1].kind == "summary"


@pytest.mark.parametrize("model, prompt", [
    (LabModel(keep_figures=True), PROMPTS["deepagents"]),
    (LabModel(), prompts.SUMMARY_PROMPT.format(fidelity=prompts.KEEP_FIGURES, messages=TRANSCRIPT)),
], ids=["keep_figures=True", "prompt-asks-for-exact-figures"])
def test_figures_are_kept_when_asked(model, prompt):
    summary = model.invoke([HumanMessage(prompt)]).content
    assert f"kpi,BRLM,net_revenue_retention_q3,{FIGURE}" in summary


def test_a_figure_in_the_history_does_not_count_as_asking_to_keep_figures():
    transcript = TRANSCRIPT + "\nHuman: keep exact figures in mind"
    summary = LabModel().invoke([HumanMessage(
        DEEPAGENTS_DEFAULT_SUMMARY_PROMPT.format(messages=transcript))]).content
    assert FIGURE not in summary


# -- as a subagent ------------------------------------------------------------------------------


def test_as_a_subagent_it_researches_and_returns_a_short_report():
    messages = [HumanMessage(scenario.research_request("BRLM"))]
    report = drive(LabModel(), messages, DATA_TOOLS)
    assert [c for m in messages if isinstance(m, AIMessage) for c in called(m)] == [
        ("fetch_market_data", {"ticker": "BRLM"}), ("search_news", {"ticker": "BRLM"})]
    assert f"net_revenue_retention_q3={FIGURE}" in report.content
    assert count_tokens(report.content) * 50 < count_tokens(scenario.export_text("BRLM"))


def test_as_a_subagent_with_raw_output_it_returns_the_dump():
    report = drive(LabModel(raw_subagent_output=True),
                   [HumanMessage(scenario.research_request("BRLM"))], DATA_TOOLS)
    assert scenario.export_text("BRLM") in report.content
    assert scenario.news_text("BRLM") in report.content


@pytest.mark.parametrize("limit", [True, False])
def test_as_a_subagent_it_returns_what_its_system_prompt_asks_for(limit):
    """The researcher's prompt with the limit (a short report) or without it (nothing bounds the
    reply): the same task, the same tools; only the limit differs, and so does the reply."""
    prompt = scenario.researcher(limit=limit)["system_prompt"]
    assert (scenario.REPORT_LIMIT in prompt) is limit
    report = drive(LabModel(), [SystemMessage(prompt), HumanMessage(scenario.research_request("BRLM"))],
                   DATA_TOOLS)
    assert (scenario.export_text("BRLM") in report.content) is not limit
    assert (f"net_revenue_retention_q3={FIGURE}" in report.content) is limit


def test_raw_subagent_output_forces_the_dump_whatever_the_prompt_says():
    report = drive(LabModel(raw_subagent_output=True),
                   [SystemMessage(scenario.RESEARCHER_PROMPT),
                    HumanMessage(scenario.research_request("BRLM"))], DATA_TOOLS)
    assert scenario.export_text("BRLM") in report.content


# -- outside the scenarios ----------------------------------------------------------------------


@pytest.mark.parametrize("text", ["hello", "What is the capital of France?", "你好"])
def test_outside_the_scenario_it_says_what_it_is(text):
    reply = ask([HumanMessage(text)])
    assert reply.content == prompts.LAB_MODEL_INTRO and not reply.tool_calls
    assert "LABKIT_MODEL" in reply.content and "not a language model" in reply.content


def test_outside_the_scenario_a_literal_call_is_made_as_written_and_its_result_relayed():
    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    messages = [HumanMessage("Please run add(2, b=40).")]
    reply = ask(messages, tools=[add])
    assert called(reply) == [("add", {"a": 2, "b": 40})]
    result = add.invoke(reply.tool_calls[0])
    assert ask([*messages, reply, result], tools=[add]).content == "The tool returned: 42"


# -- bad input ----------------------------------------------------------------------------------


def test_an_empty_history_is_refused():
    with pytest.raises(InvalidHistoryError, match="empty message list"):
        LabModel().invoke([])


def test_a_non_text_block_is_refused_naming_its_type():
    image = HumanMessage([{"type": "text", "text": "What is this?"},
                          {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"}])
    with pytest.raises(ValueError, match=r"message 0: .*type 'image' at index 1"):
        LabModel().invoke([image])


def test_an_orphan_tool_message_is_refused_naming_its_position():
    with pytest.raises(InvalidHistoryError, match=r"orphan tool message at position 1 .*'zz'"):
        LabModel().invoke([HumanMessage("hi"), ToolMessage("42", tool_call_id="zz")])


def test_a_tool_call_without_its_result_before_a_human_message_is_refused():
    history = [HumanMessage(scenario.REQUEST), ai_call("fetch_market_data", {"ticker": "BRLM"}, "c1"),
               HumanMessage("and?")]
    where = r"position 1 .*\['c1'\].*human message at position 2"
    with pytest.raises(InvalidHistoryError, match=where):
        LabModel().invoke(history)


# -- every call is logged; it is deterministic --------------------------------------------------


def test_every_call_is_logged_with_exactly_what_it_received():
    model = LabModel(window=40_000)
    sent = [[HumanMessage("hello")], [HumanMessage(scenario.REQUEST)],
            [HumanMessage(PROMPTS["labkit"])],
            [*HISTORY, *news("BRLM", "c2"), *fetched("DRFT", "c3")]]
    replies = [model.invoke(sent[0]), ask(sent[1], model=model), model.invoke(sent[2])]
    with pytest.raises(ContextOverflowError):
        ask(sent[3], model=model)
    sent[0].append(HumanMessage("added later"))  # the caller changing its list later: log unchanged
    assert len(model.calls) == 4
    assert [c.messages for c in model.calls] == [sent[0][:1], *sent[1:]]
    assert [c.kind for c in model.calls] == ["agent", "agent", "summary", "agent"]
    assert [c.response for c in model.calls] == [*replies, None]
    assert model.calls[0].tools == []
    assert model.calls[1].tools == ["fetch_market_data", "search_news"]
    assert "exceed" in model.calls[3].error and model.calls[3].input_tokens > 40_000


def _fingerprint(model: LabModel) -> list:
    """What each call received and answered, with deepagents' random archive name masked."""
    uuid = re.compile(r"session_[0-9a-f]{32}")
    return [([uuid.sub("session_X", json.dumps(m.content)) for m in c.messages],
             [tc["id"] for tc in c.response.tool_calls] if c.response else None)
            for c in model.calls]


@pytest.mark.parametrize("harness, window", [("agent", 1_000_000), ("deep", 60_000)])
def test_two_fresh_runs_are_identical(harness, window):
    first, second = LabModel(window=window), LabModel(window=window)
    runs = [scenario.run(first, harness=harness), scenario.run(second, harness=harness)]
    assert all(r.error is None and r.score.goal_completed for r in runs)
    assert len(first.calls) > 10
    assert _fingerprint(first) == _fingerprint(second)


def _tag(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:4]


def _ids(reply: AIMessage) -> list[str]:
    return [tc["id"] for tc in reply.tool_calls]


def test_tool_call_ids_name_the_context_and_count_its_calls():
    """``call_<tag>_<n>``: the tag is the first 4 hex digits of the sha256 of the first human
    message's text; n counts the calls of that context, whatever other contexts the same model
    serves in between (children sharing one model run in parallel)."""
    model = LabModel(window=200_000)
    a, b = scenario.research_request("BRLM"), scenario.research_request("CRVD")
    first_a = ask([HumanMessage(a)], model=model)
    first_b = ask([HumanMessage(b)], model=model)
    second_a = ask([HumanMessage(a), *fetched("BRLM", _ids(first_a)[0])], model=model)
    assert _ids(first_a) + _ids(second_a) == [f"call_{_tag(a)}_001", f"call_{_tag(a)}_002"]
    assert _ids(first_b) == [f"call_{_tag(b)}_001"] and _tag(a) != _tag(b)


def test_two_models_never_share_an_id_across_contexts_and_agree_on_the_same_one():
    """Two children with their own models used to both say ``call_001``; now the id carries the
    child's task. Two fresh models on the same context still answer the same id: runs repeat."""
    tasks = [scenario.research_request(t) for t in ("BRLM", "CRVD")]
    ids = [_ids(ask([HumanMessage(t)], model=LabModel()))[0] for t in tasks]
    assert ids[0] != ids[1]
    assert _ids(ask([HumanMessage(tasks[0])], model=LabModel()))[0] == ids[0]
    assert len({_tag(t.request) for t in scenario.tasks()}) == len(scenario.tasks()), \
        "the course's tasks have distinct tags"


def test_a_fresh_model_continuing_a_history_does_not_reuse_its_ids():
    history = [HumanMessage(scenario.REQUEST)]
    for ticker in ("BRLM", "CRVD"):
        history += fetched(ticker, _ids(ask(history))[0])  # a new model for every call
    assert [m.tool_calls[0]["id"] for m in history[1::2]] == [
        f"call_{_tag(scenario.REQUEST)}_00{n}" for n in (1, 2)]
    assert _ids(ask(history)) == [f"call_{_tag(scenario.REQUEST)}_003"]


def test_a_summary_message_does_not_set_the_tag():
    """deepagents' summary names an archive with a random uuid: a tag taken from it would make
    every run's ids different. Summaries (``lc_source``) are skipped; the user's request counts."""
    summary = HumanMessage("Summary; the history is in /conversation_history/session_0f3a9c.md",
                           additional_kwargs={"lc_source": "summarization"})
    reply = ask([summary, HumanMessage(scenario.REQUEST)])
    assert _ids(reply) == [f"call_{_tag(scenario.REQUEST)}_001"]


# -- golden snapshots of the text learners read -------------------------------------------------

SUMMARY_INPUT = "\n".join([
    f"Human: {scenario.REQUEST}",
    'AI: fetch_market_data({"ticker": "BRLM"})',
    "Tool: # Market data export — Brightloom (BRLM)\nkpi,BRLM,net_revenue_retention_q3,117.4%\n"
    "kpi,BRLM,gross_margin_q3,27.2%",
    'AI: fetch_market_data({"ticker": "CRVD"})',
    "Tool: Tool result too large, the result of this tool call call_2 was saved in the filesystem "
    "at this path: /large_tool_results/call_2",
])

SNAPSHOT_TEXTS = {
    "lab_model_intro.txt": lambda: prompts.LAB_MODEL_INTRO,
    "goal_lost.txt": lambda: prompts.GOAL_LOST,
    "summary_prompt.txt": lambda: prompts.SUMMARY_PROMPT,
    "summarize_fixed_input.txt": lambda: summarize(SUMMARY_INPUT),
}


@pytest.mark.parametrize("name", SNAPSHOT_TEXTS)
def test_golden_snapshot(name):
    """A change to text learners read must be a visible diff: rewrite the snapshot on purpose
    with ``LABKIT_UPDATE_SNAPSHOTS=1`` and commit it with the change."""
    assert_snapshot(name, SNAPSHOT_TEXTS[name]())


def test_a_new_lab_model_on_an_existing_thread_loses_no_message():
    """Message ids come from LangChain's run ids, not a per-instance counter: two LabModel
    instances answering on one checkpointed thread must not overwrite each other's replies."""
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    saver, config = InMemorySaver(), {"configurable": {"thread_id": "t"}}
    for i in range(2):
        agent = create_agent(LabModel(), tools=[], checkpointer=saver)
        agent.invoke({"messages": [HumanMessage(f"hello {i}")]}, config)
    stored = agent.get_state(config).values["messages"]
    assert [m.type for m in stored] == ["human", "ai", "human", "ai"]


def test_a_path_read_from_a_tool_calls_json_ends_where_an_escape_begins():
    """A tool call's arguments are in the view as JSON: "….md\\n\\nRead" must give the path alone,
    or the model greps a path that is not there, and the next call's JSON escapes it again."""
    from labkit.model._context import PATHS  # the rule itself: what the lab model calls a path

    text = json.dumps({"path": "/conversation_history/message-1.md\n\nRead it"})
    assert PATHS.findall(text) == ["/conversation_history/message-1.md"]


def test_a_pasted_request_hidden_from_the_preview_does_not_loop_the_needle_search():
    """head_lines=0 keeps the pasted request out of its stub; the three turns still end, and every
    grep names a file that exists (a path once grew by an escape per call until the run overflowed)."""
    model = LabModel(window=128_000)
    run = scenario.run(model, middleware=[OffloadMiddleware(head_lines=0)],
                       turns=(scenario.with_transcript(), *scenario.TURNS[1:]))
    paths = [c["args"]["path"] for m in run.messages for c in getattr(m, "tool_calls", None) or []
             if c["name"] == "grep" and "path" in c["args"]]
    assert run.error is None, run.error
    assert paths and all(p in run.files for p in paths), paths
