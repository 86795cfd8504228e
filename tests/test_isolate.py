"""labkit.isolate: the fresh child context, shared files, one capped reply, refusals that list
what is allowed, separate and thread-safe accounting, parallel children, raw dumps vs reports,
the lab model as parent and subagent — and deepagents' ``SubAgentMiddleware`` as the oracle on
the same fan-out, where the behaviour is meant to match.

Worked example (``test_worked_example_parent_peak_is_a_fraction``): without isolation every
export stays in the one context, so the last call of the report turn carries all five
(about 149k tokens of exports) and the needle turn's call peaks above 150k. With isolation the
parent only ever holds five short reports (about 130 tokens each): its peak stays under 5k.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time

import pytest
from deepagents.backends.utils import create_file_data, file_data_to_string
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from labkit import LabModel, offload, plots, scenario
from labkit._isolate_files import Claim, fresh_path, settle
from labkit.isolate import (
    TASK_TOOL,
    IsolateMiddleware,
    SubagentSpec,
    calls_by_context,
    cap_output,
    check_call,
    child_state,
    cost_rows,
    file_updates,
    final_text,
    general_purpose,
    task_description,
)
from labkit.offload import OffloadMiddleware
from labkit.prompts import GENERAL_PURPOSE_DESCRIPTION
from labkit.tokens import count_tokens
from tests.conftest import Scripted

TICKERS = [c["ticker"] for c in scenario.companies()]
FIGURE = scenario.needle().answer


def _task(args: dict, call_id: str = "t1") -> AIMessage:
    return AIMessage("", tool_calls=[{"name": TASK_TOOL, "args": args, "id": call_id,
                                      "type": "tool_call"}])


def _parent(replies: list[AIMessage], iso: IsolateMiddleware):
    """An agent whose model is ``Scripted``; files tools included, as in scenario.run."""
    from deepagents.middleware.filesystem import FilesystemMiddleware

    parent = Scripted(messages=iter(replies + [AIMessage("done")]))
    agent = create_agent(parent, tools=[], middleware=[FilesystemMiddleware(), iso],
                         checkpointer=InMemorySaver())
    return agent, parent


def _invoke(agent, text="go", files=None, mode="invoke"):
    state = {"messages": [HumanMessage(text)]}
    if files:
        state["files"] = files
    config = {"configurable": {"thread_id": "t"}}
    if mode == "ainvoke":
        return asyncio.run(agent.ainvoke(state, config=config))
    return agent.invoke(state, config=config)


def _fan(descriptions: list[str], kinds: list[str] | None = None) -> AIMessage:
    """One AI message with a task call per description: ids t0, t1, ... (one parallel block)."""
    kinds = kinds or ["general-purpose"] * len(descriptions)
    return AIMessage("", tool_calls=[
        {"name": TASK_TOOL, "args": {"description": d, "subagent_type": k}, "id": f"t{i}",
         "type": "tool_call"} for i, (d, k) in enumerate(zip(descriptions, kinds))])


@tool
def lookup(name: str) -> str:
    """Look a name up: sixty rows about it."""
    return "\n".join(f"{name} row {i}: value {i * 7}" for i in range(60))


def _fanout(window=200_000, raw=False, notes=False, cap=None, harness="agent", **iso_kwargs):
    model = LabModel(window=window, delegate_research=True, raw_subagent_output=raw)
    if harness == "deep":
        run = scenario.run(model, harness="deep", subagents=[scenario.researcher(notes=notes)],
                           turns=scenario.FANOUT_TURNS)
        return run, model, None
    iso = IsolateMiddleware(model, [SubagentSpec(**scenario.researcher(notes=notes), output_cap=cap)],
                            **iso_kwargs)
    return scenario.run(model, middleware=[iso], turns=scenario.FANOUT_TURNS), model, iso


@pytest.fixture(scope="module")
def report():
    return _fanout()


@pytest.fixture(scope="module")
def deep_report():
    return _fanout(harness="deep")


@pytest.fixture(scope="module")
def naive():
    return scenario.run(LabModel(window=200_000))


# -- the spec --------------------------------------------------------------------------------------


def test_the_spec_takes_the_scenario_researcher_and_freezes_its_tools():
    spec = SubagentSpec(**scenario.researcher(), output_cap=100)
    assert spec.name == "researcher" and isinstance(spec.tools, tuple) and len(spec.tools) == 2
    assert general_purpose().name == "general-purpose"


@pytest.mark.parametrize("bad, words", [
    ({"name": ""}, "one word"),
    ({"name": "two words"}, "one word"),
    ({"name": 3}, "name must be text"),
    ({"description": "  "}, "needs a description"),
    ({"system_prompt": None}, "system_prompt must be text"),
    ({"tools": "fetch_market_data"}, "tools must be a list"),
    ({"output_cap": 0}, "output_cap must be a positive"),
    ({"output_cap": True}, "output_cap must be a positive"),
    ({"output_cap": 2.5}, "output_cap must be a positive"),
    ({"model": "openai:gpt-4.1-mini"}, "model must be a chat model"),
])
def test_a_bad_spec_is_refused_with_the_field_named(bad, words):
    fields = {"name": "r", "description": "d", "system_prompt": "p", **bad}
    with pytest.raises((TypeError, ValueError), match=words):
        SubagentSpec(**fields)


def test_the_middleware_refuses_duplicate_names_and_non_specs():
    spec = general_purpose()
    with pytest.raises(ValueError, match="unique"):
        IsolateMiddleware(LabModel(), [spec, spec])
    with pytest.raises(TypeError, match="SubagentSpec"):
        IsolateMiddleware(LabModel(), [scenario.researcher()])
    with pytest.raises(TypeError, match="SubagentSpec"):
        IsolateMiddleware(LabModel(), [])
    with pytest.raises(ValueError, match="unknown price"):
        IsolateMiddleware(LabModel(), [spec], price="free")


def test_the_tool_description_lists_each_subagent_as_deepagents_does():
    specs = [SubagentSpec(**scenario.researcher()), general_purpose()]
    text = task_description(specs)
    assert f"- researcher: {scenario.RESEARCHER_DESCRIPTION}" in text
    assert "- general-purpose: " in text
    tool_ = IsolateMiddleware(LabModel(), specs).tools[0]
    assert tool_.name == "task" and tool_.description == text
    assert set(tool_.tool_call_schema.model_json_schema()["properties"]) == {"description", "subagent_type"}


# -- pure helpers ----------------------------------------------------------------------------------


SPECS = [SubagentSpec(**scenario.researcher()), general_purpose()]


@pytest.mark.parametrize("args, words", [
    ({}, ["Missing description.", "Missing subagent_type."]),
    ({"description": "x"}, ["Missing subagent_type."]),
    ({"description": 3, "subagent_type": "researcher"}, ["description must be text, not int"]),
    ({"description": " ", "subagent_type": "researcher"}, ["description is empty"]),
    ({"description": "x", "subagent_type": "researcher", "prompt": "y"}, ["Unexpected argument 'prompt'"]),
    ({"description": "x", "subagent_type": "nope"}, ["no subagent type 'nope'"]),
    ("research BRLM", ["Got str instead of named arguments"]),
])
def test_check_call_answers_with_what_is_allowed(args, words):
    answer = check_call(args, SPECS)
    assert answer.startswith("Error:") and "`researcher`, `general-purpose`" in answer
    for w in words:
        assert w in answer


def test_check_call_accepts_a_well_formed_call():
    assert check_call({"description": "x", "subagent_type": "general-purpose"}, SPECS) is None


def test_child_state_is_the_description_and_a_copy_of_the_files():
    files = {"/a.md": create_file_data("a")}
    state = child_state("do it", files)
    assert [type(m) for m in state["messages"]] == [HumanMessage]
    assert state["messages"][0].content == "do it" and state["files"] == files
    assert state["files"] is not files


def test_final_text_is_the_last_ai_message_with_text():
    messages = [HumanMessage("q"), AIMessage("first"), AIMessage("", tool_calls=[
        {"name": "x", "args": {}, "id": "1", "type": "tool_call"}]), ToolMessage("r", tool_call_id="1"),
        AIMessage("final  \n"), AIMessage("")]
    assert final_text(messages) == "final"
    assert "without a text reply" in final_text([HumanMessage("q")])


def test_cap_output_cuts_at_exactly_the_cap_and_says_so():
    text = scenario.news_text("BRLM")
    total = count_tokens(text)
    cut, before = cap_output(text, 50, "researcher")
    assert before == total and cut.startswith(text[:40])
    kept = cut[: cut.index("\n\n[… cut by the task tool")]
    assert abs(count_tokens(kept) - 50) <= 1 and len(kept) < len(text)
    assert f"output cap of 50 tokens and its reply had {total:,}" in cut
    assert cap_output(text, None) == (text, total) and cap_output(text, total) == (text, total)


def test_file_updates_are_new_changed_and_deleted_files_only():
    a, b = create_file_data("a"), create_file_data("b")
    again = {**create_file_data("a"), "modified_at": "2099-01-01T00:00:00+00:00"}
    before = {"/keep.md": a, "/edit.md": a, "/gone.md": a, "/same.md": a}
    after = {"/keep.md": a, "/edit.md": b, "/new.md": b, "/same.md": again}
    assert file_updates(before, after) == {"/edit.md": b, "/new.md": b, "/gone.md": None}, \
        "a rewrite with the same text is no change (it would otherwise overwrite a sibling's)"


def test_settle_keeps_the_first_version_and_saves_the_later_one_beside_it():
    """The rules one block's claims follow, each on the smallest case."""
    a, b = create_file_data("a"), create_file_data("b")
    claims: dict = {}
    assert settle(claims, {"/x.md": a}, "c1", "alpha", []) == ({"/x.md": a}, [])
    update, [conflict] = settle(claims, {"/x.md": b}, "c2", "beta", ["/x.md", "/x.md.c2"])
    assert conflict.first == claims["/x.md"] == Claim("c1", "alpha", conflict.first.digest)
    assert conflict.saved == "/x.md.c2.2" and update == {"/x.md.c2.2": b}, \
        "an existing path is never overwritten"
    same = create_file_data("a")
    assert settle(claims, {"/x.md": same}, "c3", "beta", []) == ({"/x.md": same}, []), \
        "the same content twice is no conflict"
    update, [deleted] = settle(claims, {"/x.md": None}, "c4", "beta", [])
    assert update == {} and deleted.saved is None, "a deletion is a change too: not applied"
    update, conflicts = settle(claims, {"/x.md": b}, "c1", "alpha", [])
    assert conflicts == [] and update == {"/x.md": b} and claims["/x.md"].tool_call_id == "c1", \
        "a resumed run (same tool call id) replaces its own claim"
    assert claims["/x.md.c2.2"].tool_call_id == "c2", "a saved version is claimed in its turn"
    assert fresh_path("/r/a.md", "toolu_01/../x", set()) == "/r/a.md.toolu_01_x"


