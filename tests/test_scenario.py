"""The running example: data, tools, tasks, run() and score()."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, HumanMessage

from labkit import LabModel, count_tokens, scenario

ROOT = Path(__file__).resolve().parent.parent


def test_data_is_what_the_seeded_script_makes():
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_data.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_every_data_file_says_it_is_fictional():
    for path in scenario.data_dir().rglob("*.*"):
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


def test_naive_run_completes_on_a_big_window():
    run = scenario.run(LabModel(window=1_000_000))
    s = run.score
    assert (s.goal_completed, s.steps_repeated, s.needle_correct, s.goal_lost) == (True, 0, True, 0)
    assert run.turns_completed == 3 and run.error is None
    assert all(c["name"] in run.files[scenario.REPORT_PATH] for c in scenario.companies())


def test_naive_run_overflows_a_128k_window():
    run = scenario.run(LabModel(window=128_000))
    assert isinstance(run.error, ContextOverflowError)
    s = run.score
    assert not s.goal_completed and not s.needle_correct and "ContextOverflowError" in s.error
    assert run.records[-1].error and run.records[-1].seen > 128_000


def test_score_counts_repeats_and_reads_only_the_final_answer():
    """A hand-made run: BRLM fetched twice, and a wrong final answer after a right one."""
    ai = lambda i, t: AIMessage("", tool_calls=[{"name": "fetch_market_data", "args": {"ticker": t}, "id": f"c{i}"}])
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
