"""labkit.plots: each figure's data is the records' data — asserted on ``fig.data`` and
``fig.layout``, never on a rendered picture."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from labkit import plots
from labkit.trace import KINDS, CallRecord


def _record(index: int, seen: int, error: str | None = None, **by) -> CallRecord:
    by_kind = dict.fromkeys(KINDS, 0) | {"human": seen} | by
    return CallRecord(index=index, turn=0, stored=seen, seen=sum(by_kind.values()),
                      by_kind=by_kind, messages_stored=1, messages_seen=1, cost=seen / 1e6,
                      error=error)


def _trace(fig, name):
    found = [t for t in fig.data if t.name == name]
    assert len(found) == 1, f"expected one trace named {name!r}, got {[t.name for t in fig.data]}"
    return found[0]


# -- tokens_per_turn --------------------------------------------------------------------------


def test_tokens_per_turn_plots_seen_and_stored_per_call(recorded):
    fig = plots.tokens_per_turn(recorded, window=128_000)
    seen, stored = _trace(fig, "seen by the model"), _trace(fig, "stored (state)")
    assert list(seen.x) == list(range(len(recorded.records)))
    assert list(seen.y) == [r.seen for r in recorded.records]
    assert list(stored.y) == [r.stored for r in recorded.records]
    assert list(stored.x) == list(seen.x)


def test_tokens_per_turn_draws_the_window_line(recorded):
    fig = plots.tokens_per_turn(recorded, window=128_000)
    [line] = fig.layout.shapes
    assert line.type == "line" and line.y0 == line.y1 == 128_000
    assert any("128,000" in a.text for a in fig.layout.annotations)
    assert plots.tokens_per_turn(recorded).layout.shapes == ()  # no window given, no line


def test_tokens_per_turn_draws_window_and_trigger(recorded):
    fig = plots.tokens_per_turn(recorded, window=128_000, trigger=100_000)
    assert sorted(s.y0 for s in fig.layout.shapes) == [100_000, 128_000]
    assert sorted(a.text for a in fig.layout.annotations) == ["trigger 100,000", "window 128,000"]


def test_a_line_far_above_the_data_is_named_at_the_top_not_drawn_to_scale(recorded):
    """The run peaks at ~154k: a 1M window drawn to scale would squash it into the bottom sixth."""
    peak = max(r.seen for r in recorded.records)
    fig = plots.tokens_per_turn(recorded, window=1_000_000, trigger=int(peak * 0.9))
    assert [s.y0 for s in fig.layout.shapes] == [int(peak * 0.9)], "only the near line is drawn"
    [far] = [a for a in fig.layout.annotations if a.text.startswith("↑")]
    assert far.text == f"↑ window 1,000,000: {1_000_000 / peak:.1f}× this run's peak, off the scale"
    assert (far.yref, far.y, far.yanchor) == ("y domain", 1, "bottom"), "above the plot, not at y=1M"
    flipped = plots.tokens_per_turn(recorded, window=int(plots.FAR * peak))  # within reach: drawn
    assert [s.y0 for s in flipped.layout.shapes] == [int(plots.FAR * peak)]


def test_a_fix_is_drawn_beside_its_failure(recorded, overflow_128k):
    fig = plots.tokens_per_turn(overflow_128k, window=128_000, beside={"seen, with the fix": recorded})
    fix = _trace(fig, "seen, with the fix")
    assert list(fix.y) == [r.seen for r in recorded.records] and fix.line.dash == "dash"


@pytest.mark.parametrize("knobs", [{}, {"window": 128_000}, {"window": 128_000, "trigger": 100_000},
                                   {"window": 128_000, "events": [(3, "compaction 1")]}], ids=str)
def test_tokens_per_turn_is_built_valid_without_validating(knobs, overflow_128k):
    """The figure skips plotly's validation for speed: validated again, it is the same figure,
    and its lines sit where plotly's own add_hline puts them."""
    fig = plots.tokens_per_turn(overflow_128k, **knobs)
    assert go.Figure(fig.to_dict()).to_dict() == fig.to_dict(), "every property is one plotly accepts"
    reference = go.Figure(layout={"template": "plotly_white"})
    if "window" in knobs:
        reference.add_hline(y=knobs["window"], line={"color": "black", "width": 2},
                            annotation_text=f"window {knobs['window']:,}", annotation_position="top left")
    if "trigger" in knobs:
        reference.add_hline(y=knobs["trigger"], line={"color": "#FFA15A", "dash": "dash"},
                            annotation_text=f"trigger {knobs['trigger']:,}",
                            annotation_position="bottom left")
    for ours, theirs in zip(fig.layout.shapes, reference.layout.shapes, strict=True):
        assert (ours.xref, ours.x0, ours.x1, ours.y0, ours.line.dash) == \
            (theirs.xref, theirs.x0, theirs.x1, theirs.y0, theirs.line.dash), "the same line"
    for ours, theirs in zip(fig.layout.annotations, reference.layout.annotations, strict=True):
        assert (ours.text, ours.x, ours.xanchor, ours.yanchor) == \
            (theirs.text, theirs.x, theirs.xanchor, theirs.yanchor), "the same label, placed the same"
    ours, theirs = fig.to_dict()["layout"]["template"], reference.to_dict()["layout"]["template"]
    assert ours["layout"] == theirs["layout"], "plotly_white's layout"
    assert ours["data"]["scatter"] == theirs["data"]["scatter"], "plotly_white's scatter defaults"


