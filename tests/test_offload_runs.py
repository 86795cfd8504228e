"""labkit._offload_runs: the offload panel answers a setting without running the scenario, and its
answer is the one ``scenario.run`` gives at that setting — figure, status, messages, files, records.

The oracle is ``widgets.offload_result``: the scenario run for real at the setting."""

from __future__ import annotations

import dataclasses

import pytest

from labkit import scenario, tokens, widgets
from labkit._offload_runs import OffloadRuns, _by_lines, reference, walk
from labkit.tokens import TokenCounter

# (window, offload, tool_limit, export_scale): the default; each knob moved; a window that ends
# the run at its first export and one that ends it at the needle's question; the needle's export
# kept (the model answers from context, no grep); everything and nothing evicted; no offloading
SETTINGS = [
    (128_000, True, 20_000, 1.0), (64_000, True, 20_000, 1.3), (200_000, True, 9_000, 0.4),
    (16_000, True, 20_000, 1.0), (32_000, True, 40_000, 1.0), (128_000, True, 20_000, 0.6),
    (96_000, True, 2_000, 2.0), (48_000, True, 60_000, 0.1), (128_000, False, 20_000, 1.0),
    (200_000, False, 20_000, 2.0), (136_000, False, 20_000, 0.7), (40_000, True, 33_000, 1.7),
]


@pytest.fixture(scope="module")
def panel():
    return widgets.offload_panel()


def _message(m):
    return (type(m).__name__, m.content, getattr(m, "tool_calls", None), m.additional_kwargs,
            getattr(m, "usage_metadata", None), getattr(m, "status", None), m.name, m.response_metadata)


def _records(run):
    return [{f.name: getattr(r, f.name) for f in dataclasses.fields(r) if f.compare} for r in run.records]


@pytest.mark.parametrize("window, offload, tool_limit, export_scale", SETTINGS)
def test_the_panel_shows_what_running_the_scenario_at_that_setting_shows(
        panel, window, offload, tool_limit, export_scale):
    shown = panel.set(window=window, offload=offload, tool_limit=tool_limit, export_scale=export_scale)
    real = widgets.offload_result(window=window, offload=offload, tool_limit=tool_limit,
                                  export_scale=export_scale)
    assert shown["figure"].to_dict() == real["figure"].to_dict(), "the same figure"
    for key in ("status", "peak", "evicted", "overflowed", "score", "weighed", "values"):
        assert shown[key] == real[key], f"the same {key}"
    ours, theirs = shown["run"], real["run"]
    assert [_message(m) for m in ours.messages] == [_message(m) for m in theirs.messages], "the same messages"
    assert ours.files == theirs.files, "the same files"
    assert _records(ours) == _records(theirs), "the same records, call by call"
    assert (type(ours.error), str(ours.error)) == (type(theirs.error), str(theirs.error)), "the same error"
    assert ours.turns_completed == theirs.turns_completed, "the same turns completed"


def test_moves_of_every_knob_do_not_run_the_scenario(panel, monkeypatch):
    """After the panel is made (its three runs), no move runs the scenario: each is walked."""
    ran = []
    real = scenario.run
    monkeypatch.setattr(scenario, "run", lambda *a, **k: ran.append(k) or real(*a, **k))
    for move in ({"window": 112_000}, {"export_scale": 0.8}, {"tool_limit": 27_000}, {"offload": False},
                 {"window": 24_000}, {"export_scale": 1.9}, {"offload": True}, {"tool_limit": 4_000},
                 {"export_scale": 0.2}, {"tool_limit": 58_000}, {"window": 168_000}, {"export_scale": 1.4}):
        panel.set(**move)
    assert ran == [], "no move ran the scenario"


def test_a_walk_gives_up_where_the_lab_model_decides_otherwise():
    """Recorded with the needle's export evicted, the model greps the file for it; walked where that
    export stays in context, it answers from context instead: the walk stops, and the panel runs
    the scenario once for a new reference — whose answer is again a real run's."""
    evicted = reference(True, 2_000, 1.0)
    assert walk(evicted, 2_000, 1.0) is not None, "the same setting walks"
    assert walk(evicted, 60_000, 1.0) is None, "a setting where the model does otherwise does not"
    runs = OffloadRuns(widgets._run_at)
    runs.references.append(evicted)
    run, _ = runs(128_000, True, 60_000, 1.0)
    assert len(runs.references) == 2, "a second reference was run"
    real = widgets.offload_result(tool_limit=60_000)["run"]
    assert _records(run) == _records(real) and run.score == real.score, "and its answer is a real run's"


def test_where_the_window_could_change_a_request_each_window_is_walked():
    """A run with an argument the middleware could shorten is walked again at each window (not
    cut from the run on the largest): the answer is still a real run's."""
    runs = OffloadRuns(widgets._run_at, [(True, 2_000, 1.0)])
    runs(200_000, True, 20_000, 1.0)
    [done] = runs.walks[(True, 1.0)]
    assert done.window_free, "the scenario never has such an argument"
    done.window_free = False  # as if it had
    run, _ = runs(32_000, True, 20_000, 1.0)
    real = widgets.offload_result(window=32_000)["run"]
    assert _records(run) == _records(real) and str(run.error) == str(real.error), "a real run's answer"


@pytest.mark.parametrize("scale", [0.1, 0.6, 1.5, 2.0])
def test_an_export_counted_by_its_lines_is_counted_exactly(scale):
    """What lets a walk weigh an export at a new scale without a BPE pass: the sum of its lines'
    counts is the count of the whole (no pre-token spans a line), at every size."""
    encoding = tokens.encoding()
    for company in scenario.companies():
        text = scenario.export_text(company["ticker"], scale)
        whole = len(encoding.encode(text, disallowed_special=()))
        assert _by_lines(TokenCounter(), text) == whole, f"{company['ticker']} at ×{scale}"


def test_the_heavy_panels_collect_garbage_once_made(monkeypatch):
    """Made with collect=True, a panel runs the collector once, so what making it left behind is
    not collected during its first moves."""
    import gc

    import ipywidgets as ipw
    import plotly.graph_objects as go

    collected = []
    monkeypatch.setattr(gc, "collect", lambda *a: collected.append(a) or 0)
    widgets.Panel(lambda n: {"figure": go.Figure()}, {"n": ipw.IntSlider(1, min=1, max=9)})
    assert collected == [], "not by default"
    widgets.Panel(lambda n: {"figure": go.Figure()}, {"n": ipw.IntSlider(1, min=1, max=9)}, collect=True)
    assert collected == [()], "once, when asked"