def test_the_middleware_keeps_claims_per_parallel_block():
    """A block is one parent AI message; the same tool call id again (a resumed run) is no
    conflict, and another message is another block."""
    iso = IsolateMiddleware(LabModel(), [general_purpose()])
    a, b = create_file_data("a"), create_file_data("b")

    def state(n):
        return {"messages": [HumanMessage("go"), _fan(["x", "y"]).model_copy(update={"id": f"ai{n}"})],
                "files": {}}

    assert iso._settle(state(0), "t0", "general-purpose", {"/x.md": a}) == ({"/x.md": a}, [])
    assert iso._settle(state(0), "t0", "general-purpose", {"/x.md": b}) == ({"/x.md": b}, [])
    assert [c.first.tool_call_id for c in iso._settle(state(0), "t1", "general-purpose",
                                                       {"/x.md": a})[1]] == ["t0"]
    assert iso._settle(state(1), "t1", "general-purpose", {"/x.md": a}) == ({"/x.md": a}, [])


def test_a_block_is_forgotten_once_all_its_calls_have_finished():
    """However long the run, the middleware holds claims only for blocks still running — not a
    fixed number of recent ones, which a busy server could push out while a child still runs."""
    iso = IsolateMiddleware(LabModel(), [general_purpose()])
    agent, _ = _parent([_fan(["Please run write_file('/a.md', 'one')",
                              "Please run write_file('/b.md', 'two')"]),
                        _fan(["Please run write_file('/a.md', 'three')"])], iso)
    state = _invoke(agent)
    assert [m.status for m in state["messages"] if isinstance(m, ToolMessage)] == ["success"] * 3
    assert iso._blocks == {} and iso._pending == {}


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_the_parents_own_write_in_a_block_with_a_child_loses_nothing(mode):
    """The parent writes /n.md and, in the same message, starts a child that writes it too.
    deepagents' state backend applies the parent's write by itself, so the parent's claim comes
    first whatever the timing: the child's version is kept beside it, its reply an error."""
    write = {"name": "write_file", "args": {"file_path": "/n.md", "content": "PARENT NOTES"}, "id": "w0",
             "type": "tool_call"}
    fan = _fan(["Please run write_file('/n.md', 'CHILD NOTES')"])
    iso = IsolateMiddleware(LabModel(), [general_purpose()])
    agent, _ = _parent([fan.model_copy(update={"tool_calls": [write, *fan.tool_calls]})], iso)
    state = _invoke(agent, mode=mode)
    files = {p: file_data_to_string(d) for p, d in state["files"].items()}
    assert sorted(files.values()) == ["CHILD NOTES", "PARENT NOTES"] and "/n.md" in files
    replies = {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}
    [later] = [m for m in replies.values() if m.status == "error"]
    assert later.tool_call_id == "t0" and files["/n.md"] == "PARENT NOTES"
    assert later.content.startswith("Error: file conflict on /n.md.")
    assert "The parent's own write_file call (w0)" in later.content
    assert "The 'general-purpose' subagent (task call t0)" in later.content
    saved = re.search(r"saved at (\S+)", later.content).group(1)
    assert files[saved] != files["/n.md"]


