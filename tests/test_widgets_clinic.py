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


@pytest.fixture(scope="module")
def symptoms():
    """Each of the five modes drawn by its own symptom, as the clinic's figure (the rest draw
    tokens per call against the window, above)."""
    from labkit._clinic_figures import symptom

    modes = ("goal_lost", "needle_lost", "cost_blowup", "tool_tax", "cache_thrash")
    return {m: symptom(diagnose.reproduce(m), diagnose.fix(m)) for m in modes}


def test_each_figure_names_its_symptom_and_the_fix(symptoms):
    from labkit.diagnose import FIXES

    assert set(FIXES) == set(diagnose.LABELS) == set(diagnose.MODES), "every mode named and its fix"
    for mode, fig in symptoms.items():
        title = fig.layout.title.text
        assert title.startswith(diagnose.LABELS[mode]) and title.endswith(f"the fix: {FIXES[mode]}"), title


def test_soft_amnesia_marks_the_calls_where_the_goal_was_lost_and_the_fix_has_none(symptoms):
    fig = symptoms["goal_lost"]
    assert len(_trace(fig, "asked what its task was (the failure: 3)").x) == 3
    assert len(_trace(fig, "asked what its task was (with the fix: 0)").x) == 0


def test_needle_lost_marks_the_wrong_answer_and_the_right_one(symptoms):
    fig = symptoms["needle_lost"]
    assert len(_trace(fig, "the needle answered wrong").x) == 1
    assert len(_trace(fig, "the needle answered right").x) == 1


def test_cost_blow_up_is_cumulative_dollars_the_failure_above_the_fix(symptoms):
    fig = symptoms["cost_blowup"]
    failure, fix = _trace(fig, "the failure"), _trace(fig, "with the fix")
    assert list(failure.y) == sorted(failure.y) and failure.y[-1] > 3 * fix.y[-1]


def test_the_tax_is_the_tool_schemas_each_call_carries(symptoms):
    fig = symptoms["tool_tax"]
    failure, fix = _trace(fig, "tool schemas (the failure)"), _trace(fig, "tool schemas (with the fix)")
    assert min(failure.y) > 4 * max(fix.y), "thirty unused tools' schemas on every call"


def test_cache_thrash_reads_nothing_and_the_fix_reads_most(symptoms):
    fig = symptoms["cache_thrash"]
    assert max(_trace(fig, "a cache could read (the failure)").y) == 0
    read, sent = _trace(fig, "a cache could read (with the fix)").y, _trace(fig, "sent (with the fix)").y
    assert sum(read) > 0.8 * sum(sent[1:]), "after the first call, most of each request"


def test_the_clinic_shows_its_plot_before_its_tables(panel):
    """On a projector the plot must be on the first screen: buttons, figure, then the tables —
    in JupyterLab and in the book's snapshot."""
    buttons, figure, status = panel.widget.children
    assert buttons is panel.controls["mode"] and figure is panel.view.widget and status is panel.status
    snapshot = panel._repr_mimebundle_()["text/html"]
    assert snapshot.index("plotly") < snapshot.index("diagnose(failure)")
