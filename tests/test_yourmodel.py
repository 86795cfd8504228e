"""labkit.yourmodel: a lesson's experiment on the learner's model — nothing sent unless asked,
nothing above the budget, both runs side by side, checks that do not depend on the model."""

from __future__ import annotations

import re

import pytest
from langchain_core.messages import AIMessage

from labkit import scenario
from labkit.yourmodel import DEFAULT_BUDGET, Experiment, budget, on_your_model
from tests.conftest import Scripted


def grows(run):
    """Nothing is ever removed from a naive run's context: each call sends at least the last."""
    seen = [r.seen for r in run.records]
    return [] if seen == sorted(seen) else ["a call sent less than the one before it"]


EXPERIMENT = Experiment(
    "the naive first turn, exports at 2%", window=16_000,
    run=lambda model, mw: scenario.run(model, middleware=list(mw), turns=scenario.TURNS[:1],
                                       export_scale=0.02),
    checks=grows, observe=lambda run: [f"{len(run.tool_calls('fetch_market_data'))} of 5 exports fetched"])


def scripted():
    """A model that is not the lab model: two parallel fetches, then a short answer."""
    calls = [{"name": "fetch_market_data", "args": {"ticker": t}, "id": f"f{t}", "type": "tool_call"}
             for t in ("BRLM", "CRVD")]
    return Scripted(messages=iter([AIMessage("", tool_calls=calls), AIMessage("Done.")]))


@pytest.fixture
def no_model(monkeypatch):
    for name in ("LABKIT_MODEL", "LABKIT_BUDGET_TOKENS"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_unset_it_says_how_and_sends_nothing(no_model):
    lines = []
    outcome = on_your_model(EXPERIMENT, out=lines.append)
    assert outcome.yours is None and outcome.estimate > 0 and len(outcome.table().rows) == 1
    assert len(lines) == 1 and "LABKIT_MODEL" in lines[0] and "Nothing was sent" in lines[0]


def test_it_refuses_above_the_budget_and_names_the_knob(no_model):
    no_model.setenv("LABKIT_BUDGET_TOKENS", "1000")
    model, lines = scripted(), []
    outcome = on_your_model(EXPERIMENT, model=model, out=lines.append)
    assert outcome.yours is None and "LABKIT_BUDGET_TOKENS" in outcome.refused and model.seen == []
    assert "Estimate: about" in lines[0] and f"{outcome.estimate:,}" in lines[0]


def test_within_budget_it_runs_your_model_beside_the_lab_model(no_model):
    no_model.setenv("LABKIT_BUDGET_TOKENS", "1_000_000")
    model, lines = scripted(), []
    outcome = on_your_model(EXPERIMENT, model=model, out=lines.append)
    assert len(model.seen) == 2 and len(outcome.yours.records) == 2
    assert [line.split(" · ")[0].strip() for line in lines[1:3]] == ["request 1", "request 2"], \
        "one line per request"
    assert "tool calls ['fetch_market_data', 'fetch_market_data']" in lines[1]
    assert "usage not reported" in lines[1], "the scripted model reports no usage: said, not 0"
    assert lines[3].startswith("Sent 2 requests, ") and f"{outcome.sent:,} input tokens" in lines[3]
    assert outcome.problems == [] and outcome.observations == ["2 of 5 exports fetched"]
    assert isinstance(outcome.findings, list), "diagnose() ran on your run"
    table = outcome.table()
    assert table.column("run") == ["lab model", "your model"]
    assert table.column("provider's input count")[1] == "not reported"
    assert table.column("input tokens sent") == [outcome.estimate, outcome.sent]
    names = [t.name for t in outcome.figure(16_000).data]
    assert any(n.startswith("lab model") for n in names) and any(n.startswith("your model") for n in names)


def test_the_estimate_is_every_request_of_the_lab_run(no_model):
    """Summary calls included: the lab run of a compacting experiment sends more than its agent's
    records say, and the estimate is that whole."""
    from labkit import experiments

    outcome = on_your_model(experiments.summarization(), out=lambda line: None)
    agent = sum(r.seen for r in outcome.lab.records)
    summaries = [r for r in outcome.lab_requests if r.who == "summary"]
    assert summaries and outcome.estimate == agent + sum(r.tokens for r in summaries)


def test_a_check_that_cannot_read_a_run_is_a_line_not_a_traceback(no_model):
    no_model.setenv("LABKIT_BUDGET_TOKENS", "1_000_000")

    def broken(run):
        raise KeyError("files")

    experiment = Experiment("broken", window=16_000, run=EXPERIMENT.run, checks=broken)
    outcome = on_your_model(experiment, model=scripted(), out=lambda line: None)
    assert len(outcome.problems) == 1 and "could not read your run (KeyError" in outcome.problems[0]


@pytest.mark.parametrize(("raw", "expected"), [("", DEFAULT_BUDGET), ("250000", 250_000), ("25_000", 25_000)])
def test_the_budget_reads_the_environment(no_model, raw, expected):
    no_model.setenv("LABKIT_BUDGET_TOKENS", raw)
    assert budget() == expected


@pytest.mark.parametrize("raw", ["lots", "-5", "0"])
def test_a_bad_budget_is_refused_by_name(no_model, raw):
    no_model.setenv("LABKIT_BUDGET_TOKENS", raw)
    with pytest.raises(ValueError, match="LABKIT_BUDGET_TOKENS"):
        budget()


def test_the_first_cell_names_the_active_model(no_model, openai_server):
    from labkit.yourmodel import active

    assert "LABKIT_MODEL is not set" in active()
    no_model.setenv("LABKIT_MODEL", "openai:fake-model")
    no_model.setenv("LABKIT_BASE_URL", openai_server.base_url)
    no_model.setenv("OPENAI_API_KEY", "dummy")
    no_model.setenv("LABKIT_WINDOW", "32000")
    assert active() == ("On your model: the last section runs on openai:fake-model at "
                        f"{openai_server.base_url}, window 32,000 (LABKIT_WINDOW); "
                        "the other cells on the lab model.")


@pytest.mark.parametrize("cap", ["far", "near"])
def test_the_budget_and_the_window_are_drawn_to_scale_or_named_at_the_top(no_model, cap):
    """A reference line more than ``plots.FAR`` times a side's data would squash the runs into the
    bottom of the plot: named at the top with how far it lies (as the lessons' figures do), else
    drawn where it is."""
    from labkit import plots

    probe = on_your_model(EXPERIMENT, model=scripted(), out=lambda line: None)
    no_model.setenv("LABKIT_BUDGET_TOKENS", "1_000_000" if cap == "far" else str(2 * probe.estimate))
    outcome = on_your_model(EXPERIMENT, model=scripted(), out=lambda line: None)
    fig = outcome.figure(window=1_000_000 if cap == "far" else 16_000)
    drawn = sorted(shape.y0 for shape in fig.layout.shapes)
    named = [a.text for a in fig.layout.annotations if "off the scale" in a.text]
    if cap == "far":
        assert drawn == [] and len(named) == 2, (drawn, named)
        times = re.match(r"↑ budget 1,000,000: ([\d.]+)× this run's peak", named[1])
        assert times and float(times[1]) > plots.FAR, named
    else:
        assert drawn == [16_000, outcome.budget] and named == [], (drawn, named)