# -- one task call through a real agent --------------------------------------------------------------


def test_the_child_starts_from_the_description_alone():
    child = LabModel()
    iso = IsolateMiddleware(LabModel(), [SubagentSpec(**scenario.researcher(), model=child)])
    agent, parent = _parent([_task({"description": scenario.research_request("BRLM"),
                                    "subagent_type": "researcher"})], iso)
    _invoke(agent, "A long parent conversation the child must never see.")
    first = child.calls[0].messages
    assert [type(m) for m in first] == [SystemMessage, HumanMessage]
    assert first[0].text.startswith(scenario.RESEARCHER_PROMPT)
    assert first[1].content == scenario.research_request("BRLM")
    assert not any("never see" in m.text for c in child.calls for m in c.messages)
    assert [c.kind for c in child.calls] == ["agent"] * 3
    assert {"fetch_market_data", "search_news", "write_file"} <= set(child.calls[0].tools)


def test_the_parent_gets_one_message_the_childs_last_text():
    child = LabModel()
    iso = IsolateMiddleware(LabModel(), [SubagentSpec(**scenario.researcher(), model=child)])
    agent, parent = _parent([_task({"description": scenario.research_request("BRLM"),
                                    "subagent_type": "researcher"})], iso)
    state = _invoke(agent)
    assert [type(m).__name__ for m in state["messages"]] == [
        "HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    reply = state["messages"][2]
    assert reply.name == "task" and reply.tool_call_id == "t1" and reply.status == "success"
    assert reply.content == child.calls[-1].response.content
    assert f"net_revenue_retention_q3={FIGURE}" in reply.content
    assert "daily rows" not in reply.content, "the child's tool results never reach the parent"
    assert parent.seen[-1][-1].content == reply.content
    assert iso.children[0].reply == reply.content


def test_files_go_down_to_the_child_and_its_writes_come_back():
    seed = {"/notes/seed.txt": create_file_data("the seed says 42")}
    iso = IsolateMiddleware(LabModel(), [general_purpose()])
    agent, _ = _parent([
        _task({"description": 'Please run read_file("/notes/seed.txt")',
               "subagent_type": "general-purpose"}, "t1"),
        _task({"description": "Please run write_file('/out.md', 'written by the child')",
               "subagent_type": "general-purpose"}, "t2"),
    ], iso)
    state = _invoke(agent, files=seed)
    replies = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert "the seed says 42" in replies[0].content, "the child read the parent's file"
    assert file_data_to_string(state["files"]["/out.md"]) == "written by the child"
    assert set(state["files"]) == {"/notes/seed.txt", "/out.md"}
    assert [c.files for c in iso.children] == [[], ["/out.md"]]


def test_an_output_cap_cuts_the_reply_the_parent_gets():
    iso = IsolateMiddleware(LabModel(), [SubagentSpec(**scenario.researcher(), output_cap=40)])
    agent, _ = _parent([_task({"description": scenario.research_request("BRLM"),
                               "subagent_type": "researcher"})], iso)
    reply = _invoke(agent)["messages"][2].content
    child = iso.children[0]
    assert child.capped and child.reply_tokens > 40 and "output cap of 40 tokens" in reply
    assert reply.startswith("Brightloom (BRLM) — research notes") and FIGURE not in reply


@pytest.mark.parametrize("args", [
    {"subagent_type": "researcher"},
    {"description": "x", "subagent_type": "researcher", "prompt": "do it"},
    {"description": ["x"], "subagent_type": "researcher"},
    {"description": "x", "subagent_type": "analyst"},
])
def test_a_bad_call_is_answered_not_raised_and_runs_no_child(args):
    iso = IsolateMiddleware(LabModel(), SPECS)
    agent, parent = _parent([_task(args)], iso)
    state = _invoke(agent)
    reply = state["messages"][2]
    assert isinstance(reply, ToolMessage) and reply.status == "error"
    assert "`researcher`, `general-purpose`" in reply.content
    assert iso.children == [] and state["messages"][-1].content == "done"


def test_a_failing_child_is_reported_to_the_parent_whose_run_goes_on():
    tiny = LabModel(window=5_000)  # the export alone overflows it
    iso = IsolateMiddleware(LabModel(), [SubagentSpec(**scenario.researcher(), model=tiny)])
    agent, _ = _parent([_task({"description": scenario.research_request("BRLM"),
                               "subagent_type": "researcher"})], iso)
    state = _invoke(agent)
    reply = state["messages"][2]
    assert reply.status == "error" and "ContextOverflowError" in reply.content
    assert iso.children[0].error.startswith("ContextOverflowError")
    assert iso.children[0].records[-1].error, "the refused call is in the child's own record"
    assert state["messages"][-1].content == "done"


# -- accounting and parallel children -----------------------------------------------------------------


def test_accounting_keeps_parent_and_children_apart(report):
    run, model, iso = report
    groups = calls_by_context(model.calls)
    parent_calls = groups.pop(scenario.FANOUT)
    assert [c.input_tokens for c in parent_calls] == [r.seen for r in run.records]
    assert len(iso.children) == 5 and len(groups) == 5
    for child in iso.children:
        calls = groups[child.description]
        assert [c.input_tokens for c in calls] == [r.seen for r in child.records]
        assert child.total == sum(r.seen for r in child.records) and child.peak == max(
            r.seen for r in child.records)
        assert child.fixed == sum(r.by_kind["system"] + r.by_kind["tools"] for r in child.records)
    total = sum(c.input_tokens for c in model.calls)
    rows = cost_rows(run, iso.children)
    assert sum(r["input tokens"] for r in rows) == total
    assert [r["context"] for r in rows] == ["parent"] + ["child %d (researcher)" % i for i in range(1, 6)]


def test_children_are_listed_in_the_order_the_parent_called_them(report):
    _, _, iso = report
    assert [c.description for c in iso.children] == [scenario.research_request(t) for t in TICKERS]
    assert [c.order[1] for c in iso.children] == [0, 1, 2, 3, 4]


def test_each_child_pays_its_own_system_prompt_and_tool_schemas(report):
    run, _, iso = report
    per_call = {r.by_kind["system"] + r.by_kind["tools"] for c in iso.children for r in c.records}
    assert len(per_call) == 1, "every child call pays the same fixed cost"
    fixed = per_call.pop()
    assert fixed > 1_000, "deepagents' file tools and their prompt are not free"
    assert sum(c.fixed for c in iso.children) == fixed * sum(len(c.records) for c in iso.children)
    lean = _fanout(file_tools=False)[2]
    assert 0 < lean.children[0].records[0].by_kind["tools"] < iso.children[0].records[0].by_kind["tools"]


def test_children_of_one_ai_message_run_in_parallel():
    lock, live, most = threading.Lock(), [0], [0]

    @tool
    def slow_lookup(ticker: str) -> str:
        """Look something up slowly."""
        with lock:
            live[0] += 1
            most[0] = max(most[0], live[0])
        time.sleep(0.3)
        with lock:
            live[0] -= 1
        return f"looked up {ticker}"

    iso = IsolateMiddleware(LabModel(), [general_purpose([slow_lookup])])
    calls = [{"name": TASK_TOOL, "args": {"description": f"Please run slow_lookup('{t}')",
                                          "subagent_type": "general-purpose"}, "id": f"t{i}",
              "type": "tool_call"} for i, t in enumerate(TICKERS[:4])]
    agent, _ = _parent([AIMessage("", tool_calls=calls)], iso)
    state = _invoke(agent)
    assert most[0] > 1, "the four children should overlap in time"
    replies = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in replies] == ["t0", "t1", "t2", "t3"]
    assert [f"looked up {t}" in m.content for m, t in zip(replies, TICKERS)] == [True] * 4
    assert [c.tool_call_id for c in iso.children] == ["t0", "t1", "t2", "t3"]
    assert all(len(c.records) == 2 for c in iso.children), "each child's recorder holds its own calls"


