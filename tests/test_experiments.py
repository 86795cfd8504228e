"""labkit.experiments: each lesson's scaled-down experiment passes its own checks on the lab model,
fits the default budget, and runs on a model that is not the lab model; a check that could never
fail would be no check, so each is also shown failing on a run that breaks it."""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import replace

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from labkit import experiments, scenario
from labkit.experiments.basics import HOOKS
from labkit.summarize import events_of
from labkit.summarize.policy import EVENTS_KEY
from labkit.trace import Request
from labkit.yourmodel import DEFAULT_BUDGET, on_your_model
from tests.conftest import Scripted

EXPERIMENTS = {"offloading": experiments.offloading, "summarization": experiments.summarization,
               "isolation": experiments.isolation, "summary_itself": experiments.summary_itself,
               "wall": experiments.wall, "anchors": experiments.anchors, "clinic": experiments.clinic,
               "needle_recovery": experiments.needle_recovery, "token_counts": experiments.token_counts,
               "hook_order": experiments.hook_order, "pasted_transcript": experiments.pasted_transcript,
               "tool_tax": experiments.tool_tax, "cutting_safely": experiments.cutting_safely,
               "without_deletion": experiments.without_deletion, "skills": experiments.skills}


@pytest.fixture(scope="module")
def outcomes():
    """Each experiment, and its outcome with LABKIT_MODEL unset: the lab model's run only."""
    made = {name: make() for name, make in EXPERIMENTS.items()}
    with pytest.MonkeyPatch.context() as env:
        env.delenv("LABKIT_MODEL", raising=False)
        out = {}
        for name, e in made.items():
            with _archive_refused(name):
                out[name] = (e, on_your_model(e, out=lambda s: None))
        return out


def _archive_refused(name: str):
    """The clinic's experiment writes its archive to a backend that refuses it, on purpose (the
    lost needle's setting): summarize says so in a warning, expected here and nowhere else."""
    if name == "clinic":
        return pytest.warns(UserWarning, match="could not archive")
    return contextlib.nullcontext()


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_the_lab_run_holds_its_checks_and_fits_the_default_budget(outcomes, name, monkeypatch):
    experiment, outcome = outcomes[name]
    assert outcome.lab.error is None and experiment.checks(outcome.lab) == []
    assert 0 < outcome.estimate <= DEFAULT_BUDGET, "the default budget runs every lesson's experiment"
    assert experiment.observe(outcome.lab)


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_a_model_that_is_not_the_lab_model_runs_it(name, monkeypatch):
    monkeypatch.setenv("LABKIT_BUDGET_TOKENS", "1000000")
    calls = [{"name": "fetch_market_data", "args": {"ticker": t}, "id": f"f{t}", "type": "tool_call"}
             for t in ("BRLM", "CRVD")]
    model = Scripted(messages=iter([AIMessage("", tool_calls=calls), AIMessage("Done.")] * 3))
    with _archive_refused(name):
        outcome = on_your_model(EXPERIMENTS[name](), model=model, out=lambda s: None)
    assert outcome.yours is not None and model.seen and outcome.problems == []
    assert outcome.table().column("run") == ["lab model", "your model"]


def test_the_offloading_check_fails_when_a_big_result_reaches_the_context():
    experiment = experiments.offloading(limit=100)
    big = ToolMessage("row " * 400, tool_call_id="x")
    call = {"name": "fetch_market_data", "args": {"ticker": "BRLM"}, "id": "x", "type": "tool_call"}
    run = scenario.Run(messages=[AIMessage("", tool_calls=[call]), big], files={})
    assert experiment.checks(run) and "reached the context" in experiment.checks(run)[0]


def test_the_isolation_check_fails_when_a_childs_result_leaks_into_the_parent(outcomes):
    experiment, outcome = outcomes["isolation"]
    leaked = ToolMessage("a child's raw export", tool_call_id="child_call_1")
    run = scenario.Run(messages=[*outcome.lab.messages, leaked], files={})
    assert any("answer no call of its own" in p for p in experiment.checks(run))


