"""How a panel's figure reaches the screen: redrawn in place, or as display data; and its snapshot.

:class:`FigureView`: in JupyterLab (:func:`in_place`; the browser test) plotly's ``FigureWidget``
(anywidget; plotly.js sent to the page once, never kept in a widget's state: ``_figure_widget``), sent
one ``Plotly.update`` of what changed per move: ~80 ms from key press to redraw (``tests/test_browser.py``),
against ~220 ms when each move drew a new plot (2026-12-01). Elsewhere (VS Code, Colab: they fetch a
widget's script from a CDN) an ``ipywidgets.Output``, a new figure per move:
:func:`figure_output` asks the active plotly renderers (``PLOTLY_RENDERER``) for their mimetypes —
plotly's JSON always, HTML that loads plotly.js for ``colab`` and ``notebook_connected``.
:func:`snapshot_html` is a panel as displayed, for viewers with no kernel (``make book``).
What it leaves out: image renderers (``png``, ``svg``: kaleido on every move), ``iframe`` (it
writes a file per figure) and renderers that open a browser.
"""

from __future__ import annotations

from copy import deepcopy
from html import escape
from importlib.util import find_spec

import ipywidgets as ipw
import plotly.io as pio
from plotly.basedatatypes import Undefined
from plotly.io.base_renderers import HtmlRenderer, PlotlyRenderer

from labkit._figure_widget import FigureWidget

__all__ = ["MIME", "FigureView", "figure_output", "in_place", "snapshot_html"]

MIME = "application/vnd.plotly.v1+json"
_JUPYTERLAB = {"plotly_mimetype", "jupyterlab"}  # front ends that draw plotly's JSON (JupyterLab)
_IN_PLACE = _JUPYTERLAB | {"notebook"}  # the default in a Jupyter kernel: "plotly_mimetype+notebook"


def in_place() -> bool:
    """Will a panel made now redraw its figure in place? Where the active plotly renderers are
    JupyterLab's (``plotly_mimetype`` or ``jupyterlab``, with or without ``notebook``) and anywidget,
    which plotly's ``FigureWidget`` needs, is installed."""
    names = set((pio.renderers.default or "").split("+"))
    return bool(names & _JUPYTERLAB) and names <= _IN_PLACE and find_spec("anywidget") is not None


class FigureView:
    """Where a panel draws its figure: ``.widget`` is a plotly ``FigureWidget`` updated in place
    (:func:`in_place`) or an ``ipywidgets.Output`` given a new figure per move; ``.drawn`` is the
    figure on screen as plotly's JSON, either way."""

    def __init__(self, figure) -> None:
        self.in_place = in_place()
        if self.in_place:  # built from the figure's JSON as it is: plotly.js checks it in the browser
            self._shown = _plain(figure)
            self._slots = list(self._shown["data"])
            self.widget = FigureWidget(figure.to_dict(), _validate=False)
        else:
            self.widget = ipw.Output()
            self.draw(figure)

    @property
    def drawn(self) -> dict:
        """The figure on screen, as plotly's JSON (``{"data": [...], "layout": {...}}``): a copy,
        so changing it changes neither the screen nor the cached result."""
        return deepcopy(self._shown if self.in_place else self.widget.outputs[0]["data"][MIME])

    def draw(self, figure) -> None:
        """Show ``figure``: in place, only what differs from the figure on screen is sent, in one
        message (a trace the new figure lacks is hidden, and shown again when one takes its place)."""
        if not self.in_place:
            self.widget.outputs = (figure_output(figure),)
            return
        new, old, fw = _plain(figure), self._shown, self.widget
        slots, traces = self._slots, new["data"]  # the widget's traces; those past the figure's hidden
        if [t.get("type") for t in slots[:len(traces)]] != [t.get("type") for t in traces[:len(slots)]]:
            fw.data, slots = (), []  # a trace changed type: draw the traces anew
        restyle: dict[str, list] = {}  # key -> a value per slot (Undefined: unchanged)
        for i, was in enumerate(slots):  # a trace that went is hidden, not deleted: one update
            now = traces[i] if i < len(traces) else {**was, "visible": False}
            for key in was.keys() | now.keys():
                if not _same(was.get(key), now.get(key)):
                    restyle.setdefault(key, [Undefined] * len(slots))[i] = now.get(key)
            slots[i] = now
        relayout = {key: new["layout"].get(key) for key in old["layout"].keys() | new["layout"].keys()
                    if not _same(old["layout"].get(key), new["layout"].get(key))}
        if restyle or relayout:  # one Plotly.update in the browser; plotly.js checks the values
            fw.plotly_update(restyle_data=restyle, relayout_data=relayout,
                             trace_indexes=list(range(len(slots))))
            for key in relayout:  # plotly's objects for shapes and annotations, made again on reading
                fw.layout._compound_array_props.pop(key, None)
        if len(traces) > len(slots):  # more traces than ever: add the new ones
            fw.add_traces(traces[len(slots):])
            slots += traces[len(slots):]
        self._slots = slots
        self._shown = new