def test_failed_call_marker_only_when_a_call_failed(recorded, overflow_128k):
    assert "call failed" not in [t.name for t in plots.tokens_per_turn(recorded).data]
    fig = plots.tokens_per_turn(overflow_128k, window=128_000)
    marker = _trace(fig, "call failed")
    last = overflow_128k.records[-1]
    assert list(marker.x) == [last.index] and list(marker.y) == [last.seen]
    assert marker.y[0] > 128_000
    assert "ContextOverflowError" in marker.hovertext[0]


def test_tokens_per_turn_takes_a_list_of_records():
    records = [_record(0, 10), _record(1, 20, error="ContextOverflowError: too long")]
    fig = plots.tokens_per_turn(records)
    assert list(_trace(fig, "seen by the model").y) == [10, 20]
    assert list(_trace(fig, "call failed").x) == [1]


# -- composition ------------------------------------------------------------------------------


def test_composition_has_one_bar_per_kind_summing_to_seen(recorded):
    fig = plots.composition(recorded)
    assert [t.name for t in fig.data] == list(KINDS)
    assert all(t.type == "bar" for t in fig.data)
    assert fig.layout.barmode == "stack"
    for i, rec in enumerate(recorded.records):
        assert sum(t.y[i] for t in fig.data) == rec.seen
        assert all(t.x[i] == rec.index for t in fig.data)


def test_composition_shows_the_summary_slice():
    fig = plots.composition([_record(0, 10, summary=5)])
    assert _trace(fig, "summary").y[0] == 5
    assert sum(t.y[0] for t in fig.data) == 15


# -- cost_curve -------------------------------------------------------------------------------


def test_cost_curve_is_cumulative_and_monotone(recorded, overflow_128k):
    fig = plots.cost_curve(recorded, overflow_128k, names=["1M window", "128k window"])
    assert [t.name for t in fig.data] == ["1M window", "128k window"]
    for trace, run in zip(fig.data, (recorded, overflow_128k), strict=True):
        y = list(trace.y)
        assert len(y) == len(run.records)
        assert y == pytest.approx([sum(r.cost for r in run.records[: i + 1])
                                   for i in range(len(y))])
        assert all(b >= a for a, b in zip(y, y[1:]))
    assert fig.data[0].y[-1] > fig.data[0].y[0] > 0


