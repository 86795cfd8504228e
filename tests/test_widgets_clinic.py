"""labkit.widgets.clinic: one button per failure mode; a press (a control's value, as the browser
sets it, or ``panel.set``) runs the failure and its fix and returns their diagnosis and figure —
read from the returned dict and the figure's data, never from a rendered picture."""

from __future__ import annotations

import ipywidgets as ipw
import plotly.graph_objects as go
import pytest

from labkit import diagnose, widgets


@pytest.fixture(scope="module")
def cases():
    return {m: (diagnose.reproduce(m), diagnose.fix(m)) for m in ("hard_overflow", "orphan", "raw_dump")}


@pytest.fixture
def panel(cases):
    return widgets.clinic(cases=cases)


def _trace(fig, name):
    [trace] = [t for t in fig.data if t.name == name]
    return trace


def test_one_button_per_failure_mode(panel):
    buttons = panel.controls["mode"]
    assert isinstance(buttons, ipw.ToggleButtons)
    assert [value for _, value in buttons.options] == list(diagnose.MODES)
    assert [label for label, _ in buttons.options] == [diagnose.LABELS[m] for m in diagnose.MODES]
    assert panel.result["mode"] == buttons.value == "hard_overflow"


def test_a_press_shows_the_failure_its_fix_and_both_diagnoses(panel, cases):
    panel.controls["mode"].value = "orphan"  # what a click does
    result = panel.result
    broken, fixed = cases["orphan"]
    assert result["broken"] is broken and result["fixed"] is fixed
    assert [f.key for f in result["before"]] == ["orphan"] and result["after"] == []
    fig = result["figure"]
    assert list(_trace(fig, "seen by the model").y) == [r.seen for r in broken.run.records]
    assert list(_trace(fig, "seen, with the fix").y) == [r.seen for r in fixed.run.records]
    assert list(_trace(fig, "call failed").x) == [r.index for r in broken.run.records if r.error]
    assert [s.y0 for s in fig.layout.shapes] == [broken.window]
    assert "orphan" in result["status"] and "no finding" in result["status"]
    assert panel.status.value == result["status"]
    drawn = panel.view.widget.outputs[0]["data"]["application/vnd.plotly.v1+json"]
    assert next(t for t in drawn["data"] if t["name"] == "seen, with the fix")["y"] == \
        [r.seen for r in fixed.run.records]


def test_set_returns_the_result_and_a_second_press_is_cached(panel):
    first = panel.set(mode="raw_dump")
    assert {f.key for f in first["before"]} == {"hard_overflow", "raw_dump"} and first["after"] == []
    panel.set(mode="hard_overflow")
    assert panel.set(mode="raw_dump") is first


def test_a_mode_not_given_is_run_on_the_press(cases):
    panel = widgets.clinic(cases=cases)
    result = panel.set(mode="tool_tax")
    assert result["broken"].mode == "tool_tax" and not result["broken"].fixed and result["fixed"].fixed
    assert [f.key for f in result["before"]] == ["tool_tax"] and result["after"] == []
    assert result["compare"].column("findings") == ["tool_tax", "none"]


def test_an_unknown_mode_is_refused_and_changes_nothing(panel):
    before = panel.result
    with pytest.raises(ValueError, match="mode must be one of 'hard_overflow'"):
        panel.set(mode="nope")
    with pytest.raises(ValueError, match="mode must be one of"):
        widgets.clinic(mode="nope")
    assert panel.result is before and panel.values == {"mode": before["mode"]}


def test_cases_must_be_the_failure_then_the_fix(cases):
    broken, fixed = cases["orphan"]
    with pytest.raises(ValueError, match=r"cases\['orphan'\] must be"):
        widgets.clinic_result("orphan", {"orphan": (fixed, broken)})
    with pytest.raises(ValueError, match=r"cases\['orphan'\] must be"):
        widgets.clinic_result("orphan", {"orphan": cases["raw_dump"]})


def test_a_panel_takes_toggle_buttons_as_a_control():
    seen = []
    panel = widgets.Panel(lambda pick: seen.append(pick) or {"figure": go.Figure()},
                          {"pick": ipw.ToggleButtons(options=[("A", "a"), ("B", "b")])})
    panel.controls["pick"].value = "b"
    assert seen == ["a", "b"] and panel.values == {"pick": "b"}
    with pytest.raises(ValueError, match="pick must be one of 'a', 'b'; got 'c'"):
        panel.set(pick="c")


def test_making_the_clinic_displays_and_prints_nothing(cases, capsys):
    widgets.clinic(cases=cases)
    assert capsys.readouterr() == ("", "")
