"""Plotly figures of what the model saw, drawn from ``labkit.trace`` records.

Notebook 01 introduces them. Each function takes data in (a ``scenario.Run`` or a list of
``CallRecord``) and returns a ``plotly.graph_objects.Figure``; nothing is shown or styled
globally. Tests and notebooks assert on ``fig.data`` — never on the rendered output.
What it leaves out: dashboards and live updates (``labkit.widgets`` redraws a figure per knob).
"""

from __future__ import annotations

from labkit._course import require

require("labkit.plots", "plotly")  # before them: a missing one named with its extra
# isort: split

import pickle
from collections.abc import Mapping, Sequence
from itertools import accumulate

import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from labkit import caching
from labkit.trace import KINDS, CallRecord

__all__ = ["composition", "context_tokens", "cost_curve", "empty", "token_rulers", "tokens_per_turn"]

_COLORS = {"system": "#636EFA", "tools": "#AB63FA", "human": "#00CC96", "ai": "#FFA15A",
           "tool": "#EF553B", "summary": "#19D3F3"}


def _records(run_or_records) -> list[CallRecord]:
    records = getattr(run_or_records, "records", run_or_records)
    if isinstance(records, str) or not isinstance(records, Sequence):
        raise TypeError(f"pass a scenario.Run or a list of trace.CallRecord, not "
                        f"{type(run_or_records).__name__}")
    for i, r in enumerate(records):
        if not isinstance(r, CallRecord):
            raise TypeError(f"pass a scenario.Run or a list of trace.CallRecord; item {i} is a "
                            f"{type(r).__name__}")
    return list(records)


# plotly_white resolved once, not on every figure; of its per-trace defaults only scatter's are
# kept (the only trace tokens_per_turn draws): the rest would be copied on every slider move.
class _Pickled(dict):
    """plotly_white's JSON for a figure's layout: plotly deep-copies it into every figure it
    builds, item by item; a copy of this is the same plain dict, made at once by pickling."""

    def __deepcopy__(self, memo) -> dict:
        return pickle.loads(pickle.dumps(dict(self), pickle.HIGHEST_PROTOCOL))


_WHITE = pio.templates["plotly_white"].to_plotly_json()
_WHITE = _Pickled(layout=_WHITE["layout"], data={"scatter": _WHITE["data"]["scatter"]})


FAR = 4.0  # a reference line higher than this many times a figure's data is named, not drawn (_figure)
_FRAME = {"legend": {"orientation": "h", "y": -0.2}, "margin": {"l": 60, "r": 20, "t": 104, "b": 60},
          "height": 460}  # every per-call figure's legend, margins and height (_layout, _figure)
TITLE_LINE = 60  # characters: a longer title goes on two lines, at its " — " (_title)


def _title(text: str) -> dict:
    """A figure's title, below the strip where plotly's toolbar shows on hover (it covered the
    right end of a long title), with room under it for a line named off the scale (_figure). A
    title longer than ``TITLE_LINE`` is broken at its first " — ": plotly never wraps one, and at
    150% zoom on a 1280-pixel projector a panel's ran past the figure's right edge."""
    if len(text) > TITLE_LINE and " — " in text:
        text = text.replace(" — ", "<br>", 1)
    # plotly raises a title by a line for each line it adds: the pad takes it down again
    return {"text": text, "yref": "container", "y": 1, "yanchor": "top",
            "pad": {"t": 32 + 18 * text.count("<br>")}}


def _calls_axis(calls: int) -> dict:
    """The x axis of a per-call figure: whole model calls — plotly ticks a short run at 0.5."""
    return {"title": {"text": "model call"}, **({"dtick": 1} if calls <= 12 else {})}


def _layout(fig: go.Figure, title: str, ytitle: str) -> go.Figure:
    calls = max((len(t.x) for t in fig.data if getattr(t, "x", None) is not None), default=0)
    fig.update_layout(title=_title(title), xaxis=_calls_axis(calls), yaxis_title=ytitle,
                      template="plotly_white", **_FRAME)
    return fig