def test_the_task_tool_works_under_ainvoke():
    model = LabModel(window=200_000, delegate_research=True)
    iso = IsolateMiddleware(model, [SubagentSpec(**scenario.researcher())])
    from deepagents.middleware.filesystem import FilesystemMiddleware

    agent = create_agent(model, tools=scenario.tools(), middleware=[FilesystemMiddleware(), iso])
    state = asyncio.run(agent.ainvoke({"messages": [HumanMessage(scenario.FANOUT)]}))
    assert len(iso.children) == 5 and all(c.records and c.error is None for c in iso.children)
    assert "/reports/weekly.md" in state["files"]


# -- parallel children lose no file ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_parallel_children_writing_one_file_lose_no_version(mode):
    """Four children of one AI message each write /shared.md. deepagents' files reducer alone
    would keep one version and tell all four "Updated file". Here the first to finish keeps the
    path; each of the other three gets an error naming both children, and its version is at the
    fresh path the error gives."""
    versions = {f"t{i}": f"version written by t{i}" for i in range(4)}
    iso = IsolateMiddleware(LabModel(), [general_purpose()])
    agent, _ = _parent([_fan([f"Please run write_file('/shared.md', '{v}')"
                              for v in versions.values()])], iso)
    state = _invoke(agent, mode=mode)
    replies = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    [kept] = [m.tool_call_id for m in replies if m.status == "success"]
    errors = [m for m in replies if m.status == "error"]
    assert len(errors) == 3
    assert file_data_to_string(state["files"]["/shared.md"]) == versions[kept]
    saved = {}
    for m in errors:
        assert m.content.startswith("Error: file conflict on /shared.md.")
        assert f"'general-purpose' subagent (task call {kept})" in m.content, "names who kept it"
        assert f"'general-purpose' subagent (task call {m.tool_call_id})" in m.content
        assert m.content.endswith("The tool returned: Updated file /shared.md"), \
            "the child's own reply is still there"
        path = saved[m.tool_call_id] = re.search(r"saved at (\S+)", m.content).group(1)
        assert file_data_to_string(state["files"][path]) == versions[m.tool_call_id]
    assert set(state["files"]) == {"/shared.md", *saved.values()}, "only fresh paths were added"
    assert set(saved.values()) == {f"/shared.md.{t}" for t in saved}
    assert {c.tool_call_id: c.conflicts for c in iso.children} == {
        kept: {}, **{t: {"/shared.md": p} for t, p in saved.items()}}


