"""labkit.widgets: a panel's result follows its knobs as the mechanism says; bad knob values fail
with a message naming the knob and change nothing; making a panel displays and prints nothing.

Asserted on the returned result and the figure's data, never on a rendered picture."""

from __future__ import annotations

import ipywidgets as ipw
import plotly.graph_objects as go
import pytest

from labkit import scenario, widgets
from labkit.tokens import count_tokens

MIME = "application/vnd.plotly.v1+json"


@pytest.fixture(scope="module")
def panel():
    return widgets.offload_panel()


def _set(panel, **values):
    """Every knob given explicitly, so tests do not depend on the order they run in."""
    return panel.set(**({"window": 128_000, "offload": True, "tool_limit": 20_000, "export_scale": 1.0}
                        | values))


def _trace(fig, name):
    [trace] = [t for t in fig.data if t.name == name]
    return trace


# -- the offload panel follows the mechanism ----------------------------------------------------


def test_default_panel_keeps_the_run_inside_the_window(panel):
    result = _set(panel)
    assert not result["overflowed"] and result["score"].needle_correct
    assert result["peak"] < 128_000 == result["values"]["window"]
    assert result["peak"] == max(_trace(result["figure"], "seen by the model").y)
    assert "3</b> results evicted" in result["status"] and "peak <b>" in result["status"]


def test_a_lower_limit_evicts_more_files_and_lowers_the_peak(panel):
    high, low = _set(panel, tool_limit=20_000), _set(panel, tool_limit=10_000)
    assert set(high["evicted"]) < set(low["evicted"])
    assert low["peak"] < high["peak"]


def test_evicted_files_are_exactly_the_exports_over_the_limit(panel):
    """The mechanism, end to end: a result is evicted iff its BPE tokens are over tool_limit
    (at half size too, where a different set of exports crosses the line)."""
    for scale in (1.0, 0.5):
        result = _set(panel, export_scale=scale)
        over = {c["ticker"] for c in scenario.companies()
                if count_tokens(scenario.export_text(c["ticker"], scale)) > 20_000}
        run = result["run"]
        ids = {tc["id"]: tc["args"]["ticker"] for m in run.messages if m.type == "ai"
               for tc in m.tool_calls if tc["name"] == "fetch_market_data"}
        assert {ids[p.rsplit("/", 1)[1]] for p in result["evicted"]} == over


def test_eviction_off_at_128k_overflows(panel):
    result = _set(panel, offload=False)
    assert result["overflowed"] and result["evicted"] == []
    assert result["peak"] > 128_000 and "overflow" in result["status"]
    assert len(_trace(result["figure"], "call failed").x) == 1
    assert panel.controls["tool_limit"].disabled  # the limit means nothing while eviction is off
    _set(panel)
    assert not panel.controls["tool_limit"].disabled


def test_scaling_the_exports_down_lowers_the_peak_without_eviction(panel):
    full, half = (_set(panel, offload=False, window=200_000),
                  _set(panel, offload=False, window=200_000, export_scale=0.5))
    assert not full["overflowed"] and not half["overflowed"]
    assert half["peak"] < full["peak"]


def test_the_window_line_follows_the_window_knob(panel):
    result = _set(panel, window=64_000)
    assert [s.y0 for s in result["figure"].layout.shapes] == [64_000]
    assert "64,000" in result["figure"].layout.title.text


def test_the_figure_is_drawn_into_the_output_as_plotly_json(panel):
    result = _set(panel, tool_limit=30_000)
    [out] = panel.view.widget.outputs
    drawn = out["data"][MIME]
    assert out["output_type"] == "display_data"
    seen = next(t for t in drawn["data"] if t["name"] == "seen by the model")
    assert list(seen["y"]) == list(_trace(result["figure"], "seen by the model").y)
    assert panel.status.value == result["status"]


def test_moving_a_slider_recomputes_as_set_does(panel):
    expected = _set(panel, tool_limit=10_000)
    _set(panel)
    panel.controls["tool_limit"].value = 10_000  # what the browser does
    assert panel.result is expected  # the cached result for that setting
    _set(panel)


def test_offload_panel_starts_from_its_arguments():
    small = widgets.offload_panel(window=64_000, tool_limit=10_000, export_scale=0.5)
    assert small.values == {"window": 64_000, "offload": True, "tool_limit": 10_000, "export_scale": 0.5}
    assert small.result["values"] == small.values
    assert {c.continuous_update for k, c in small.controls.items() if k != "offload"} == {False}


# -- errors name the knob and change nothing ------------------------------------------------------


@pytest.mark.parametrize("bad, says", [
    ({"tool_limit": 70_000}, "tool_limit must be a whole number from 2,000 to 60,000, got 70000"),
    ({"tool_limit": 1_500}, "tool_limit must be a whole number from 2,000 to 60,000"),
    ({"tool_limit": 20_000.0}, "tool_limit must be a whole number"),
    ({"tool_limit": None}, "tool_limit must be a whole number"),
    ({"window": 8_000}, "window must be a whole number from 16,000 to 200,000"),
    ({"window": True}, "window must be a whole number"),
    ({"export_scale": 3}, "export_scale must be a number from 0.1 to 2, got 3"),
    ({"export_scale": "big"}, "export_scale must be a number"),
    ({"offload": 1}, "offload must be True or False, got 1"),
    ({"limit": 5_000}, "unknown knob 'limit'; this panel has window, offload, tool_limit, export_scale"),
])
def test_bad_values_raise_naming_the_knob_and_change_nothing(panel, bad, says):
    before = _set(panel)
    with pytest.raises(ValueError, match=says):
        panel.set(**({"window": 64_000} | bad))  # a good value beside the bad one is not applied either
    assert panel.values["window"] == 128_000 and panel.values["tool_limit"] == 20_000
    assert panel.result is before