def _plain(figure) -> dict:
    """A figure's JSON as plotly holds it, each trace and the layout copied one level deep, not
    deep-copied as ``to_dict`` does (most of a move's cost): a panel's figures are cached and never
    changed once drawn."""
    return {"data": [dict(t) for t in figure._data], "layout": dict(figure._layout)}


def _same(a, b) -> bool:
    """Equal JSON values; an array (numpy, which ``==`` compares item by item) only if it is the
    same object, and a dict or list holding one (``marker.color``, ``xaxis.tickvals``) when ``==``
    can tell (an array of several items cannot: it is sent)."""
    if a is b:
        return True
    if hasattr(a, "__array__") or hasattr(b, "__array__"):
        return False
    try:
        return bool(a == b)
    except ValueError:  # "truth value of an array is ambiguous": an array inside a dict or list
        return False


def figure_output(figure) -> dict:
    """A ``display_data`` output of ``figure`` with the mimetypes of the active plotly renderers
    that can draw into an Output widget (JSON or HTML), plotly's JSON always among them."""
    fig_dict = figure.to_dict()
    data: dict = {}
    for name in (pio.renderers.default or "").split("+"):
        renderer = pio.renderers[name] if name in pio.renderers else None
        if isinstance(renderer, (PlotlyRenderer, HtmlRenderer)):
            data.update(renderer.to_mimebundle(dict(fig_dict)))
    if MIME not in data:
        data.update(pio.renderers["plotly_mimetype"].to_mimebundle(fig_dict))
    title = figure.layout.title.text or "figure"
    data["text/plain"] = f"<plotly figure: {title}>"
    return {"output_type": "display_data", "data": data, "metadata": {}}


def snapshot_html(controls: dict, status: str, figure, figure_first: bool = False) -> str:
    """The panel as HTML with no widgets: each knob's value, the status line and the figure
    (plotly's ``to_html`` without plotly.js, which the page must load once), in the panel's order."""
    knobs = " · ".join(f"{escape(getattr(c, 'description', '') or k)}: <b>{escape(_readout(c))}</b>"
                       for k, c in controls.items())
    plot = pio.to_html(figure, include_plotlyjs=False, include_mathjax=False, full_html=False,
                       validate=False, default_width="100%")
    shown = f"{plot}<div>{status}</div>" if figure_first else f"<div>{status}</div>{plot}"
    return (f'<div class="labkit-panel-snapshot"><p><i>A snapshot of the panel (run the notebook to '
            f"move its controls):</i> {knobs}</p>{shown}</div>")


def _readout(control) -> str:
    """A control's value as its readout shows it."""
    value = control.value
    if isinstance(value, bool):
        return "on" if value else "off"
    labels = getattr(control, "options", None)
    if labels:
        return next((str(o[0]) for o in labels if isinstance(o, tuple) and o[1] == value), str(value))
    spec = getattr(control, "readout_format", "")
    return format(value, spec) if spec else str(value)