class _Flat(list):
    """A list of numbers or strings for a trace: plotly deep-copies each trace as it builds a
    figure, item by item; a copy of this is the plain list, made at once (a slider's figure)."""

    def __deepcopy__(self, memo) -> list:
        return list(self)


def off_scale(y: float, peak: float) -> bool:
    """Is a reference line at ``y`` more than ``FAR`` times the data's ``peak`` (named, not drawn)?"""
    return bool(peak) and y > FAR * peak


def off_scale_text(label: str, y: float, peak: float) -> str:
    """What a figure says at its top for a reference line :func:`off_scale` keeps off it."""
    return f"↑ {label}: {y / peak:.1f}× this run's peak, off the scale"


def _figure(traces: list[dict], title: str, ytitle: str, lines: Sequence[dict] = ()) -> go.Figure:
    """A figure built from plain specs without plotly's per-property validation.

    Validation is most of a figure's cost (a slider redraws one per move: ~50 ms validated, ~4 ms
    not, ``bench/bench_sliders.py``); the specs here are fixed, and ``tests/test_plots.py`` checks
    that each figure is the same once validated. ``lines`` are horizontal lines across the plot,
    ``{"y", "label", "color", "dash", "width", "below"}``, drawn as plotly's ``add_hline`` would —
    except a line more than ``FAR`` times the data's peak: drawn to scale it would squash the data
    into the bottom of the plot, so it is named at the top, with how far above the peak it lies.
    """
    peak = max((y for t in traces for y in t.get("y") or () if isinstance(y, (int, float))), default=0)
    near = [ln for ln in lines if not off_scale(ln["y"], peak)]
    shapes = [{"type": "line", "xref": "x domain", "x0": 0, "x1": 1, "yref": "y", "y0": ln["y"],
               "y1": ln["y"], "line": {"color": ln["color"], "width": ln.get("width", 2),
                                        **({"dash": ln["dash"]} if ln.get("dash") else {})}}
              for ln in near]
    notes = [{"text": ln["label"], "xref": "x domain", "x": 0, "yref": "y", "y": ln["y"],
              "showarrow": False, "xanchor": "left", "yanchor": "top" if ln.get("below") else "bottom"}
             for ln in near]
    notes += [{"text": off_scale_text(ln["label"], ln["y"], peak),
               "xref": "x domain", "x": 1, "yref": "y domain", "y": 1, "yshift": 18 * i,
               "showarrow": False, "xanchor": "right", "yanchor": "bottom", "font": {"color": ln["color"]}}
              for i, ln in enumerate(ln for ln in lines if ln not in near)]
    calls = max((len(t.get("x") or ()) for t in traces), default=0)
    layout = {"title": _title(title), "xaxis": _calls_axis(calls),
              "yaxis": {"title": {"text": ytitle}}, "template": _WHITE, **_FRAME,
              **({"shapes": shapes} if shapes else {}), **({"annotations": notes} if notes else {})}
    return go.Figure({"data": traces, "layout": layout}, _validate=False)


def tokens_per_turn(run_or_records, window: int | None = None, trigger: int | None = None,
                    title: str = "Tokens per model call",
                    events: Sequence[tuple[int, str]] | None = None,
                    beside: Mapping[str, object] | None = None) -> go.Figure:
    """Tokens the model saw on each call (and the stored history beside it), with the window
    line and, if given, a trigger line. A call that failed is marked with an x.

    ``events`` — ``(call index, label)`` pairs, such as ``trace.compaction_marks(run)`` — are
    marked on the "seen" line at the first call that saw each compacted view. ``beside`` maps a
    name to another run (or its records), whose "seen" line is drawn dashed over this one: a fix
    beside its failure (notebook 16's clinic). Notebook 01."""
    records = _records(run_or_records)
    x = _Flat(r.index for r in records)
    traces = [
        {"type": "scatter", "x": x, "y": _Flat(r.stored for r in records), "name": "stored (state)",
         "mode": "lines", "line": {"dash": "dot", "color": "#888"}},
        {"type": "scatter", "x": x, "y": _Flat(r.seen for r in records), "name": "seen by the model",
         "mode": "lines+markers", "line": {"color": "#EF553B"}}]
    failed = [r for r in records if r.error]
    if failed:
        traces.append({"type": "scatter", "x": [r.index for r in failed], "y": [r.seen for r in failed],
                       "name": "call failed", "mode": "markers", "hovertext": [r.error for r in failed],
                       "marker": {"symbol": "x", "size": 14, "color": "black"}})
    if events:
        traces.append(_events(records, events))
    for name, other in (beside or {}).items():  # dashed, so the line under it shows through
        others = _records(other)
        traces.append({"type": "scatter", "x": _Flat(r.index for r in others), "name": name,
                       "y": _Flat(r.seen for r in others), "mode": "lines+markers",
                       "line": {"color": "#00CC96", "dash": "dash"}})
    lines = []
    if window:
        lines.append({"y": window, "label": f"window {window:,}", "color": "black"})
    if trigger:
        lines.append({"y": trigger, "label": f"trigger {trigger:,}", "color": "#FFA15A", "dash": "dash",
                      "below": True})
    return _figure(traces, title, "tokens", lines)


