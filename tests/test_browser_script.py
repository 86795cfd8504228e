"""plotly's script reaches a real browser page once, from the kernel, and a figure moved before it
arrived is drawn as moved (labkit._figure_widget), in JupyterLab with Debian's chromium.

The server, page and helpers are tests/test_browser.py's and tests/browser_lab.py's. The notebook
keeps the kernel from sending the script with its first figure, so the page has to ask, and the
kernel answers only once the cell is done: the offload panel moves (tool_limit 2,000) before the
page has plotly's code, and a second panel follows. The page must draw both, the first as moved,
asking for the script once; then a key press still redraws in place. Skipped without
/usr/bin/chromium, as tests/test_browser.py."""

from __future__ import annotations

import pytest

from tests import browser_lab
from tests.conftest import CHROMIUM, NO_CHROMIUM
from tests.test_browser import (  # noqa: F401  (the server and page fixtures)
    _numbers,
    _readback,
    lab,
    page,
    screenshot_on_failure,
)

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)

SOURCE = """from pathlib import Path
from labkit import widgets
from labkit._figure_widget import FigureWidget

FigureWidget._sent_first = True  # nothing sent with the first figure: the page must ask
send = FigureWidget.send_script
FigureWidget.send_script = lambda self: (Path("sent.txt").open("a").write("script\\n"), send(self))
first = widgets.offload_panel()
display(first)
first.set(tool_limit=2_000)  # the kernel is busy until the cell ends: the page has no script yet
second = widgets.knobs()
second"""


def _text(base: str, token: str, path: str) -> str:
    return browser_lab.api(base, token, f"/api/contents/{path}?content=1")["content"]


def test_the_page_asks_for_plotlys_script_once_and_draws_what_came_before(lab, page, tmp_path):  # noqa: F811
    base, token = lab
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}},
        "cells": [{"cell_type": "code", "id": "panels", "metadata": {}, "execution_count": None,
                   "outputs": [], "source": SOURCE}]}
    browser_lab.api(base, token, "/api/contents/script_once.ipynb", "PUT",
                    {"type": "notebook", "format": "json", "content": notebook})
    with screenshot_on_failure(page, tmp_path / "failure.png"):
        page.goto(f"{base}/lab/tree/script_once.ipynb?token={token}&reset")
        browser_lab.run_all(page)
        page.wait_for_function("() => labkitFigure() !== null && labkitStatus() !== ''"  # the first drawn
                               " && [...document.querySelectorAll('.js-plotly-plot')]"
                               ".filter(p => p.querySelector('.gtitle')).length === 2")
        moved = _readback(page)
        numbers = _numbers(moved["status"])
        assert moved["readout"] == "2,000" and "evict results over 2,000 tokens" in moved["title"], \
            "the figure shows the move made before the page had plotly's script"
        assert numbers["peak"] == max(moved["traces"]["seen by the model"]), "its curve is the moved run's"
        assert _text(base, token, "sent.txt") == "script\n", "asked once for two figures"
        assert page.evaluate("() => !!globalThis[Symbol.for('labkit.plotly-widget')]"), "kept for the page"

        browser_lab.redraw(page, "tool_limit (tokens)", "End")
        top = _readback(page)
        assert "evict results over 60,000 tokens" in top["title"], "a key press redraws it in place"