def test_the_isolation_check_holds_when_the_parent_sent_a_malformed_task_call(outcomes):
    """Notebook 12 on a model that sends a task call whose arguments are not JSON: langchain
    answers it with an error of its own, which is no stray result and no missing child."""
    experiment, outcome = outcomes["isolation"]
    bad = {"name": "task", "args": '{"description": "Res', "id": "bad_1", "error": "not JSON",
           "type": "invalid_tool_call"}
    asked = AIMessage("", invalid_tool_calls=[bad])
    answer = ToolMessage("Error: arguments are not valid JSON", tool_call_id="bad_1", name="task",
                         status="error")
    run = scenario.Run(messages=[*outcome.lab.messages, asked, answer], files={})
    assert experiment.checks(run) == []
    cut = experiments.cutting_safely()
    record = dataclasses.replace(outcome.lab.records[0], request=Request([asked, answer], None, []))
    assert cut.checks(dataclasses.replace(outcome.lab, records=[record])) == []


def test_the_archive_check_fails_when_a_folded_message_is_not_archived(outcomes):
    for name in ("summary_itself", "anchors", "summarization", "without_deletion"):
        experiment, outcome = outcomes[name]
        files = {p: "" if p.startswith("/conversation_history/") else t for p, t in outcome.lab.files.items()}
        run = scenario.Run(messages=outcome.lab.messages, files=files, records=outcome.lab.records,
                           state=outcome.lab.state)
        assert any("are not in" in p for p in experiment.checks(run)), name


def test_the_wall_check_fails_when_a_big_result_or_an_unanswered_compact_call_is_in_the_context():
    experiment = experiments.wall(limit=100)
    call = {"name": "compact_conversation", "args": {}, "id": "c", "type": "tool_call"}
    big = ToolMessage("row " * 400, tool_call_id="x")
    run = scenario.Run(messages=[AIMessage("", tool_calls=[call]), big], files={})
    problems = experiment.checks(run)
    assert any("reached the context" in p for p in problems) and any("got 0 answers" in p for p in problems)


def test_the_anchor_check_fails_when_a_request_lacks_the_anchor(outcomes):
    experiment, outcome = outcomes["anchors"]
    records = [replace(r, request=None) if r.index == 0 else r for r in outcome.lab.records]
    run = scenario.Run(messages=outcome.lab.messages, files=outcome.lab.files, records=records,
                       state=outcome.lab.state)
    assert any("without the anchor" in p for p in experiment.checks(run))


def test_the_clinic_check_fails_when_a_compaction_names_an_archive(outcomes):
    experiment, outcome = outcomes["summary_itself"]  # a run whose archive was written
    problems = experiments.clinic().checks(outcome.lab)
    assert any("name an archive" in p for p in problems) and any("exists though" in p for p in problems)


def test_the_needle_check_fails_when_the_archive_lost_the_figure(outcomes):
    """The lab run folded the needle's export; an archive emptied afterwards breaks the guarantee."""
    experiment, outcome = outcomes["needle_recovery"]
    archive = events_of(outcome.lab.state)[-1].archive
    broken = scenario.Run(messages=outcome.lab.messages, files={**outcome.lab.files, archive: ""},
                          state=outcome.lab.state)
    assert experiment.checks(broken) == ["the needle's line was folded but is not in the archive"]
def test_the_token_count_check_fails_when_chars4_does_not_undercount_an_export(outcomes, monkeypatch):
    experiment, outcome = outcomes["token_counts"]
    monkeypatch.setattr("labkit.experiments.basics.approx_tokens", lambda text: 10**9)
    assert any("chars/4 says" in p for p in experiment.checks(outcome.lab))


def test_the_hook_order_check_fails_when_the_hooks_run_out_of_order(outcomes):
    experiment, outcome = outcomes["hook_order"]
    log = outcome.lab.state[HOOKS]
    swapped = dataclasses.replace(outcome.lab, state={HOOKS: [log[0], log[2], log[1], *log[3:]]})
    assert any("before → wrap → after" in p for p in experiment.checks(swapped))
    dropped = dataclasses.replace(outcome.lab, state={HOOKS: log[4:]})
    assert any("the Recorder" in p for p in experiment.checks(dropped))