def test_children_writing_the_same_text_do_not_conflict():
    iso = IsolateMiddleware(LabModel(), [general_purpose()])
    agent, _ = _parent([_fan(["Please run write_file('/same.md', 'agreed')",
                              "Please write it: write_file('/same.md', 'agreed')"])], iso)
    state = _invoke(agent)
    assert [m.status for m in state["messages"] if isinstance(m, ToolMessage)] == ["success"] * 2
    assert set(state["files"]) == {"/same.md"}
    assert file_data_to_string(state["files"]["/same.md"]) == "agreed"


def test_children_with_their_own_models_offload_to_distinct_files():
    """Each child has its own LabModel, so each numbers its own tool calls. The ids carry a tag
    of the child's task, so the two offload files differ and each holds its own child's rows
    (with ``call_001`` in both, one child's data would have been lost)."""
    specs = [SubagentSpec(name=n, description=f"Looks up {n}.", system_prompt="Look it up.",
                          tools=[lookup], model=LabModel()) for n in ("alpha", "beta")]
    iso = IsolateMiddleware(LabModel(), specs, child_middleware=[OffloadMiddleware(tool_limit=100)])
    agent, _ = _parent([_fan(["Please run lookup('alpha')", "Please run lookup('beta')"],
                             ["alpha", "beta"])], iso)
    state = _invoke(agent)
    replies = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in replies] == ["success", "success"]
    paths = [re.search(r"saved to a file: (\S+)", m.content).group(1) for m in replies]
    assert paths[0] != paths[1] and all(p.startswith(offload.RESULTS_DIR) for p in paths)
    for name, path in zip(("alpha", "beta"), paths):
        assert offload.unwrap(file_data_to_string(state["files"][path])) == lookup.invoke(name)


