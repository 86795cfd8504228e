"""How labkit.widgets' figures reach the screen (``labkit._render``): in JupyterLab (plotly's
``plotly_mimetype`` / ``jupyterlab`` renderers) a plotly ``FigureWidget`` updated in place, sent only
what changed; elsewhere an Output widget that holds plotly's JSON (VS Code) and, where the renderer
makes one (Colab's ``colab``, ``notebook_connected``), HTML that Colab draws; a displayed panel also
carries a static HTML snapshot for viewers with no widgets (``make book``).

Asserted on the output dicts the kernel sends, never on a rendered picture: the book's browser test
(tests/test_book.py) draws the snapshot, tests/test_browser.py the live panel."""

from __future__ import annotations

import ipywidgets as ipw
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from labkit import _render as render
from labkit import widgets

MIME = "application/vnd.plotly.v1+json"


def _panel():
    def compute(n):
        return {"figure": go.Figure(go.Bar(name="bars", x=[0], y=[n]), layout={"title": f"n is {n}"}),
                "status": f"<b>status {n}</b>"}
    return widgets.Panel(compute, {"n": ipw.IntSlider(3, min=1, max=9, description="n (count)")})


@pytest.mark.parametrize("renderer", ["plotly_mimetype", "jupyterlab", "plotly_mimetype+notebook"])
def test_jupyterlab_redraws_the_plot_in_place(monkeypatch, renderer):
    monkeypatch.setattr(pio.renderers, "default", renderer)
    panel = _panel()
    fw = panel.view.widget
    assert isinstance(fw, go.FigureWidget) and fw in panel.widget.children, "one plot, kept"
    panel.set(n=7)
    assert panel.view.widget is fw and list(fw.data[0].y) == [7] and fw.layout.title.text == "n is 7"
    assert panel.drawn["data"][0]["y"] == [7], "drawn: the figure on screen, as plotly's JSON"


def test_in_place_a_move_sends_only_what_changed(monkeypatch):
    monkeypatch.setattr(pio.renderers, "default", "plotly_mimetype")
    panel = _panel()
    sent = []
    def send(widget, restyle_data, relayout_data, **_):  # what goes to the browser
        sent.append((restyle_data, relayout_data))

    monkeypatch.setattr(type(panel.view.widget), "_send_update_msg", send)
    panel.set(n=8)
    [(restyle, relayout)] = sent
    assert restyle == {"y": [[8]]}, "the one trace's y, nothing else of it"
    assert relayout == {"title": {"text": "n is 8"}}, "the title, in the same message"


def test_in_place_traces_that_come_and_go_are_replaced(monkeypatch):
    """A move can add a trace (a run that overflows marks its failed call) or drop one."""
    monkeypatch.setattr(pio.renderers, "default", "plotly_mimetype")
    traces = {1: [go.Bar(name="a", y=[1], hovertext=["h"])],
              2: [go.Bar(name="a", y=[2]), go.Scatter(name="b", y=[5])],
              3: [go.Scatter(name="c", y=[3])]}
    panel = widgets.Panel(lambda n: {"figure": go.Figure(traces[n], layout={
        "title": f"n {n}", "shapes": [{"type": "line", "y0": n, "y1": n}] * (n == 2)})},
        {"n": ipw.IntSlider(1, min=1, max=3)})
    assert panel.view.widget.layout.shapes == (), "read once before the moves"

    def shown():
        return [(t.type, t.name, list(t.y), t.hovertext) for t in panel.view.widget.data
                if t.visible is not False]

    panel.set(n=2)
    assert shown() == [("bar", "a", [2], None), ("scatter", "b", [5], None)], "one came, a key went"
    assert [s.y0 for s in panel.view.widget.layout.shapes] == [2], "the widget's own objects follow"
    panel.set(n=1)
    assert shown() == [("bar", "a", [1], ("h",))] and panel.view.widget.layout.title.text == "n 1"
    assert len(panel.view.widget.data) == 2, "the one that went is hidden, not deleted"
    panel.set(n=2)
    assert shown() == [("bar", "a", [2], None), ("scatter", "b", [5], None)], "and shown again"
    panel.set(n=3)
    assert shown() == [("scatter", "c", [3], None)], "a trace of another type is drawn anew"
    assert panel.drawn == panel.result["figure"].to_dict(), "what is on screen is the figure"


