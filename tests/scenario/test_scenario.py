"""The running example: data, tools, tasks, agent(), run() and score(), and what a Run tells."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, HumanMessage

from labkit import LabModel, count_tokens, scenario
from labkit.trace import KINDS, CallRecord, Recorder

ROOT = Path(__file__).resolve().parents[2]


def test_data_is_what_the_seeded_script_makes():
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_data.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_every_data_file_says_it_is_fictional():
    for path in scenario.data_dir().rglob("*.*"):
        if "state" in path.relative_to(scenario.data_dir()).parts[:1]:
            continue  # data/state/: what notebook 13 keeps beyond the kernel, not the data set
        text = path.read_text(encoding="utf-8")
        assert "FICTIONAL" in text or "虚构" in text, f"{path} does not say it is fictional"


def test_sizes_make_the_lessons_work():
    """Some exports are well over 20,000 tokens, some under, and all results overflow 128k."""
    sizes = {c["ticker"]: count_tokens(scenario.export_text(c["ticker"])) for c in scenario.companies()}
    assert sum(n > 25_000 for n in sizes.values()) >= 2
    assert sum(n < 20_000 for n in sizes.values()) >= 2
    news = sum(count_tokens(scenario.news_text(t)) for t in sizes)
    assert sum(sizes.values()) + news > 128_000


def test_needle_is_buried_in_the_first_export_once():
    n = scenario.needle()
    text = scenario.export_text(n.ticker)
    assert n.find(text) == n.answer
    lines = text.splitlines()
    where = next(i for i, line in enumerate(lines) if n.kpi in line and n.ticker in line)
    assert 0.3 < where / len(lines) < 0.7, "the needle should sit in the middle of its file"
    assert text.count(n.answer) == 1
    assert scenario.companies()[0]["ticker"] == n.ticker


@pytest.mark.parametrize("bad", ["ACME", "", "../etc/passwd", "BRLM; rm -rf /"])
def test_tools_answer_unknown_tickers_with_the_allowed_list(bad):
    fetch, news = scenario.tools()
    for t in (fetch, news):
        out = t.invoke({"ticker": bad})
        assert out.startswith("Error: unknown competitor") and "BRLM (Brightloom)" in out


def test_tools_accept_names_and_tickers_and_chinese_news():
    fetch, news = scenario.tools(news_language="zh")
    assert fetch.invoke({"ticker": "brightloom"}) == fetch.invoke({"ticker": "BRLM"})
    assert "新闻摘要" in news.invoke({"ticker": "CRVD"})
    with pytest.raises(ValueError, match="news_language"):
        scenario.tools(news_language="fr")


def test_naive_run_completes_on_a_big_window(recorded):
    run = recorded
    s = run.score
    assert (s.goal_completed, s.steps_repeated, s.needle_correct, s.goal_lost) == (True, 0, True, 0)
    assert run.turns_completed == 3 and run.error is None
    assert all(c["name"] in run.files[scenario.REPORT_PATH] for c in scenario.companies())


def test_naive_run_overflows_a_128k_window(overflow_128k):
    run = overflow_128k
    assert isinstance(run.error, ContextOverflowError)
    s = run.score
    assert not s.goal_completed and not s.needle_correct and "ContextOverflowError" in s.error
    assert run.records[-1].error and run.records[-1].seen > 128_000


def test_score_counts_repeats_and_reads_only_the_final_answer():
    """A hand-made run: BRLM fetched twice, and a wrong final answer after a right one."""
    def ai(i, t):
        return AIMessage("", tool_calls=[{"name": "fetch_market_data", "args": {"ticker": t}, "id": f"c{i}"}])

    msgs = [HumanMessage(scenario.REQUEST), ai(1, "BRLM"), ai(2, "brightloom"), ai(3, "CRVD"),
            HumanMessage(scenario.NEEDLE_QUESTION), AIMessage("It was 117.4%."), AIMessage("I don't know.")]
    s = scenario.score(scenario.Run(messages=msgs, files={}))
    assert s.steps_repeated == 1 and s.repeated == ("fetch_market_data:BRLM",)
    assert not s.needle_correct and not s.goal_completed
    assert f"{scenario.RISKS_PATH} was not written" in s.missing


def test_run_rejects_an_unknown_harness():
    with pytest.raises(ValueError, match="harness"):
        scenario.run(LabModel(), harness="swarm")


def test_missing_data_dir_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("LABKIT_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="make_data.py"):
        scenario.data_dir()


def _record(index: int, seen: int, error: str | None = None) -> CallRecord:
    by_kind = dict.fromkeys(KINDS, 0) | {"human": seen}
    return CallRecord(index=index, turn=0, stored=seen, seen=seen, by_kind=by_kind, messages_stored=1,
                      messages_seen=1, error=error)


def test_peak_is_the_largest_request_sent_refused_ones_included():
    """Worked example: three calls of 40,000, 90,000 and 150,000 tokens on a 128k window; the last
    is refused. It was still sent, so the peak is 150,000 — over the window, which is what a
    learner holds it against; the largest request the model accepted was 90,000."""
    refused = "ContextOverflowError: 150,000 tokens > 128,000"
    run = scenario.Run(messages=[], files={}, records=[_record(0, 40_000), _record(1, 90_000),
                                                        _record(2, 150_000, refused)])
    assert run.peak == 150_000
    assert max(r.seen for r in run.records if not r.error) == 90_000
    assert scenario.Run(messages=[], files={}).peak == 0, "no model call, no peak"


@pytest.mark.parametrize("window", [1_000_000, 128_000])
def test_peak_matches_the_records_of_a_real_run(window):
    run = scenario.run(LabModel(window=window))
    assert run.peak == max(r.seen for r in run.records)
    assert (run.peak > window) == (run.error is not None)


def test_tool_calls_in_order_and_by_tool():
    def call(i, name, **args):
        return {"name": name, "args": args, "id": f"c{i}", "type": "tool_call"}

    grep = call(3, "grep", pattern="net_revenue", path="/large_tool_results/x")
    msgs = [HumanMessage(scenario.REQUEST),
            AIMessage("", tool_calls=[call(1, "fetch_market_data", ticker="BRLM"),
                                      call(2, "search_news", ticker="BRLM")]),
            AIMessage("", tool_calls=[grep]),
            AIMessage("", tool_calls=[call(4, "fetch_market_data", ticker="CRVD")]),
            AIMessage("Done.")]
    run = scenario.Run(messages=msgs, files={})
    assert [tc["id"] for tc in run.tool_calls()] == ["c1", "c2", "c3", "c4"]
    assert [tc["args"]["ticker"] for tc in run.tool_calls("fetch_market_data")] == ["BRLM", "CRVD"]
    assert run.tool_calls("grep")[-1] == grep, "what a notebook's last_tool_call(run) was"
    assert run.tool_calls("task") == []


def test_tool_calls_of_a_real_run_are_the_ones_the_score_counts(recorded):
    run = recorded
    fetched = [tc["args"]["ticker"] for tc in run.tool_calls("fetch_market_data")]
    assert fetched == [c["ticker"] for c in scenario.companies()], "one export per competitor, in order"
    assert run.tool_calls()[0]["name"] == "fetch_market_data" and run.score.steps_repeated == 0


def _shape(messages):
    return [(m.type, m.text, [(tc["name"], tc["args"]) for tc in getattr(m, "tool_calls", [])])
            for m in messages]


def test_agent_is_the_graph_run_drives():
    """One turn on scenario.agent by hand gives the same messages and files as run() with that turn."""
    model = LabModel(window=1_000_000)
    graph = scenario.agent(model)
    thread = {"configurable": {"thread_id": "lab"}}
    graph.invoke({"messages": [HumanMessage(scenario.REQUEST)]}, thread)
    state = graph.get_state(thread).values
    run = scenario.run(LabModel(window=1_000_000), turns=(scenario.REQUEST,))
    assert _shape(state["messages"]) == _shape(run.messages)
    assert set(state["files"]) == set(run.files) == {scenario.REPORT_PATH}, \
        "eviction is off: no result offloaded to a file"
    tools = set(model.calls[0].tools)
    assert {"fetch_market_data", "search_news", "read_file", "write_file", "grep"} <= tools
    assert "task" not in tools, "the agent harness is create_agent with file tools only"
    assert scenario.agent(model).get_state(thread).values == {}, "each agent has its own checkpointer"


def test_agent_takes_middleware_and_the_deep_harness():
    rec, model = Recorder(), LabModel(window=1_000_000)
    graph = scenario.agent(model, [rec], harness="deep", news_language="zh")
    graph.invoke({"messages": [HumanMessage(scenario.REQUEST)]}, {"configurable": {"thread_id": "t"}})
    assert rec.records and rec.records[0].seen == model.calls[0].input_tokens, \
        "your middleware sees each call"
    assert {"task", "fetch_market_data"} <= set(model.calls[0].tools), "the deep harness adds the task tool"
    news = next(m for m in graph.get_state({"configurable": {"thread_id": "t"}}).values["messages"]
                if m.type == "tool" and m.name == "search_news")
    assert "新闻摘要" in news.text
    with pytest.raises(ValueError, match="harness"):
        scenario.agent(model, harness="swarm")
