"""ipywidgets panels: sliders that re-run the lab and redraw a figure, in one call from a notebook.

Notebook 04 introduces them with :func:`offload_panel` (each move shows what running the scenario
at that setting shows, walked from a few real runs: ``labkit._offload_runs``); notebook 07 adds
:func:`knobs`, which replays a recorded run under new summarization knobs (``labkit.replay``);
notebook 16 adds :func:`clinic`, one button per failure mode of ``labkit.diagnose``. Each is a
:class:`Panel` (``labkit._panel``): ``.controls``, ``.result`` (a dict with a ``"figure"``),
``.drawn`` (the figure on screen; in JupyterLab redrawn in place) and ``.widget``. Nothing is
displayed when a panel is made, nothing happens at import, and the computing functions return
their results and never print (nbval-safe). What it leaves out: replaying a clinic case (each
button runs the failure and its fix).
"""

from __future__ import annotations

from labkit._course import require

require("labkit.widgets", "ipywidgets", "plotly")  # before them: a missing one named with its extra
# isort: split

from collections.abc import Mapping
from html import escape
from typing import Any

import ipywidgets as ipw

from labkit import diagnose, plots, scenario, tables
from labkit._clinic_figures import symptom as symptom_figure
from labkit._offload_runs import OffloadRuns
from labkit._panel import Panel, check_knob
from labkit._paths import RESULTS_DIR
from labkit.model import LabModel
from labkit.offload import OffloadMiddleware
from labkit.replay import Trajectory, replay, trajectory

__all__ = ["Panel", "clinic", "clinic_result", "knobs", "knobs_result", "offload_panel", "offload_result"]

_STYLE = {"description_width": "180px"}  # "keep (messages; 0 = off)" whole


def _set_up(controls: Mapping[str, ipw.Widget], initial: Mapping[str, Any]) -> None:
    """Each control set to its knob's initial value (checked against its range), 590 px wide with
    a 180 px label; sliders recompute when released, not while dragged."""
    for knob, value in initial.items():
        control = controls[knob]
        control.value = check_knob(knob, control, value)
        control.layout, control.style = ipw.Layout(width="590px"), _STYLE
        if not isinstance(control, ipw.Checkbox):
            control.continuous_update = False


# -- notebook 04: offloading tool results --------------------------------------------------------


def offload_result(window: int = 128_000, offload: bool = True, tool_limit: int = 20_000,
                   export_scale: float = 1.0) -> dict:
    """One run of the scenario with labkit's :class:`~labkit.offload.OffloadMiddleware` and the
    numbers a learner reads off it: ``run``, ``score``, ``peak`` (most tokens one call saw),
    ``evicted`` (paths written), ``overflowed``, ``figure``, a one-line ``status`` and ``weighed``
    (each tool result's tokens, as compared with ``tool_limit``). Notebook 04."""
    run, weighed = _run_at(window, offload, tool_limit, export_scale)
    return _offload_view(run, weighed, window, offload, tool_limit, export_scale)


def _run_at(window: int, offload: bool, tool_limit: int, export_scale: float) -> tuple:
    middleware = [OffloadMiddleware(tool_limit=tool_limit)] if offload else []
    run = scenario.run(LabModel(window=window), middleware=middleware, export_scale=export_scale)
    return run, tuple(middleware[0].weighed) if offload else ()


def _offload_view(run, weighed: tuple, window: int, offload: bool, tool_limit: int,
                  export_scale: float) -> dict:
    peak = max((r.seen for r in run.records), default=0)
    evicted = sorted(p for p in run.files if p.startswith(f"{RESULTS_DIR}/"))
    setting = f"evict results over {tool_limit:,} tokens" if offload else "no offloading"
    figure = plots.tokens_per_turn(run, window=window, title=(
        f"Tokens per model call — {setting}, exports ×{export_scale:g}, window {window:,}"))
    failed = next((r.index for r in run.records if r.error), None)
    outcome = (f"<b>overflow</b>: call {failed} did not fit the window" if failed is not None else
               f"needle answered correctly: <b>{'yes' if run.score.needle_correct else 'no'}</b>")
    status = (f"{outcome} · peak <b>{peak:,}</b> of {window:,} tokens · "
              f"<b>{len(evicted)}</b> result{'s' * (len(evicted) != 1)} evicted to files")
    return {"run": run, "score": run.score, "peak": peak, "evicted": evicted,
            "overflowed": run.error is not None, "figure": figure, "status": status, "weighed": weighed,
            "values": {"window": window, "offload": offload, "tool_limit": tool_limit,
                       "export_scale": export_scale}}