def test_the_pasted_transcript_checks_fail_when_the_paste_is_sent_whole(outcomes):
    experiment, outcome = outcomes["pasted_transcript"]
    paste = HumanMessage(scenario.with_transcript())
    record = dataclasses.replace(outcome.lab.records[0], request=Request([paste], None, []))
    run = dataclasses.replace(outcome.lab, messages=[HumanMessage("hi")], files={}, records=[record])
    assert len(experiment.checks(run)) == 3


def test_the_tool_tax_check_fails_when_a_dropped_tool_is_offered(outcomes):
    experiment, outcome = outcomes["tool_tax"]
    ls = {"type": "function", "function": {"name": "ls"}}
    record = dataclasses.replace(outcome.lab.records[0], request=Request([], None, [ls]))
    assert experiment.checks(dataclasses.replace(outcome.lab, records=[record])) == [
        "a request offered ls, which was dropped"]


def test_the_cut_checks_fail_when_a_cut_falls_on_a_tool_result(outcomes):
    experiment, outcome = outcomes["cutting_safely"]
    at = next(i for i, m in enumerate(outcome.lab.messages) if m.type == "tool")
    event = {"cut": at, "summary": "s", "archive": None, "created_at": at + 1, "number": 1}
    orphan = ToolMessage("a result", tool_call_id="nowhere")
    record = dataclasses.replace(outcome.lab.records[0], request=Request([orphan], None, []))
    run = dataclasses.replace(outcome.lab, state={EVENTS_KEY: [event]}, records=[record])
    assert len(experiment.checks(run)) == 2


def test_the_without_deletion_checks_fail_when_state_or_archive_lost_a_message(outcomes):
    experiment, outcome = outcomes["without_deletion"]
    lab = outcome.lab
    archive = events_of(lab.state)[-1].archive
    short = scenario.Run(messages=lab.messages[1:], files=lab.files, state=lab.state)
    assert "the user's request is no longer the first message in state" in experiment.checks(short)
    emptied = scenario.Run(messages=lab.messages, files={**lab.files, archive: ""}, state=lab.state)
    assert any("folded messages are not in" in p for p in experiment.checks(emptied))


def test_the_skills_check_fails_when_a_prompt_carries_the_body_or_misses_the_listing(outcomes):
    experiment, outcome = outcomes["skills"]
    first = outcome.lab.records[0]
    body = scenario.skill_text()
    leaked = dataclasses.replace(first, request=dataclasses.replace(
        first.request, system=first.request.system.model_copy(update={"content": body})))
    run = scenario.Run(messages=outcome.lab.messages, files=outcome.lab.files, records=[leaked])
    assert any("carries the skill's body" in p for p in experiment.checks(run))
    bare = dataclasses.replace(first, request=dataclasses.replace(
        first.request, system=first.request.system.model_copy(update={"content": "no skills here"})))
    run = scenario.Run(messages=outcome.lab.messages, files=outcome.lab.files, records=[bare])
    assert any("does not list the skill" in p for p in experiment.checks(run))


def test_the_readme_gives_the_full_pass_the_sixteen_estimates_add_up_to(outcomes):
    """README: 'the sixteen estimates add up to about N million' — the fifteen experiments here and
    notebook 01's own (the naive first turn, exports at 2%, a 16,000-token window)."""
    import re
    from pathlib import Path

    from labkit.yourmodel import Experiment

    first = Experiment("01", window=16_000, run=lambda model, extra: scenario.run(
        model, middleware=list(extra), turns=scenario.TURNS[:1], export_scale=0.02))
    with pytest.MonkeyPatch.context() as env:
        env.delenv("LABKIT_MODEL", raising=False)
        total = on_your_model(first, out=lambda s: None).estimate
    total += sum(outcome.estimate for _, outcome in outcomes.values())
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    said = float(re.search(r"sixteen estimates add up to about ([\d.]+) million", readme).group(1))
    assert abs(said - total / 1e6) < 0.02, f"the README says {said} million; they add up to {total:,}"
    assert total <= 16 * DEFAULT_BUDGET
