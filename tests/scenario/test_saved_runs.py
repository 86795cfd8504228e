"""Bring your own agent: ``Run.save`` / ``scenario.load_run``, and a run of a model that is not the
lab model (``tests/data/foreign_run.json``) read by score, replay, knobs and diagnose."""

from __future__ import annotations

import json

import pytest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from labkit import diagnose, scenario, widgets
from labkit.replay import replay, trajectory
from labkit.trace import CallRecord, Recorder
from tests.conftest import Scripted, ai_call
from tests.data.make_foreign_run import EXPORT_SCALE, PATH, TICKERS, record


@pytest.fixture(scope="module")
def fresh():
    """The foreign run, recorded now."""
    return record()


@pytest.fixture(scope="module")
def foreign():
    """The foreign run, as committed."""
    return scenario.load_run(PATH)


def _shape(run) -> list:
    return [(m.type, m.text, [(tc["name"], tc["args"], tc["id"]) for tc in getattr(m, "tool_calls", [])])
            for m in run.messages]


def test_round_trip_keeps_messages_files_and_records(fresh, tmp_path):
    back = scenario.load_run(fresh.save(tmp_path / "run.json"))
    assert back.messages == fresh.messages, "every message comes back as it was saved"
    assert back.files == fresh.files
    assert back.records == fresh.records, "every call record comes back (requests are not saved)"
    assert all(isinstance(r, CallRecord) and r.request is None for r in back.records)
    assert (back.turns_completed, back.error) == (fresh.turns_completed, None)
    assert back.score == fresh.score


def test_round_trip_keeps_an_overflow_and_drops_requests(tmp_path):
    model = Scripted(messages=iter([AIMessage("unused")]), overflow_on=(1,))
    run = scenario.run(model, turns=scenario.TURNS[:1], recorder=Recorder(keep_requests=True),
                       export_scale=EXPORT_SCALE)
    assert run.records[0].request is not None
    back = scenario.load_run(run.save(tmp_path / "overflow.json"))
    assert isinstance(back.error, ContextOverflowError), "an overflow is still an overflow when read back"
    assert str(back.error) == str(run.error) and back.score.error == run.score.error
    assert [f.key for f in diagnose.diagnose(back)] == [f.key for f in diagnose.diagnose(run)]
    assert "request" not in json.loads((tmp_path / "overflow.json").read_text())["records"][0]


def test_another_error_keeps_its_name(tmp_path):
    run = scenario.Run(messages=[HumanMessage("hi")], files={}, error=KeyError("x"))
    back = scenario.load_run(run.save(tmp_path / "err.json"))
    assert back.score.error == run.score.error == "KeyError: 'x'"


def test_load_run_refuses_another_json(tmp_path):
    (tmp_path / "other.json").write_text('{"messages": []}')
    with pytest.raises(ValueError, match="not a run saved by Run.save"):
        scenario.load_run(tmp_path / "other.json")


def test_the_fixture_is_what_the_script_records(fresh, foreign):
    assert _shape(foreign) == _shape(fresh), "tests/data/foreign_run.json is stale: rerun make_foreign_run.py"
    assert [r.seen for r in foreign.records] == [r.seen for r in fresh.records]


def test_foreign_run_scores_from_messages_and_files(foreign):
    s = foreign.score
    assert [tc["args"]["ticker"] for tc in foreign.tool_calls("fetch_market_data")] == list(TICKERS)
    assert (s.steps_repeated, s.identical_calls, s.goal_lost, s.asked_user) == (0, 0, 0, 0)
    assert s.no_report and not s.goal_completed, "the first turn ends without the report"


def test_foreign_run_replays_as_recorded_under_a_large_window(foreign):
    t = trajectory(foreign)
    assert t.calls == [1, 3, 5, 7, 9, 11] and len(t.needle_at) == 1
    r = replay(t, window=128_000)
    assert not r.events and r.died_at is None and r.needle == "visible"
    assert list(r.seen) == [rec.seen for rec in foreign.records], "no event: each call as recorded"


@pytest.mark.parametrize("window, trigger, died", [(128_000, 3_000, None), (3_000, 2_000, 1)])
def test_foreign_run_compacts_under_a_small_trigger(foreign, window, trigger, died):
    r = replay(foreign, window=window, trigger=("tokens", trigger), keep=("messages", 2))
    assert r.events and r.died_at == died
    assert max(r.seen) <= max(rec.seen for rec in foreign.records)


def test_knobs_and_diagnose_read_the_foreign_run(foreign):
    panel = widgets.knobs(foreign)
    assert panel.result["figure"] is not None and panel.result["error"] is None
    low = panel.set(window=16_000, trigger=0.2, keep_messages=2)
    assert low["error"] is None and low["replay"].events, "a low trigger compacts the foreign run too"
    assert diagnose.diagnose(foreign) == [], "a short clean run has no finding"


# -- the signs any model leaves -------------------------------------------------------------------


def _run(*messages, files=None) -> scenario.Run:
    return scenario.Run(messages=list(messages), files=files or {})


def test_a_question_instead_of_work_is_asking_the_user():
    s = _run(HumanMessage(scenario.REQUEST), AIMessage("Which competitors should I look at?")).score
    assert (s.asked_user, s.goal_lost) == (1, 0)
    assert "asked the user what to do: 1x" in str(s)
    worked = _run(HumanMessage(scenario.REQUEST), ai_call("search_news", {"ticker": "BRLM"}, "c1"),
                  ToolMessage("news", tool_call_id="c1"), AIMessage("Done. Shall I go on?")).score
    assert worked.asked_user == 0, "a question after doing the work is not handing the task back"


def test_identical_calls_count_any_tool():
    call = ai_call("read_file", {"file_path": "/a.md"}, "c1")
    s = _run(HumanMessage("x"), call, ToolMessage("a", tool_call_id="c1"),
             ai_call("read_file", {"file_path": "/a.md"}, "c2"), ToolMessage("a", tool_call_id="c2")).score
    assert (s.identical_calls, s.steps_repeated) == (1, 0)


def test_diagnose_sees_any_model_hand_the_task_back(foreign):
    asked = scenario.Run(messages=[*foreign.messages, HumanMessage(scenario.TURNS[1]),
                                   AIMessage("Sorry, what should I work on?")],
                         files=foreign.files, records=foreign.records, turns_completed=2)
    found = diagnose.diagnose(asked)
    assert [f.key for f in found] == ["goal_lost"] and found[0].numbers["count"] == 1


def test_a_recorded_reply_is_saved(fresh, tmp_path):
    assert fresh.records[-1].reply == fresh.messages[-1].text and fresh.records[0].reply == ""
    back = scenario.load_run(fresh.save(tmp_path / "run.json"))
    assert [r.reply for r in back.records] == [r.reply for r in fresh.records]