@pytest.mark.parametrize("bad, says", [
    ({"tool_limit": 100_000}, "tool_limit must be"),
    ({"export_scale": 0}, "export_scale must be"),
    ({"window": 1_000_000}, "window must be"),
])
def test_offload_panel_refuses_bad_starting_values(bad, says):
    with pytest.raises(ValueError, match=says):
        widgets.offload_panel(**bad)


# -- the Panel itself: cache, one computation per set, nothing shown ------------------------------


def _counting_panel():
    calls = []

    def compute(n, on):
        calls.append((n, on))
        return {"figure": go.Figure(go.Bar(x=[0], y=[n if on else 0]), layout={"title": f"n={n}"}),
                "status": f"n is {n}"}

    controls = {"n": ipw.IntSlider(3, min=1, max=9), "on": ipw.Checkbox(True)}
    return widgets.Panel(compute, controls), calls


def test_set_computes_once_for_several_knobs_and_caches_each_setting():
    panel, calls = _counting_panel()
    assert calls == [(3, True)]
    first = panel.result
    changed = panel.set(n=5, on=False)
    assert calls == [(3, True), (5, False)] and changed["status"] == "n is 5"
    assert panel.set(n=3, on=True) is first and len(calls) == 2  # moving back is instant
    assert list(panel.view.widget.outputs[0]["data"][MIME]["data"][0]["y"]) == [3]


def test_the_cache_is_bounded():
    calls = []
    panel = widgets.Panel(lambda n: calls.append(n) or {"figure": go.Figure()},
                          {"n": ipw.IntSlider(1, min=1, max=9)}, cache_size=2)
    for n in (2, 3, 1):
        panel.set(n=n)
    assert calls == [1, 2, 3, 1]  # 1 was pushed out by 2 and 3, so it ran again


def test_panel_refuses_controls_it_cannot_check():
    with pytest.raises(TypeError, match="control 'name' must be an IntSlider, FloatSlider or Checkbox"):
        widgets.Panel(lambda name: {"figure": go.Figure()}, {"name": ipw.Text("x")})
    with pytest.raises(ValueError, match="at least one control"):
        widgets.Panel(lambda: {"figure": go.Figure()}, {})


def test_making_a_panel_displays_and_prints_nothing(monkeypatch, capsys):
    import IPython.core.display_functions as display_functions
    import IPython.display

    def refuse(*args, **kwargs):
        raise AssertionError("a panel must not display anything when it is made")

    monkeypatch.setattr(IPython.display, "display", refuse)
    monkeypatch.setattr(display_functions, "display", refuse)
    panel, _ = _counting_panel()
    panel.set(n=4)
    made = widgets.offload_panel(tool_limit=25_000)
    assert capsys.readouterr() == ("", "")
    assert isinstance(made.widget, ipw.VBox) and made.view.widget in made.widget.children
    assert "application/vnd.jupyter.widget-view+json" in made._repr_mimebundle_()
    assert repr(made) == "Panel(window=128000, offload=True, tool_limit=25000, export_scale=1.0)"


def test_a_limit_with_the_same_outcome_reuses_the_run_and_draws_what_a_fresh_run_draws(panel):
    """Worked example: at the default setting the run weighs each result once; 20,000 and any
    limit between the same two neighbouring result sizes evict the same results, so the panel
    redraws without re-running — and draws exactly what running the scenario at that limit draws."""
    first = _set(panel, tool_limit=20_000)
    sizes = sorted(set(first["weighed"]))
    below = max(n for n in sizes if n <= 20_000)
    above = min(n for n in sizes if n > 20_000)
    other = next(n for n in range(1_000 * (below // 1_000 + 1), above, 1_000) if n != 20_000)
    moved = _set(panel, tool_limit=other)
    assert moved["run"] is first["run"], "the same evict-or-keep decisions reuse the run"
    fresh = widgets.offload_result(tool_limit=other)
    assert moved["figure"].to_dict() == fresh["figure"].to_dict(), "what is drawn is what a fresh run draws"
    for key in ("status", "evicted", "peak"):
        assert moved[key] == fresh[key], f"the same {key} as a fresh run"
    crossed = _set(panel, tool_limit=min(60_000, 1_000 * (above // 1_000 + 1)))
    assert crossed["run"] is not first["run"], "a limit past a result's size re-runs the scenario"


def test_the_busy_line_shows_only_after_a_slow_computation(monkeypatch):
    """A computation over SLOW_S makes the next one say "re-running the lab…" first; a fast one
    (a replay) goes straight to its plot, the line a wasted redraw in the browser."""
    from labkit import _panel

    shown = []
    panel, _ = _counting_panel()
    panel.status.observe(lambda change: shown.append(change["new"]), names="value")
    panel._slow = False
    panel.set(n=4)
    assert not any("re-running" in v for v in shown), "fast: no busy line"
    monkeypatch.setattr(_panel, "SLOW_S", -1.0)  # every computation now counts as slow
    panel.set(n=5)
    panel.set(n=6)
    assert sum("re-running" in v for v in shown) == 1, "the move after a slow one says it is busy"