def empty(title: str) -> go.Figure:
    """A tokens-per-call figure with nothing drawn, only a title that says why (a panel's setting
    that cannot be replayed). Built like the others, without validation: a slider lands on it."""
    return _figure([], title, "tokens")


def _events(records: list[CallRecord], events) -> dict:
    by_index = {r.index: r for r in records}
    marks = list(events)
    for i, mark in enumerate(marks):
        if not (isinstance(mark, (tuple, list)) and len(mark) == 2 and mark[0] in by_index):
            raise ValueError(f"events must be (call index, label) pairs naming a recorded call; "
                             f"item {i} is {mark!r}")
    return {"type": "scatter", "x": _Flat(i for i, _ in marks),
            "y": _Flat(by_index[i].seen for i, _ in marks),
            "name": "compaction", "mode": "markers", "hovertext": _Flat(str(label) for _, label in marks),
            "marker": {"symbol": "triangle-down", "size": 13, "color": _COLORS["summary"],
                       "line": {"color": "black", "width": 1}}}


def composition(run_or_records, title: str = "What the model saw, by kind") -> go.Figure:
    """Stacked bars: each call's context split into system, tool schemas, human, AI, tool
    results and summary. Notebook 03."""
    records = _records(run_or_records)
    fig = go.Figure()
    for kind in KINDS:
        fig.add_bar(x=[r.index for r in records], y=[r.by_kind[kind] for r in records], name=kind,
                    marker_color=_COLORS[kind])
    fig.update_layout(barmode="stack")
    return _layout(fig, title, "tokens")


def cost_curve(*runs, names: Sequence[str] | None = None,
               title: str = "Cumulative cost (illustrative prices)") -> go.Figure:
    """Cumulative dollars over model calls, one line per run: every call re-sends the history,
    so cost grows with the square of the run's length. Notebook 01."""
    names = list(names or [f"run {i + 1}" for i in range(len(runs))])
    if len(names) != len(runs):
        raise ValueError(f"got {len(runs)} runs but {len(names)} names")
    fig = go.Figure()
    for run, name in zip(runs, names):
        records = _records(run)
        fig.add_scatter(x=[r.index for r in records], y=list(accumulate(r.cost for r in records)),
                        name=name, mode="lines+markers")
    fig.update_yaxes(tickprefix="$")
    return _layout(fig, title, "dollars")


def cache_curve(run, prices: str = "openai-like", rule: str = "openai",
                title: str = "Cumulative cost, with and without a prompt cache (illustrative prices)"
                ) -> go.Figure:
    """Cumulative dollars over model calls: every input token at the full price, and with the
    prefix each call shares with the calls before it read from a cache (``labkit.caching``).
    Notebook 01."""
    records = [r for r in _records(run) if not r.error]
    tier, law = caching.TIERS[prices], caching.RULES[rule]
    plain = [(r.seen * tier.input + r.output_tokens * tier.output) / 1e6 for r in records]
    fig = go.Figure()
    cached = [caching.call_cost(r, tier, law) for r in records]
    for name, costs in (("no cache: every token at the input price", plain),
                        (f"with a prompt cache ({law.name})", cached)):
        fig.add_scatter(x=[r.index for r in records], y=list(accumulate(costs)), name=name,
                        mode="lines+markers")
    fig.update_yaxes(tickprefix="$")
    return _layout(fig, title, "dollars")