def test_without_anywidget_jupyterlab_gets_plotly_json_in_an_output(monkeypatch):
    monkeypatch.setattr(pio.renderers, "default", "plotly_mimetype")
    monkeypatch.setattr(render, "find_spec", lambda name: None)
    [out] = _panel().view.widget.outputs
    assert set(out["data"]) == {MIME, "text/plain"} and list(out["data"][MIME]["data"][0]["y"]) == [3]


def test_vscode_gets_plotly_json_only_in_an_output(monkeypatch):
    """VS Code would fetch a widget's script from a CDN: a new figure per move, as JSON alone."""
    monkeypatch.setattr(pio.renderers, "default", "vscode")
    panel = _panel()
    [out] = panel.view.widget.outputs
    assert set(out["data"]) == {MIME, "text/plain"}, "no HTML to send"
    assert list(out["data"][MIME]["data"][0]["y"]) == [3] and panel.drawn == out["data"][MIME]


@pytest.mark.parametrize("renderer", ["colab", "notebook_connected", "plotly_mimetype+notebook_connected"])
def test_an_html_renderer_adds_html_the_frontend_can_draw_beside_the_json(monkeypatch, renderer):
    monkeypatch.setattr(pio.renderers, "default", renderer)
    panel = _panel()
    panel.set(n=7)
    [out] = panel.view.widget.outputs
    html = out["data"]["text/html"]
    assert "Plotly.newPlot" in html and '"n is 7"' in html, "the HTML draws this move's figure"
    assert "cdn.plot.ly" in html, "it loads plotly.js itself (Colab's page has none)"
    assert list(out["data"][MIME]["data"][0]["y"]) == [7], "plotly's JSON is still there"


def test_the_output_follows_a_renderer_changed_after_the_panel_was_made(monkeypatch):
    """Which view (in place or Output) is chosen when the panel is made; an Output's mimetypes
    follow the renderer of each move."""
    monkeypatch.setattr(pio.renderers, "default", "vscode")
    panel = _panel()
    monkeypatch.setattr(pio.renderers, "default", "colab")
    panel.set(n=5)
    assert "text/html" in panel.view.widget.outputs[0]["data"]


@pytest.mark.parametrize("renderer", ["png", "svg", "browser", "iframe", "json", ""])
def test_renderers_that_cannot_draw_into_an_output_are_skipped(monkeypatch, renderer):
    """Image renderers would start kaleido on every move, browser ones open a window, iframe writes a
    file: the panel keeps plotly's JSON alone and raises nothing."""
    monkeypatch.setattr(pio.renderers, "default", renderer or None)
    [out] = _panel().view.widget.outputs
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


def test_in_place_arrays_are_sent_when_they_are_new_objects(monkeypatch):
    """numpy arrays (plotly express makes them) compare item by item: one not drawn before is sent."""
    np = pytest.importorskip("numpy")
    monkeypatch.setattr(pio.renderers, "default", "plotly_mimetype")
    panel = widgets.Panel(lambda n: {"figure": go.Figure(go.Scatter(name="s", y=np.arange(n)))},
                          {"n": ipw.IntSlider(2, min=1, max=5)})
    panel.set(n=4)
    assert list(panel.view.widget.data[0].y) == [0, 1, 2, 3]


def test_in_place_arrays_inside_a_trace_or_layout_key_are_sent(monkeypatch):
    """An array nested in a dict (``marker.color``, ``xaxis.tickvals``) made anew for the next
    figure: ``==`` on the dicts cannot decide, so the key is sent rather than the move failing."""
    np = pytest.importorskip("numpy")
    monkeypatch.setattr(pio.renderers, "default", "plotly_mimetype")
    panel = widgets.Panel(lambda n: {"figure": go.Figure(
        go.Scatter(name="s", y=[1, 2], marker={"color": np.array([n, 2])}),
        layout={"xaxis": {"tickvals": np.array([1, n])}})}, {"n": ipw.IntSlider(2, min=1, max=5)})
    panel.set(n=4)
    assert list(panel.view.widget.data[0].marker.color) == [4, 2]
    assert list(panel.view.widget.layout.xaxis.tickvals) == [1, 4]


@pytest.mark.parametrize("renderer", ["plotly_mimetype", "vscode"])
def test_drawn_is_a_copy(monkeypatch, renderer):
    monkeypatch.setattr(pio.renderers, "default", renderer)
    panel = _panel()
    panel.drawn["data"][0]["y"].append(99)
    panel.drawn["layout"]["title"]["text"] = "changed"
    assert list(panel.drawn["data"][0]["y"]) == [3] and panel.drawn["layout"]["title"]["text"] == "n is 3"
    assert list(panel.result["figure"].data[0].y) == [3], "the cached result is untouched"