def test_cost_curve_default_names_and_mismatched_names(recorded):
    assert [t.name for t in plots.cost_curve(recorded, recorded).data] == ["run 1", "run 2"]
    with pytest.raises(ValueError, match="2 runs but 1 names"):
        plots.cost_curve(recorded, recorded, names=["only one"])
    with pytest.raises(ValueError, match="1 runs but 2 names"):
        plots.cost_curve(recorded, names=["a", "b"])


# -- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [plots.tokens_per_turn, plots.composition, plots.cost_curve])
@pytest.mark.parametrize("bad", [42, "records", {"records": []}, [1, 2], [None]])
def test_wrong_input_type_raises_type_error(fn, bad):
    with pytest.raises(TypeError, match="scenario.Run or a list of trace.CallRecord"):
        fn(bad)


def test_token_rulers_one_panel_per_kind_and_bars_match_rows():
    rows = [{"text": k, "ticker": t, "BPE": b, "chars/4": a}
            for k, t, b, a in [("en", "A", 10, 11), ("en", "B", 20, 21), ("zh", "A", 30, 13)]]
    fig = plots.token_rulers(rows)
    assert [tr.name.split()[0] for tr in fig.data] == ["BPE", "chars/4", "BPE", "chars/4"]
    assert list(fig.data[2].y) == [30] and list(fig.data[3].y) == [13]
    assert [a.text for a in fig.layout.annotations] == ["en", "zh"]


def test_token_rulers_rejects_rows_without_the_columns():
    with pytest.raises(ValueError, match="chars/4"):
        plots.token_rulers([{"text": "en", "ticker": "A", "BPE": 1}])
    with pytest.raises(ValueError):
        plots.token_rulers([])


def test_empty_is_a_valid_figure_with_only_its_title():
    fig = plots.empty("Not a valid setting: keep")
    assert not fig.data and fig.layout.title.text == "Not a valid setting: keep"
    assert go.Figure(fig.to_dict()).to_dict() == fig.to_dict(), "every property is one plotly accepts"


def test_tokens_per_turn_holds_plain_lists_as_a_figure_built_from_lists_does(overflow_128k, monkeypatch):
    """The per-call values are handed to plotly as ``_Flat`` lists, and the template as a
    ``_Pickled`` dict (each copied at once when plotly deep-copies them): the figure holds plain
    lists and a plain template of its own, equal to one built from plain lists and dicts."""
    import copy

    marks = [(r.index, f"mark {r.index}") for r in overflow_128k.records[::5]]
    fig = plots.tokens_per_turn(overflow_128k, window=128_000, trigger=100_000, events=marks)
    values = [v for trace in fig._data for v in trace.values() if isinstance(v, list)]
    assert len(values) >= 6 and all(type(v) is list for v in values), "no _Flat left in the figure"
    template = fig._layout["template"]
    assert type(template) is dict and template == copy.deepcopy(dict(plots._WHITE)), "the template, copied"
    assert template["layout"] is not plots._WHITE["layout"], "a copy of its own"
    monkeypatch.setattr(plots, "_Flat", list)
    monkeypatch.setattr(plots, "_WHITE", dict(plots._WHITE))
    plain = plots.tokens_per_turn(overflow_128k, window=128_000, trigger=100_000, events=marks)
    assert fig.to_dict() == plain.to_dict() and fig._data == plain._data, "the same figure"
    assert fig._layout == plain._layout, "the same layout"


def test_a_short_run_is_ticked_in_whole_model_calls():
    """Plotly ticks an axis of two or three calls at 0.5; per-call figures of up to 12 calls tick
    every call, longer ones keep plotly's own ticks."""
    from labkit import LabModel, plots, scenario
    short = scenario.run(LabModel(window=1_000_000), turns=(scenario.NEEDLE_QUESTION,))
    full = scenario.run(LabModel(window=1_000_000))
    assert len(short.records) <= 12 < len(full.records)
    for draw in (plots.tokens_per_turn, plots.cost_curve, plots.composition):
        assert draw(short).layout.xaxis.dtick == 1, draw.__name__
        assert draw(full).layout.xaxis.dtick is None, draw.__name__
        assert draw(short).layout.xaxis.title.text == "model call"