def test_an_offloading_child_without_file_tools_still_sends_its_files_back():
    """``file_tools=False`` leaves out the file tools, not the files: an offloader in the child
    writes to the child's files, and the file its stub names must reach the parent."""
    iso = IsolateMiddleware(LabModel(), [general_purpose([lookup])], file_tools=False,
                            child_middleware=[OffloadMiddleware(tool_limit=100)])
    agent, _ = _parent([_task({"description": "Please run lookup('gamma')",
                               "subagent_type": "general-purpose"})], iso)
    state = _invoke(agent)
    reply = state["messages"][2]
    path = re.search(r"saved to a file: (\S+)", reply.content).group(1)
    assert reply.status == "success" and iso.children[0].files == [path]
    assert offload.unwrap(file_data_to_string(state["files"][path])) == lookup.invoke("gamma")


# -- the lab model as parent and as subagent ------------------------------------------------------------


def test_the_lab_parent_fans_out_all_five_in_one_message(report):
    run, _, _ = report
    first = run.messages[1]
    assert [tc["name"] for tc in first.tool_calls] == ["task"] * 5
    assert [tc["args"] for tc in first.tool_calls] == [
        {"description": scenario.research_request(t), "subagent_type": "researcher"} for t in TICKERS]


def test_the_lab_parent_picks_general_purpose_when_no_researcher_is_listed():
    model = LabModel(delegate_research=True)
    iso = IsolateMiddleware(model, [general_purpose(scenario.tools())])
    run = scenario.run(model, middleware=[iso], turns=scenario.FANOUT_TURNS[:1])
    assert {tc["args"]["subagent_type"] for tc in run.messages[1].tool_calls} == {"general-purpose"}


