"""The lab model under the real harness: deepagents.create_deep_agent, its whole default stack."""

from __future__ import annotations

from deepagents.middleware.filesystem import FilesystemMiddleware
from langchain.agents import create_agent
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from labkit import LabModel, scenario
from labkit._checkpoint import SharedSaver


def test_deep_agent_runs_the_scenario_to_completion():
    model = LabModel(window=1_000_000)
    run = scenario.run(model, harness="deep")
    assert run.error is None and run.turns_completed == 3
    s = run.score
    assert s.goal_completed and s.needle_correct and s.steps_repeated == 0
    # the real deepagents tools were bound: the model saw its file tools and the task tool
    assert {"write_file", "read_file", "grep", "task"} <= set(model.calls[0].tools)
    assert not any(c.kind == "summary" for c in model.calls), "nothing to compact in a 1M window"


def test_deepagents_own_summarization_fires_on_a_small_window_and_the_run_survives(deep_60k):
    model, run = deep_60k
    s = run.score
    assert run.error is None and s.goal_completed and s.needle_correct and s.goal_lost == 0
    # deepagents summarized: the lab model got summary prompts, and the event is in state
    assert any(c.kind == "summary" for c in model.calls)
    event = run.state["_summarization_event"]
    assert event["file_path"].startswith("/conversation_history/session_")
    assert event["file_path"] in run.files
    assert event["summary_message"].additional_kwargs["lc_source"] == "summarization"
    # state was not rewritten: every message of the run is still stored
    assert len(run.messages) >= event["created_at_index"]
    # the needle was recovered through a file: the answer came after a grep of a stored file
    grep_calls = [tc for m in run.messages if m.type == "ai" for tc in m.tool_calls if tc["name"] == "grep"]
    assert grep_calls and grep_calls[-1]["args"]["path"] in run.files
    # no call was ever sent over the window without deepagents catching it
    assert all(r.seen <= 60_000 or r.error for r in run.records)


def test_without_the_harness_the_same_window_overflows():
    run = scenario.run(LabModel(window=60_000))
    assert isinstance(run.error, ContextOverflowError)


def test_a_run_keeps_one_message_list_and_loses_nothing():
    """scenario.run's checkpointer keeps every version, but the message lists share one list: each
    version of the thread's messages is a prefix of the newest, not a copy (InMemorySaver stores the
    whole list again, serialized, at every step) — and the run is the one langgraph's InMemorySaver
    gives, message for message and file for file."""
    graph = scenario.agent(LabModel(window=1_000_000))
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 200}
    for text in scenario.TURNS:
        graph.invoke({"messages": [HumanMessage(text)]}, config=config)
    saver = graph.checkpointer
    assert isinstance(saver, SharedSaver), "the scenario's agents use SharedSaver"
    kept = [saver.blobs[k] for k in saver.blobs if k[2] == "messages"]
    lists = {id(blob[1][0].items) for blob in kept}
    assert len(kept) > 10 and len(lists) == 1, f"{len(kept)} versions on {len(lists)} lists, not one"
    reference = create_agent(LabModel(window=1_000_000), tools=scenario.tools(),
                             middleware=[FilesystemMiddleware(tool_token_limit_before_evict=None,
                                                              human_message_token_limit_before_evict=None)],
                             checkpointer=InMemorySaver())
    for text in scenario.TURNS:
        reference.invoke({"messages": [HumanMessage(text)]}, config=config)
    ours, theirs = graph.get_state(config).values, reference.get_state(config).values
    assert [m.content for m in ours["messages"]] == [m.content for m in theirs["messages"]], "same run"
    content = {path: data["content"] for path, data in theirs["files"].items()}
    assert {path: data["content"] for path, data in ours["files"].items()} == content, "the same files"
    assert len(list(reference.get_state_history(config))) > 10, "InMemorySaver keeps every checkpoint"


def test_a_filesystem_middleware_passed_to_the_agent_harness_takes_the_place_of_its_own():
    """As create_deep_agent replaces its own by name (notebook 06, way 1): one FilesystemMiddleware,
    yours — its allowlist is what the model is sent, and its tools do the work."""
    model = LabModel(window=1_000_000)
    mine = FilesystemMiddleware(tools=["read_file", "write_file"], tool_token_limit_before_evict=None)
    run = scenario.run(model, middleware=[mine], turns=scenario.TURNS[:1])
    assert sorted(model.calls[0].tools) == ["fetch_market_data", "read_file", "search_news", "write_file"]
    assert run.error is None and scenario.REPORT_PATH in run.files, "its write_file wrote the report"


def test_a_thread_on_a_saver_you_pass_resumes_in_the_next_run(tmp_path):
    """checkpointer= replaces the harness's own: a second run with the same thread id on a new
    SqliteSaver over the same file (as another process would open it) starts from the first's
    messages; on the default checkpointer each run starts empty."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    def saver():
        return SqliteSaver(sqlite3.connect(tmp_path / "threads.sqlite", check_same_thread=False))

    window = LabModel(window=1_000_000)
    first = scenario.run(window, turns=(scenario.REQUEST,), thread_id="t", checkpointer=saver())
    resumed = scenario.run(LabModel(window=1_000_000), turns=(scenario.FEEDBACK,), thread_id="t",
                           checkpointer=saver())
    alone = scenario.run(LabModel(window=1_000_000), turns=(scenario.FEEDBACK,), thread_id="t")
    assert not (first.error or resumed.error or alone.error)
    assert resumed.state["messages"][:len(first.state["messages"])] == first.state["messages"]
    assert len(resumed.state["messages"]) == len(first.state["messages"]) + len(alone.state["messages"])


def test_state_dir_is_the_checkouts_data_state_or_labkit_state(monkeypatch, tmp_path):
    from labkit.scenario import data

    monkeypatch.delenv("LABKIT_STATE", raising=False)
    assert scenario.state_dir() == data.CHECKOUT_DATA / "state", "a checkout: data/state/ (git ignores it)"
    monkeypatch.setenv("LABKIT_STATE", str(tmp_path / "mine"))
    assert scenario.state_dir() == tmp_path / "mine" and (tmp_path / "mine").is_dir()
