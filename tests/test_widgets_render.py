"""labkit.widgets' figures go through the active plotly renderer: the Output widget a panel redraws
holds plotly's JSON (JupyterLab) and, where the renderer makes one (Colab's ``colab``,
``notebook_connected``), HTML that Colab and VS Code draw; a displayed panel also carries a static
HTML snapshot for viewers with no widgets (``make book``).

Asserted on the output dicts the kernel sends, never on a rendered picture: the book's browser test
(tests/test_book.py) draws the snapshot, tests/test_browser.py the live panel."""

from __future__ import annotations

import ipywidgets as ipw
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from labkit import widgets

MIME = "application/vnd.plotly.v1+json"


def _panel():
    def compute(n):
        return {"figure": go.Figure(go.Bar(name="bars", x=[0], y=[n]), layout={"title": f"n is {n}"}),
                "status": f"<b>status {n}</b>"}
    return widgets.Panel(compute, {"n": ipw.IntSlider(3, min=1, max=9, description="n (count)")})


@pytest.mark.parametrize("renderer", ["plotly_mimetype", "vscode", "jupyterlab"])
def test_jupyterlab_and_vscode_get_plotly_json_only(monkeypatch, renderer):
    monkeypatch.setattr(pio.renderers, "default", renderer)
    panel = _panel()
    [out] = panel.output.outputs
    assert set(out["data"]) == {MIME, "text/plain"}, "the same output as before: no HTML to send"
    assert list(out["data"][MIME]["data"][0]["y"]) == [3]


@pytest.mark.parametrize("renderer", ["colab", "notebook_connected", "plotly_mimetype+notebook_connected"])
def test_an_html_renderer_adds_html_the_frontend_can_draw_beside_the_json(monkeypatch, renderer):
    monkeypatch.setattr(pio.renderers, "default", renderer)
    panel = _panel()
    panel.set(n=7)
    [out] = panel.output.outputs
    html = out["data"]["text/html"]
    assert "Plotly.newPlot" in html and '"n is 7"' in html, "the HTML draws this move's figure"
    assert "cdn.plot.ly" in html, "it loads plotly.js itself (Colab's page has none)"
    assert list(out["data"][MIME]["data"][0]["y"]) == [7], "plotly's JSON is still there"


def test_the_output_follows_a_renderer_changed_after_the_panel_was_made(monkeypatch):
    monkeypatch.setattr(pio.renderers, "default", "plotly_mimetype")
    panel = _panel()
    monkeypatch.setattr(pio.renderers, "default", "colab")
    panel.set(n=5)
    assert "text/html" in panel.output.outputs[0]["data"]


@pytest.mark.parametrize("renderer", ["png", "svg", "browser", "iframe", "json", ""])
def test_renderers_that_cannot_draw_into_an_output_are_skipped(monkeypatch, renderer):
    """Image renderers would start kaleido on every move, browser ones open a window, iframe writes a
    file: the panel keeps plotly's JSON alone and raises nothing."""
    monkeypatch.setattr(pio.renderers, "default", renderer or None)
    [out] = _panel().output.outputs
    assert set(out["data"]) == {MIME, "text/plain"}


def test_a_displayed_panel_carries_a_static_snapshot_beside_the_widget():
    panel = _panel()
    panel.set(n=4)
    bundle = panel._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle, "live where widgets render"
    snapshot = bundle["text/html"]
    assert "n (count): <b>4</b>" in snapshot, "each knob's value as its readout shows it"
    assert "<b>status 4</b>" in snapshot and '"n is 4"' in snapshot, "the status line and the figure"
    assert "<script src" not in snapshot and "cdn" not in snapshot.lower(), "no plotly.js, no CDN"


def test_the_snapshot_shows_checkboxes_and_buttons_as_their_labels():
    controls = {"on": ipw.Checkbox(True, description="archive"),
                "mode": ipw.ToggleButtons(options=[("Hard overflow", "hard"), ("Amnesia", "soft")])}
    panel = widgets.Panel(lambda on, mode: {"figure": go.Figure()}, controls)
    panel.set(mode="soft")
    snapshot = panel._repr_mimebundle_()["text/html"]
    assert "archive: <b>on</b>" in snapshot and "mode: <b>Amnesia</b>" in snapshot