@pytest.mark.parametrize("description, calls", [
    (scenario.RESEARCHER_DESCRIPTION, 5),
    ("Helps the main agent with tasks.", 0),  # names no job: the parent does the research itself
])
def test_the_description_decides_whether_the_lab_parent_delegates(description, calls):
    model = LabModel(window=200_000, delegate_research=True)  # room for the parent to do it all
    iso = IsolateMiddleware(model, [SubagentSpec(**{**scenario.researcher(), "description": description})])
    run = scenario.run(model, middleware=[iso], turns=scenario.FANOUT_TURNS[:1])
    assert len(run.tool_calls("task")) == calls
    assert len(iso.children) == calls
    assert scenario.REPORT_PATH in run.files, "delegated or not, the report is written"


def test_the_lab_parent_prefers_the_description_that_names_the_job():
    from labkit.model.behaviour import delegate_to
    listing = (f"- general-purpose: {GENERAL_PURPOSE_DESCRIPTION}\n"
               f"- researcher: {scenario.RESEARCHER_DESCRIPTION}")
    assert delegate_to(listing) == "researcher"
    assert delegate_to(f"- general-purpose: {GENERAL_PURPOSE_DESCRIPTION}") == "general-purpose"
    assert delegate_to("- helper: Helps the main agent with tasks.") is None


def test_delegation_is_off_by_default_and_needs_a_task_tool():
    model = LabModel()
    iso = IsolateMiddleware(model, [SubagentSpec(**scenario.researcher())])
    run = scenario.run(model, middleware=[iso], turns=scenario.FANOUT_TURNS[:1])
    assert run.messages[1].tool_calls[0]["name"] == "fetch_market_data" and iso.children == []
    alone = scenario.run(LabModel(delegate_research=True), turns=scenario.FANOUT_TURNS[:1])
    assert alone.messages[1].tool_calls[0]["name"] == "fetch_market_data"


def test_worked_example_parent_peak_is_a_fraction(report, naive):
    run, _, iso = report
    peak, naive_peak = max(r.seen for r in run.records), max(r.seen for r in naive.records)
    assert naive_peak > 150_000 and peak < 5_000 and peak * 20 < naive_peak
    assert run.score.goal_completed and run.score.needle_correct and run.score.steps_repeated == 0
    assert run.files[scenario.REPORT_PATH] == naive.files[scenario.REPORT_PATH], \
        "the parent writes the same report from five short replies"
    assert all(c.peak < naive_peak for c in iso.children)
    isolated_total = sum(r["input tokens"] for r in cost_rows(run, iso.children))
    assert isolated_total < sum(r.seen for r in naive.records)


def test_raw_dumps_explode_the_parent_again():
    run, _, iso = _fanout(window=128_000, raw=True)
    assert run.error is not None and "exceed the lab model's context window" in str(run.error)
    assert [c.reply_tokens > 10_000 for c in iso.children] == [True] * 5
    assert max(r.seen for r in run.records) > 150_000
    assert scenario.export_text("BRLM") in run.messages[2].content


def test_notes_go_to_files_and_the_reply_names_the_path():
    run, _, iso = _fanout(window=128_000, raw=True, notes=True)
    assert run.score.goal_completed and run.score.needle_correct
    paths = [scenario.notes_path(t) for t in TICKERS]
    assert [c.files for c in iso.children] == [[p] for p in paths]
    assert all(scenario.export_text(t) in run.files[p] for t, p in zip(TICKERS, paths))
    replies = [m.content for m in run.messages if isinstance(m, ToolMessage) and m.name == "task"]
    assert all(p in r and count_tokens(r) < 100 for p, r in zip(paths, replies))
    grep = [tc for m in run.messages if isinstance(m, AIMessage)
            for tc in m.tool_calls if tc["name"] == "grep"]
    assert grep and grep[0]["args"]["path"] == scenario.notes_path("BRLM"), (
        "the figure came back from the file")
    assert max(r.seen for r in run.records) < 5_000


def test_researchers_told_to_share_one_notes_file_lose_no_notes():
    """notes="shared": all five children write /research/notes.md in parallel. labkit keeps the
    first to finish there and the four others beside it, each with an error reply naming it;
    deepagents' reducer keeps the last (its FERN child evicted the export first, so not even
    that company's notes survive whole). The flip is the test above: one file per company."""
    run, _, iso = _fanout(window=128_000, raw=True, notes="shared")
    notes = {p: t for p, t in run.files.items() if p.startswith(scenario.SHARED_NOTES_PATH)}
    assert len(notes) == 5 and all(sum(scenario.export_text(t) in x for x in notes.values()) == 1
                                   for t in TICKERS)
    conflicted = [c for c in iso.children if c.conflicts]
    assert len(conflicted) == 4 and all(c.conflicts[scenario.SHARED_NOTES_PATH] in notes for c in conflicted)
    theirs, _, _ = _fanout(window=128_000, raw=True, notes="shared", harness="deep")
    assert ([p for p in theirs.files if p.startswith(scenario.SHARED_NOTES_PATH)]
            == [scenario.SHARED_NOTES_PATH])
    assert sum(scenario.export_text(t) in theirs.files[scenario.SHARED_NOTES_PATH] for t in TICKERS) <= 1
    for bad in ("yes", 1, 0):
        with pytest.raises(ValueError, match="notes must be"):
            scenario.researcher(notes=bad)