def offload_panel(window: int = 128_000, offload: bool = True, tool_limit: int = 20_000,
                  export_scale: float = 1.0) -> Panel:
    """Sliders for the eviction limit, the tool output size and the window; each move shows what
    :func:`offload_result` — the scenario run at that setting — shows, tokens per model call with
    the window line, without running it: the panel runs the scenario three times when it is made
    (the most and the least evicted, and no offloading) and walks each setting from the run the lab
    model agrees with (``labkit._offload_runs``; a setting where it decides otherwise is run).

    Knobs: ``window`` 16,000–200,000 tokens; ``offload`` on or off; ``tool_limit`` 2,000–60,000
    tokens (a result over it is evicted); ``export_scale`` 0.1–2.0 (every export resized).
    Notebook 04.
    """
    controls = {
        "window": ipw.IntSlider(128_000, min=16_000, max=200_000, step=8_000, readout_format=",d",
                                description="window (tokens)"),
        "offload": ipw.Checkbox(True, description="offload large results", indent=True),
        "tool_limit": ipw.IntSlider(20_000, min=2_000, max=60_000, step=1_000, readout_format=",d",
                                    description="tool_limit (tokens)"),
        "export_scale": ipw.FloatSlider(1.0, min=0.1, max=2.0, step=0.1, readout_format=".1f",
                                        description="export_scale (×)"),
    }
    _set_up(controls, {"window": window, "offload": offload, "tool_limit": tool_limit,
                       "export_scale": export_scale})
    controls["offload"].observe(
        lambda change: setattr(controls["tool_limit"], "disabled", not change["new"]), names="value")
    controls["tool_limit"].disabled = not offload
    limits, scales = controls["tool_limit"], controls["export_scale"]
    steps = round((scales.max - scales.min) / scales.step)
    runs = OffloadRuns(_run_at,  # run first: the most and the least evicted, and none (labkit._offload_runs)
                       [(True, limits.min, export_scale), (True, limits.max, scales.min),
                        (False, tool_limit, export_scale)],
                       [round(scales.min + k * scales.step, 10) for k in range(steps + 1)])

    def result(window: int, offload: bool, tool_limit: int, export_scale: float) -> dict:
        run, weighed = runs(window, offload, tool_limit, export_scale)
        return _offload_view(run, weighed, window, offload, tool_limit, export_scale)
    return Panel(result, controls, collect=True)


# -- notebook 07: summarization knobs, replayed ------------------------------------------------


