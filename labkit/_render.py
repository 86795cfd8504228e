"""A figure as display data through plotly's active renderer, and a panel's static snapshot.

``labkit.widgets.Panel`` writes its figure straight into an ``ipywidgets.Output`` (``fig.show`` is
not used there), so :func:`figure_output` asks the renderers named in ``plotly.io.renderers.default``
(``PLOTLY_RENDERER`` sets it) for their mimetypes: ``plotly_mimetype`` (JupyterLab, ``vscode``)
gives plotly's JSON, ``colab`` and ``notebook_connected`` HTML that loads plotly.js. Plotly's JSON
is always there (JupyterLab draws it, tests read it). :func:`snapshot_html` is a panel as it was
when displayed, for viewers with no kernel (``make book``); its figure needs plotly.js on the page.
What it leaves out: image renderers (``png``, ``svg``: kaleido on every move), ``iframe`` (it
writes a file per figure) and renderers that open a browser.
"""

from __future__ import annotations

from html import escape

import plotly.io as pio
from plotly.io.base_renderers import HtmlRenderer, PlotlyRenderer

__all__ = ["MIME", "figure_output", "snapshot_html"]

MIME = "application/vnd.plotly.v1+json"


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


def snapshot_html(controls: dict, status: str, figure) -> str:
    """The panel as HTML with no widgets: each knob's value, the status line and the figure
    (plotly's ``to_html`` without plotly.js, which the page must load once)."""
    knobs = " · ".join(f"{escape(getattr(c, 'description', '') or k)}: <b>{escape(_shown(c))}</b>"
                       for k, c in controls.items())
    plot = pio.to_html(figure, include_plotlyjs=False, include_mathjax=False, full_html=False,
                       validate=False, default_width="100%")
    return (f'<div class="labkit-panel-snapshot"><p><i>A snapshot of the panel (run the notebook to '
            f"move its controls):</i> {knobs}</p><div>{status}</div>{plot}</div>")


def _shown(control) -> str:
    """A control's value as its readout shows it."""
    value = control.value
    if isinstance(value, bool):
        return "on" if value else "off"
    labels = getattr(control, "options", None)
    if labels:
        return next((str(o[0]) for o in labels if isinstance(o, tuple) and o[1] == value), str(value))
    spec = getattr(control, "readout_format", "")
    return format(value, spec) if spec else str(value)