def test_a_cap_that_cuts_the_evidence_makes_the_parent_redo_the_work():
    run, _, iso = _fanout(cap=60)
    own = [tc["name"] for m in run.messages if isinstance(m, AIMessage) for tc in m.tool_calls]
    assert own.count("task") == 5 and own.count("search_news") == 5, "no second delegation"
    assert all(c.capped for c in iso.children) and not run.score.needle_correct


# -- side by side with deepagents -------------------------------------------------------------------------


def test_deepagents_children_also_start_from_the_description(deep_report):
    run, model, _ = deep_report
    groups = calls_by_context(model.calls)
    assert set(groups) == {scenario.FANOUT, *(scenario.research_request(t) for t in TICKERS)}
    for t in TICKERS:
        first = groups[scenario.research_request(t)][0].messages
        assert [type(m) for m in first] == [SystemMessage, HumanMessage]
        assert first[0].text.startswith(scenario.RESEARCHER_PROMPT)


def test_both_harnesses_give_the_parent_the_same_replies(report, deep_report):
    ours = [m.content for m in report[0].messages if isinstance(m, ToolMessage) and m.name == "task"]
    theirs = [m.content for m in deep_report[0].messages if isinstance(m, ToolMessage) and m.name == "task"]
    assert ours[:4] == theirs[:4], "Brightloom to Emberline: the same report, word for word"
    # Fernhollow's export is over 80,000 characters: deepagents' child evicted it to a file first,
    # so its KPIs were not in the child's context when it wrote the report.
    assert "KPIs not found" in theirs[4] and "KPIs not found" not in ours[4]
    assert any(p.startswith("/large_tool_results/") for p in deep_report[0].files)
    assert deep_report[0].score.needle_correct and report[0].score.needle_correct


def test_both_harnesses_merge_the_childrens_files_into_the_parent():
    ours, _, _ = _fanout(notes=True)
    theirs, _, _ = _fanout(notes=True, harness="deep")
    paths = {scenario.notes_path(t) for t in TICKERS}
    assert paths <= set(ours.files) and paths <= set(theirs.files)
    assert ours.files[scenario.notes_path("BRLM")] == theirs.files[scenario.notes_path("BRLM")]


def test_both_parents_stay_small_and_their_children_do_the_same_calls(report, deep_report):
    (ours, _, iso), (theirs, model, _) = report, deep_report
    assert max(r.seen for r in ours.records) < 5_000 and max(r.seen for r in theirs.records) < 5_000
    groups = calls_by_context(model.calls)
    assert [len(groups[c.description]) for c in iso.children] == [len(c.records) for c in iso.children]


def test_deepagents_passes_a_raw_dump_through_too():
    run, _, _ = _fanout(window=400_000, raw=True, harness="deep")
    replies = [m.content for m in run.messages if isinstance(m, ToolMessage) and m.name == "task"]
    assert scenario.export_text("BRLM") in replies[0]
    assert max(r.seen for r in run.records) > 100_000


# -- the plot ----------------------------------------------------------------------------------------------


def test_context_tokens_plot_shows_peaks_and_totals(report, naive):
    run, _, iso = report
    runs = {"no isolation": {"agent": [r.seen for r in naive.records]},
            "isolated": {"parent": [r.seen for r in run.records],
                         **{c.description[:20]: [r.seen for r in c.records] for c in iso.children}}}
    fig = plots.context_tokens(runs)
    peaks = [t for t in fig.data if t.xaxis == "x"]
    assert [t.name for t in peaks] == ["no isolation", "isolated"]
    assert peaks[1].y[0] == max(r.seen for r in run.records) and len(peaks[1].x) == 6
    totals = [t for t in fig.data if t.xaxis == "x2"]
    assert sum(t.y[0] for t in totals if t.x[0] == "isolated") == sum(
        r["input tokens"] for r in cost_rows(run, iso.children))
    with pytest.raises(ValueError, match="non-empty list"):
        plots.context_tokens({"x": {"parent": []}})


def test_a_cap_that_falls_inside_a_character_leaves_it_out_whole():
    """An emoji or a rare CJK character spans several BPE tokens: a cap between them keeps no
    replacement character (U+FFFD) in the reply the parent reads."""
    from labkit.isolate import cap_output

    for cap in range(1, 12):
        text, total = cap_output("研究结果 🚀🔥 龘靐齉" * 3, cap)
        assert "\ufffd" not in text and total > cap