def knobs_result(run: Any, window: int = 128_000, trigger: float = 0.85, keep: float = 0.10,
                 keep_messages: int = 0, keep_figures: bool = False, archive: bool = True,
                 profile: bool = True) -> dict:
    """One replay (:func:`labkit.replay.replay`) of a recorded run under these knobs, and what a
    learner reads off it: ``replay``, ``figure`` (tokens per call, trigger line, compaction
    markers), ``events`` and ``totals`` (``labkit.tables`` tables), a ``status`` line with both
    tables, and ``error`` when the knobs are not a valid setting (keep at or above the trigger).

    ``trigger`` and ``keep`` are fractions of the window; ``keep_messages`` > 0 keeps that many
    messages instead of ``keep``; ``profile=False`` ignores both fractions and uses deepagents'
    no-profile fallback (170,000 tokens / 6 messages). ``run`` is a ``scenario.Run`` or, faster,
    its ``replay.trajectory``. Notebook 07.
    """
    values = {"window": window, "trigger": trigger, "keep": keep, "keep_messages": keep_messages,
              "keep_figures": keep_figures, "archive": archive, "profile": profile}
    knobs = {} if not profile else {
        "trigger": ("fraction", trigger),
        "keep": ("messages", keep_messages) if keep_messages else ("fraction", keep)}
    try:
        result = replay(run, window=window, profile=profile, keep_figures=keep_figures,
                        archive=archive, **knobs)
    except ValueError as e:
        figure = plots.empty(f"Not a valid setting: {e}")
        return {"replay": None, "figure": figure, "events": tables.table([]), "totals": tables.table([]),
                "error": str(e), "values": values,
                "status": f"<b>not a valid setting</b>: {escape(str(e))}"}
    kind, n = result.knobs["trigger"]
    line = int(window * n) if kind == "fraction" else n if kind == "tokens" else None
    title = (f"Tokens per model call — replayed: trigger {_size(result.knobs['trigger'])}, "
             f"keep {_size(result.knobs['keep'])}, window {window:,}")
    figure = plots.tokens_per_turn(result, window=window, trigger=line, events=result.event_marks(),
                                   title=title)
    events = tables.table(result.rows(), columns=["event", "call", "reason", "cut", "messages in state"])
    totals = tables.table([{
        "model calls": result.calls, "compactions": len(result.events),
        "first overflow": "none" if result.overflow is None else f"call {result.overflow}",
        "tokens sent": result.tokens_sent, "of which summary calls": result.summary_input,
        "cost ($)": round(result.cost, 4), "with a prompt cache ($)": round(result.cached_cost, 4),
        "needle": result.needle}])
    died = "" if result.died_at is None else f"<b>the run dies</b> at call {result.died_at} · "
    status = (f"{died}needle: <b>{result.needle}</b> — {_NEEDLE_WORDS[result.needle]} · "
              f"<b>{len(result.events)}</b> compaction{'s' * (len(result.events) != 1)} · "
              f"{result.tokens_sent:,} tokens sent (${result.cost:.2f}; "
              f"${result.cached_cost:.2f} with a prompt cache)"
              f"{totals._repr_html_()}{events._repr_html_() if result.events else ''}")
    return {"replay": result, "figure": figure, "events": events, "totals": totals, "error": None,
            "values": values, "status": status}


_NEEDLE_WORDS = {
    "visible": "its exact line is in what the last call sees",
    "archive": "folded, but the summary points to the archive: recoverable with grep",
    "lost": "folded with no archive: only the summary is left, without the figure",
    "absent": "never fetched in this run",
    "overflow": "the run never gets to the question",
}


def _size(size: tuple) -> str:
    kind, n = size
    return f"{n:.0%}" if kind == "fraction" else f"{n:,} {kind}"


