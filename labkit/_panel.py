"""A panel: controls that recompute a result and redraw its figure (``labkit.widgets`` makes three).

:class:`Panel` checks a knob's value against its control's range, caches results per setting and
draws its figure through ``labkit._render.FigureView`` (in place in JupyterLab). Notebook 04.
What it leaves out: layout beyond a column of controls, status line and figure.
"""

from __future__ import annotations

import gc
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from typing import Any

import ipywidgets as ipw

from labkit._render import FigureView, snapshot_html

__all__ = ["SLOW_S", "Panel", "check_knob"]

SLOW_S = 0.05  # after a computation this long (seconds), the next one first says "re-running the lab…"


def check_knob(knob: str, control: ipw.Widget, value: Any) -> Any:
    """``value`` if the control can hold it, else a ``ValueError`` naming the knob and its range."""
    if isinstance(control, ipw.ToggleButtons):
        allowed = [o[1] if isinstance(o, tuple) else o for o in control.options]
        if value not in allowed:
            raise ValueError(f"{knob} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
        return value
    if isinstance(control, ipw.Checkbox):
        if not isinstance(value, bool):
            raise ValueError(f"{knob} must be True or False, got {value!r}")
        return value
    whole = isinstance(control, ipw.IntSlider)
    number = isinstance(value, int) if whole else isinstance(value, (int, float))
    if isinstance(value, bool) or not number or not control.min <= value <= control.max:
        lo, hi = (f"{control.min:,}", f"{control.max:,}") if whole \
            else (f"{control.min:g}", f"{control.max:g}")
        kind = "a whole number" if whole else "a number"
        raise ValueError(f"{knob} must be {kind} from {lo} to {hi}, got {value!r}")
    return value if whole else float(value)


class Panel:
    """Controls that recompute a result and redraw its figure. Notebook 04.

    Moving a slider, or calling ``panel.set(knob=value)`` from code, recomputes the result
    synchronously and redraws; results are cached per setting, so moving a slider back is instant.
    When the last computation took over ``SLOW_S`` the status line says "re-running the lab…"
    until the new result is drawn (for a replay of milliseconds it would only delay the plot).
    A ``Panel`` at the end of a cell shows its ``.widget`` (and, for viewers that draw no widgets,
    an HTML snapshot); the figure is redrawn in place in JupyterLab, else sent through the active
    plotly renderer (``labkit._render.FigureView``); ``.drawn`` is the figure on screen.

    Args:
        compute: called with every knob as a keyword argument; returns a dict with ``"figure"``
            (a plotly Figure) and, if it likes, ``"status"`` (one line of HTML shown above it).
        controls: ipywidgets by knob name — ``IntSlider``, ``FloatSlider``, ``Checkbox`` or
            ``ToggleButtons`` (one button per choice).
        cache_size: how many settings to remember.
        collect: run Python's garbage collector once the panel is made, so that what making it
            left behind is not collected during the first moves (a full collection in a kernel of a
            few hundred thousand objects takes ~100 ms; 2026-12-02, ``bench_sliders.py``).
        figure_first: the figure right under the controls, the status (its tables) after it — the
            clinic's order, so that on a projector the plot is on the first screen.

    Example:
        >>> # panel = Panel(lambda n: {"figure": make(n)}, {"n": ipw.IntSlider(3, min=1, max=9)})
        >>> # panel.set(n=5)["figure"]
    """

    def __init__(self, compute: Callable[..., dict], controls: Mapping[str, ipw.Widget],
                 cache_size: int = 32, collect: bool = False, figure_first: bool = False) -> None:
        if not controls:
            raise ValueError("a Panel needs at least one control")
        for knob, control in controls.items():
            if not isinstance(control, (ipw.IntSlider, ipw.FloatSlider, ipw.Checkbox, ipw.ToggleButtons)):
                raise TypeError(f"control {knob!r} must be an IntSlider, FloatSlider or Checkbox "
                                f"(or ToggleButtons), not {type(control).__name__}")
        self.controls = dict(controls)
        self._compute = compute
        self._cache: OrderedDict[tuple, dict] = OrderedDict()
        self._cache_size = cache_size
        self._holding = False
        self._slow = True  # did the last computation take longer than SLOW_S?
        self.result = self._result()
        self.status = ipw.HTML(self.result.get("status", ""))
        for name in ("jp-OutputArea-output", "jp-RenderedHTMLCommon"):  # tables as in an output:
            self.status.add_class(name)  # JupyterLab's look, left-aligned, a wide one scrolls
        self.view = FigureView(self.result["figure"])  # in place in JupyterLab (labkit._render)
        self._figure_first = figure_first
        shown = [self.view.widget, self.status] if figure_first else [self.status, self.view.widget]
        self.widget = ipw.VBox([*self.controls.values(), *shown])
        for control in self.controls.values():
            control.observe(self._changed, names="value")
        if collect:
            gc.collect()

    @property
    def values(self) -> dict[str, Any]:
        """The knobs' current values."""
        return {knob: control.value for knob, control in self.controls.items()}

    def set(self, **values: Any) -> dict:
        """Set knobs (all checked first, so a bad one changes nothing), recompute once, redraw,
        and return the new result."""
        for knob in values:
            if knob not in self.controls:
                raise ValueError(f"unknown knob {knob!r}; this panel has {', '.join(self.controls)}")
        checked = {knob: check_knob(knob, self.controls[knob], v) for knob, v in values.items()}
        with self._hold():
            for knob, value in checked.items():
                self.controls[knob].value = value
        return self._update()

    @contextmanager
    def _hold(self):
        self._holding = True
        try:
            yield
        finally:
            self._holding = False

    def _changed(self, change) -> dict | None:
        return None if self._holding else self._update()

    @property
    def drawn(self) -> dict:
        """The figure on screen, as plotly's JSON (``{"data": [...], "layout": {...}}``)."""
        return self.view.drawn

    def _result(self, busy: ipw.HTML | None = None) -> dict:
        values = self.values
        key = tuple(values.items())
        if key in self._cache:
            self._cache.move_to_end(key)
        else:
            if busy is not None and self._slow:  # a line for the browser to draw only if worth it
                busy.value = "<i>re-running the lab…</i>"
            start = time.perf_counter()
            self._cache[key] = self._compute(**values)
            self._slow = time.perf_counter() - start > SLOW_S
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return self._cache[key]

    def _update(self) -> dict:
        self.result = self._result(self.status)
        self.view.draw(self.result["figure"])  # the plot first: it is what a learner watches
        self.status.value = self.result.get("status", "")
        return self.result

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs) or {}  # live where widgets render, else:
        return bundle | {"text/html": snapshot_html(self.controls, self.status.value, self.result["figure"],
                                                    self._figure_first)}

    def __repr__(self) -> str:
        return "Panel(" + ", ".join(f"{k}={v!r}" for k, v in self.values.items()) + ")"