def token_rulers(rows, title: str = "Tokens per tool result: real BPE vs the chars/4 estimate") -> go.Figure:
    """One panel per kind of text, with BPE and chars/4 bars per ticker. Notebook 02.

    ``rows`` are dicts with ``"text"`` (the panel), ``"ticker"``, ``"BPE"`` and ``"chars/4"``.
    """
    rows = list(rows)
    missing = [k for k in ("text", "ticker", "BPE", "chars/4") if rows and k not in rows[0]]
    if not rows or missing:
        raise ValueError("token_rulers needs rows with text, ticker, BPE and chars/4; "
                         f"missing {missing or 'rows'}")
    kinds = list(dict.fromkeys(r["text"] for r in rows))
    fig = make_subplots(rows=1, cols=len(kinds), subplot_titles=kinds, horizontal_spacing=0.08)
    for col, kind in enumerate(kinds, start=1):
        part = [r for r in rows if r["text"] == kind]
        for key, name, color in (("BPE", "BPE (what the model counts)", "#EF553B"),
                                 ("chars/4", "chars/4 (the estimate)", "#636EFA")):
            fig.add_bar(x=[r["ticker"] for r in part], y=[r[key] for r in part], name=name,
                        marker_color=color, legendgroup=key, showlegend=col == 1, row=1, col=col)
    fig.update_layout(title=_title(title), template="plotly_white", height=420, yaxis_title="tokens",
                      legend={"orientation": "h", "y": -0.15})
    return fig


def context_tokens(runs: Mapping[str, Mapping[str, Sequence[int]]],
                   title: str = "Tokens per context: the largest request, and the run's input") -> go.Figure:
    """Two panels for isolation: the largest request of every context, and each run's input
    tokens stacked by context. Notebook 12.

    ``runs`` maps a run's name to its contexts, each a label and the input tokens of that
    context's model calls — ``[r.seen for r in records]`` for a Recorder, or
    ``[c.input_tokens for c in calls]`` for a model's log. The first context of a run is drawn
    darker: it is the parent (or the only agent).
    """
    if not isinstance(runs, Mapping) or not runs:
        raise ValueError("context_tokens needs {run name: {context label: [tokens per call]}}")
    for run, contexts in runs.items():
        if not isinstance(contexts, Mapping) or not contexts or not all(
                isinstance(v, Sequence) and v and all(isinstance(n, int) for n in v)
                for v in contexts.values()):
            raise ValueError(f"run {run!r}: give each context a non-empty list of token counts")
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=("Largest request, per context", "Input tokens over the run"))
    palette = ["#EF553B", "#636EFA", "#00CC96", "#AB63FA", "#FFA15A"]
    for k, (run, contexts) in enumerate(runs.items()):
        color = palette[k % len(palette)]
        names = list(contexts)
        fig.add_bar(x=[f"{run}: {c}" for c in names], y=[max(contexts[c]) for c in names],
                    name=run, marker_color=color, legendgroup=run, row=1, col=1,
                    marker_opacity=[1.0] + [0.55] * (len(names) - 1))
        for i, c in enumerate(names):
            fig.add_bar(x=[run], y=[sum(contexts[c])], name=f"{run}: {c}", legendgroup=run,
                        showlegend=False, marker_color=color, marker_opacity=1.0 if i == 0 else 0.55,
                        marker_line={"color": "white", "width": 1}, hovertext=c, row=1, col=2)
    fig.update_layout(title=_title(title), template="plotly_white", barmode="stack", height=440,
                      legend={"orientation": "h", "y": -0.3}, margin={"l": 60, "r": 20, "t": 100, "b": 60})
    fig.update_yaxes(title_text="tokens", row=1, col=1)
    return fig