def knobs(run: Any = None, window: int = 128_000, trigger: float = 0.85, keep: float = 0.10,
          keep_messages: int = 0, keep_figures: bool = False, archive: bool = True,
          profile: bool = True) -> Panel:
    """Sliders for summarization's trigger, keep and window over a recorded run; each move
    replays the policy (:func:`knobs_result`, milliseconds — no agent loop) and redraws tokens per
    model call with the trigger line and compaction markers, above a table of events, cost and
    the needle's fate.

    ``run`` is a recorded ``scenario.Run`` (default: the scenario on a 1,000,000-token window,
    where nothing is compacted or fails). Knobs: ``window`` 16,000–200,000 tokens; ``trigger``
    0.10–1.00 and ``keep`` 0.01–0.50 of the window; ``keep_messages`` 0–20 (0: use ``keep``);
    ``keep_figures`` and ``archive`` on or off; ``profile`` off for the no-profile fallback.
    Notebook 07.
    """
    if run is None:
        run = scenario.run(LabModel(window=1_000_000))
    traj = run if isinstance(run, Trajectory) else trajectory(run)
    controls = {
        "window": ipw.IntSlider(128_000, min=16_000, max=200_000, step=4_000, readout_format=",d",
                                description="window (tokens)"),
        "trigger": ipw.FloatSlider(0.85, min=0.10, max=1.0, step=0.05, readout_format=".2f",
                                   description="trigger (fraction)"),
        "keep": ipw.FloatSlider(0.10, min=0.01, max=0.50, step=0.01, readout_format=".2f",
                                description="keep (fraction)"),
        "keep_messages": ipw.IntSlider(0, min=0, max=20, description="keep (messages; 0 = off)"),
        "keep_figures": ipw.Checkbox(False, description="summary keeps exact figures", indent=True),
        "archive": ipw.Checkbox(True, description="archive folded messages", indent=True),
        "profile": ipw.Checkbox(True, description="model has a profile", indent=True),
    }
    _set_up(controls, {"window": window, "trigger": trigger, "keep": keep, "keep_messages": keep_messages,
                       "keep_figures": keep_figures, "archive": archive, "profile": profile})

    def enable(_=None) -> None:  # a knob that means nothing in this setting is greyed out
        on = controls["profile"].value
        controls["trigger"].disabled = controls["keep_messages"].disabled = not on
        controls["keep"].disabled = not on or controls["keep_messages"].value > 0

    for knob in ("profile", "keep_messages"):
        controls[knob].observe(enable, names="value")
    enable()
    return Panel(lambda **values: knobs_result(traj, **values), controls, collect=True)


# -- notebook 16: the clinic's failure-mode buttons ----------------------------------------------


def clinic_result(mode: str = "hard_overflow", cases: Mapping[str, tuple] | None = None) -> dict:
    """One failure mode and its fix (``labkit.diagnose``), and what an instructor shows of them:
    ``broken`` and ``fixed`` (``diagnose.Case``), ``before`` and ``after`` (their findings),
    ``compare`` (a table), ``figure`` (the mode's own symptom, the failure and its fix on one plot:
    ``labkit._clinic_figures``) and a ``status`` line with the diagnosis of both.

    ``cases`` maps a mode to an already run ``(broken, fixed)`` pair; other modes are run here.
    Notebook 16.
    """
    broken, fixed = (cases or {}).get(mode) or (diagnose.reproduce(mode), diagnose.fix(mode))
    for case, want in ((broken, False), (fixed, True)):
        if not isinstance(case, diagnose.Case) or case.mode != mode or case.fixed is not want:
            raise ValueError(f"cases[{mode!r}] must be (diagnose.reproduce({mode!r}), "
                             f"diagnose.fix({mode!r})), in that order")
    label = diagnose.LABELS[mode]
    figure = symptom_figure(broken, fixed)
    before, after = broken.findings, fixed.findings
    table = diagnose.compare(broken, fixed)
    symptom = diagnose.row(mode).en.symptom
    status = (f"<b>{escape(label)}</b> — {escape(symptom)}{table._repr_html_()}"
              f"<b>diagnose(failure)</b>{diagnose.report(before)._repr_html_()}"
              f"<b>diagnose(with the fix)</b>{diagnose.report(after)._repr_html_()}")
    return {"mode": mode, "broken": broken, "fixed": fixed, "before": before, "after": after,
            "compare": table, "figure": figure, "status": status}


def clinic(mode: str = "hard_overflow", cases: Mapping[str, tuple] | None = None) -> Panel:
    """One button per failure mode (``diagnose.MODES``): a press runs the failure and its fix
    (:func:`clinic_result`; a second press of the same button is instant, from the cache) and
    shows the mode's symptom, then their diagnosis. Pass ``cases`` to reuse runs already made.
    Notebook 16.
    """
    buttons = ipw.ToggleButtons(options=[(diagnose.LABELS[m], m) for m in diagnose.MODES],
                                description="failure mode",
                                style={"description_width": "100px", "button_width": "170px"})
    buttons.value = check_knob("mode", buttons, mode)
    return Panel(lambda mode: clinic_result(mode, cases), {"mode": buttons}, figure_first=True)
