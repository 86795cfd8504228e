"""labkit._figure_widget: a panel's widget state without plotly's 5 MB script, which goes to the
browser page in a message instead (once per page; tests/test_browser_script.py shows it drawn).

Asserted in the kernel: what a panel's widgets would store in a saved notebook (ipywidgets' own
``embed.dependency_state``, what JupyterLab and nbconvert save), what is sent when the page asks
for the script, and that the loader still names every message plotly's Python side sends."""

from __future__ import annotations

import json
import re

import plotly.graph_objects as go
import plotly.io as pio
from ipywidgets.embed import dependency_state

from labkit import widgets
from labkit._figure_widget import BUNDLE, LOADER, FigureWidget, script


def _stored_bytes(widget) -> int:
    """The JSON size of every model a saved notebook would keep for ``widget`` (binary buffers
    counted as base64, as nbformat stores them)."""
    state = dependency_state(widget, drop_defaults=False)
    return len(json.dumps(state, default=lambda b: "x" * (len(b) * 4 // 3)))


def test_a_panels_widget_state_does_not_carry_plotlys_script(monkeypatch):
    monkeypatch.setattr(pio.renderers, "default", "plotly_mimetype")  # a kernel's default: drawn in place
    panel = widgets.offload_panel()
    [fw] = [w for w in panel.widget.children if isinstance(w, go.FigureWidget)]
    assert isinstance(fw, FigureWidget), "the panel draws with labkit's FigureWidget"
    assert len(fw._esm) < 10_000 < BUNDLE.stat().st_size, "the widget's script is the small loader"
    assert _stored_bytes(panel.widget) < 100_000, "a panel stores well under 100 kB, not 5 MB"


def test_the_script_is_sent_when_the_page_asks_and_only_then(monkeypatch):
    fw = FigureWidget(go.Figure(go.Bar(y=[1, 2])).to_dict(), _validate=False)
    sent = []
    monkeypatch.setattr(type(fw), "send", lambda self, content, buffers=None: sent.append((content, buffers)))
    fw._on_custom_msg(fw, {"labkit": "something else"}, [])
    assert sent == [], "other custom messages get no answer"
    fw._on_custom_msg(fw, {"labkit": "plotly-script?"}, [])
    [(content, buffers)] = sent
    assert content == {"labkit": "plotly-script"} and buffers == [script()], "plotly's script, as a buffer"
    assert script() == BUNDLE.read_bytes(), "the installed plotly's widget script, byte for byte"


def test_a_kernels_first_figure_sends_the_script_with_it(monkeypatch):
    sent = []
    monkeypatch.setattr(FigureWidget, "send", lambda self, content, buffers=None: sent.append(content))
    monkeypatch.setattr(FigureWidget, "_sent_first", False)
    FigureWidget(go.Figure().to_dict(), _validate=False)
    FigureWidget(go.Figure().to_dict(), _validate=False)
    assert sent == [{"labkit": "plotly-script"}], "sent with the first figure only"


def test_the_loader_knows_each_message_plotly_sends_and_plotlys_module_shape():
    """The loader keeps the ``_py2js_*`` messages that come before plotly's code listens; a plotly
    version with a new one would lose it. And it calls the module's default export (a factory)."""
    sent_by_python = {name for name in go.FigureWidget.class_trait_names() if name.startswith("_py2js_")}
    kept = set(re.findall(r'"(_py2js_\w+)"', LOADER))
    assert kept == sent_by_python, f"the loader keeps {sorted(kept)}; plotly sends {sorted(sent_by_python)}"
    tail = BUNDLE.read_bytes()[-20_000:].decode("utf-8", "replace")
    assert re.search(r"export\{[^}]*\b\w+ as default\}", tail), "plotly's widget script has a default export"
