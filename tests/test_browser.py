"""The offload panel in a real browser: JupyterLab runs a notebook, a slider moves, the plot redraws.

Everything else tests widgets in the kernel; this is the one check that the panel a learner sees
works end to end — ipywidgets' comms, the slider's keyboard handling, the status line and the
plotly figure redrawn in place (plotly's FigureWidget, ``labkit._render``). JupyterLab (from this
environment) serves a temp folder on 127.0.0.1 with a token; Debian's ``/usr/bin/chromium``, driven
by Playwright, opens a purpose-built one-cell notebook that shows ``labkit.widgets.offload_panel()``,
runs it, presses End on the ``tool_limit`` slider (60,000 tokens: above every export, so nothing is
evicted and the run overflows the window), then Home (2,000: every export evicted), and reads back
the status line and the figure's own data from the page.

Why a tiny notebook rather than notebook 04: nbval already runs notebook 04's cells; what only a
browser can show is the panel itself, and one cell gets to it in seconds. The served folder is a
temp dir, so JupyterLab's autosave never writes into the repository; ``JUPYTER_CONFIG_DIR`` and
``JUPYTER_RUNTIME_DIR`` are temp dirs too (the config switches off the news toast and the
"Select Kernel" dialog).

The last test moves each panel several times and prints its input → redraw latency (a figure, not
a check). What it leaves out: mouse drags, voila, the Output view other front ends get.
Skipped when ``/usr/bin/chromium`` is missing (``sudo apt-get install chromium``); Playwright never
downloads a browser. ``make test`` installs chromium first only under CI, as root, with apt-get.
A failure leaves a screenshot in pytest's temp dir and names it in the error.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import CHROMIUM, NO_CHROMIUM

NOTEBOOK = "panel_offload.ipynb"  # the offload panel's notebook (PANELS)
WAIT_MS = 60_000  # for one step on a busy 2-core machine; the whole test takes ~15 s

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)

# Direct connections only: a proxy in the environment must not see the lab server.
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api(base: str, token: str, path: str, method: str = "GET"):
    request = urllib.request.Request(f"{base}{path}", method=method,
                                     headers={"Authorization": f"token {token}"})
    with _HTTP.open(request, timeout=10) as response:
        body = response.read()
    return json.loads(body) if body else None


def _delete_kernels(base: str, token: str) -> None:
    """Kernels outlive browser pages: shut every session and kernel down through the REST API."""
    for session in _api(base, token, "/api/sessions"):
        _api(base, token, f"/api/sessions/{session['id']}", "DELETE")
    for kernel in _api(base, token, "/api/kernels"):
        _api(base, token, f"/api/kernels/{kernel['id']}", "DELETE")


PANELS = {  # panel -> (the cell that shows it, how a learner moves it)
    "offload": ("from labkit import widgets\n\npanel = widgets.offload_panel()\npanel",
                "ArrowLeft on tool_limit"),
    "knobs": ("from labkit import widgets\n\npanel = widgets.knobs()\npanel", "ArrowLeft on trigger"),
    "clinic": ("from labkit import diagnose, widgets\n\n"  # as notebook 16: every case run first
               "cases = {m: (diagnose.reproduce(m), diagnose.fix(m)) for m in diagnose.MODES}\n"
               "panel = widgets.clinic(cases=cases)\npanel", "a click on each other failure mode"),
}


def _notebook(source: str) -> dict:
    return {"nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
            "cells": [{"cell_type": "code", "id": "panel", "metadata": {}, "execution_count": None,
                       "outputs": [], "source": source}]}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab on a free 127.0.0.1 port with a token, serving a temp folder; ``(url, token)``.
    On teardown: kernels deleted, then the server stopped (SIGTERM, SIGKILL after 10 s)."""
    root = tmp_path_factory.mktemp("lab")
    served, config, runtime = root / "served", root / "config", root / "runtime"
    served.mkdir()
    for name, (source, _) in PANELS.items():
        (served / f"panel_{name}.ipynb").write_text(json.dumps(_notebook(source), indent=1), encoding="utf-8")
    (config / "labconfig").mkdir(parents=True)
    (config / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    tracker = config / "lab" / "user-settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)  # no "Select Kernel" dialog: the notebook's python3 just starts
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"autoStartDefaultKernel": True}))
    port, token = _free_port(), secrets.token_hex(16)
    base = f"http://127.0.0.1:{port}"
    env = os.environ | {"JUPYTER_CONFIG_DIR": str(config), "JUPYTER_RUNTIME_DIR": str(runtime)}
    log = (root / "server.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
         f"--port={port}", "--port-retries=0", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={served}", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            if server.poll() is not None:
                pytest.fail(f"JupyterLab exited with code {server.returncode}:\n"
                            + (root / "server.log").read_text(errors="replace")[-3000:])
            try:
                _api(base, token, "/api/status")
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    pytest.fail("JupyterLab did not answer /api/status within 60 s:\n"
                                + (root / "server.log").read_text(errors="replace")[-3000:])
                time.sleep(0.1)
        yield base, token
    finally:
        try:
            if server.poll() is None:
                _delete_kernels(base, token)
        except (urllib.error.URLError, OSError):
            pass  # the server is going anyway; its kernels exit with it (JPY_PARENT_PID)
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(10)
        log.close()


@pytest.fixture
def page(lab, browser, tmp_path):
    """A fresh page; afterwards its kernels are deleted. A failing test leaves ``failure.png``."""
    context = browser.new_context(viewport={"width": 1280, "height": 1100})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    try:
        yield page
    finally:
        context.close()
        _delete_kernels(*lab)


@contextmanager
def screenshot_on_failure(page, path: Path):
    try:
        yield
    except BaseException as e:
        try:
            page.screenshot(path=str(path), full_page=True)
            e.add_note(f"screenshot of the page: {path}")
        except Exception as shot:  # the page may be gone; the original error matters
            e.add_note(f"no screenshot: {shot}")
        raise


def _run_all(page) -> None:
    """Run > Run All Cells once the kernel is idle, then wait until every cell has run. The menu
    acts on the active notebook, so the cell is clicked first; on a busy machine a click can still
    land before the notebook is ready, so the run is asked for again if nothing started."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for()
    prompt = page.locator(".jp-Cell .jp-InputPrompt").first
    for attempt in range(3):
        page.locator(".jp-Cell .jp-InputArea-editor").first.click()
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        try:
            page.wait_for_function("el => /\\[(\\*|\\d+)\\]/.test(el.textContent)",
                                   arg=prompt.element_handle(), timeout=10_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    page.wait_for_function("() => ![...document.querySelectorAll('.jp-InputPrompt')]"
                           ".some(p => p.textContent.includes('[*]'))")


_READBACK = """() => {
    const slider = [...document.querySelectorAll('.widget-hslider')]
        .find(s => s.textContent.includes('tool_limit'));
    const gd = document.querySelector('.js-plotly-plot');
    return {status: document.querySelector('.widget-html-content').innerText,
            readout: slider.querySelector('.widget-readout').innerText,
            title: gd.layout.title.text,
            traces: Object.fromEntries(gd.data.filter(t => t.visible !== false)  // as drawn
                .map(t => [t.name, Array.from(t.y)]))};
}"""


def _readback(page) -> dict:
    """What the page shows, read in one go (so status and figure come from the same moment): the
    status line, the tool_limit readout, the figure's title and its traces' y values by name."""
    return page.evaluate(_READBACK)


def _numbers(status: str) -> dict:
    """Peak, window and results evicted, read from the status line's words."""
    m = re.search(r"peak ([\d,]+) of ([\d,]+) tokens · (\d+) results? evicted", status)
    assert m, f"the status line does not say peak / window / evicted: {status!r}"
    peak, window, evicted = (int(g.replace(",", "")) for g in m.groups())
    return {"peak": peak, "window": window, "evicted": evicted}


def _wait_for_redraw(page, before: dict) -> dict:
    """The next readback whose status line (no longer "re-running the lab…") and figure title
    both differ from ``before``."""
    deadline = time.monotonic() + WAIT_MS / 1000
    while True:
        now = _readback(page)
        if "re-running" not in now["status"] and now["status"] != before["status"] \
                and now["title"] != before["title"]:
            return now
        assert time.monotonic() < deadline, f"no redraw after the slider moved; still {now}"
        page.wait_for_timeout(100)


def test_moving_the_tool_limit_slider_redraws_the_run(lab, page, tmp_path):
    base, token = lab
    with screenshot_on_failure(page, tmp_path / "failure.png"):
        page.goto(f"{base}/lab/tree/{NOTEBOOK}?token={token}&reset")
        _run_all(page)
        page.locator(".js-plotly-plot .main-svg").first.wait_for()
        page.locator(".widget-html-content", has_text="evicted").wait_for()
        first = _readback(page)
        seen = first["traces"]["seen by the model"]
        start = _numbers(first["status"])
        assert first["readout"] == "20,000" and "evict results over 20,000 tokens" in first["title"]
        assert "needle answered correctly: yes" in first["status"] and start["evicted"] > 0
        assert start["peak"] == max(seen) < start["window"] == 128_000
        assert "call failed" not in first["traces"]

        handle = page.locator(".widget-hslider", has_text="tool_limit").locator(".noUi-handle")
        handle.focus()
        page.keyboard.press("End")  # 60,000 tokens: no export is that big, so none is evicted
        top = _wait_for_redraw(page, first)
        high = _numbers(top["status"])
        assert top["readout"] == "60,000" and "evict results over 60,000 tokens" in top["title"]
        assert top["status"].startswith("overflow: call ") and high["evicted"] == 0
        assert high["peak"] == max(top["traces"]["seen by the model"]) > high["window"] == 128_000
        assert top["traces"]["call failed"], "the call that overflowed is marked on the figure"

        page.keyboard.press("Home")  # 2,000 tokens: every export evicted, the smallest peak
        bottom = _wait_for_redraw(page, top)
        low = _numbers(bottom["status"])
        assert bottom["readout"] == "2,000" and "evict results over 2,000 tokens" in bottom["title"]
        assert "needle answered correctly: yes" in bottom["status"]
        assert low["evicted"] > start["evicted"] and low["peak"] < start["peak"]
        assert low["peak"] == max(bottom["traces"]["seen by the model"])


_REDRAWN = """before => {
    const gd = document.querySelector('.js-plotly-plot');
    const status = document.querySelector('.widget-html-content').innerText;
    return gd && gd.layout.title.text !== before.title && !status.includes('re-running')
        ? performance.now() : false;
}"""


# The clock starts when the page receives the input (the key press, or the click that reaches the
# button), not when the test asks for it: Playwright's click first waits for the button to be
# visible, stable and the one under the pointer, a few round trips that are not the page's time.
_STAMP_INPUT = """() => {
    window.labkitInputAt = null;
    if (!window.labkitStamping) {
        window.labkitStamping = true;
        for (const type of ['keydown', 'click'])
            document.addEventListener(type, () => { window.labkitInputAt ??= performance.now(); }, true);
    }
}"""

MOVES = 9  # per panel; the figure printed is their median


@pytest.mark.parametrize("panel", PANELS)
def test_each_panel_redraws_after_a_move_and_says_how_long(lab, page, tmp_path, panel, record_property):
    """Input → redraw latency of each panel, as a learner meets it: the time from the key press
    (or click) to the first animation frame that shows the new figure (its title names the new
    setting), for ``MOVES`` moves to settings not seen before (the clinic: its cases run first, as
    notebook 16 runs them). A figure to read, printed in the test summary (``tests/conftest.py``):
    the median and every move, never a pass/fail time."""
    from labkit import diagnose

    base, token = lab
    with screenshot_on_failure(page, tmp_path / "failure.png"):
        page.goto(f"{base}/lab/tree/panel_{panel}.ipynb?token={token}&reset")
        _run_all(page)
        page.locator(".js-plotly-plot .main-svg").first.wait_for()
        if panel != "clinic":
            knob = "tool_limit" if panel == "offload" else "trigger"
            page.locator(".widget-hslider", has_text=knob).locator(".noUi-handle").focus()
        modes = [diagnose.LABELS[m] for m in diagnose.MODES[1:]]
        latencies = []
        for move in range(MOVES if panel != "clinic" else len(modes)):
            page.wait_for_timeout(300)  # the kernel idle again, as between a learner's moves
            before = page.evaluate("""() => ({
                title: document.querySelector('.js-plotly-plot').layout.title.text,
                status: document.querySelector('.widget-html-content').innerText})""")
            page.evaluate(_STAMP_INPUT)
            if panel == "clinic":
                page.get_by_role("button", name=modes[move], exact=True).click()
            else:
                page.keyboard.press("ArrowLeft")
            done = page.wait_for_function(_REDRAWN, arg=before, polling="raf").json_value()
            start = page.evaluate("window.labkitInputAt")
            assert start is not None, "the page received the move"
            latencies.append(round(done - start))
        assert all(ms > 0 for ms in latencies), "each redraw came after its move"
        moves = ", ".join(map(str, latencies))
        record_property(f"latency_ms {panel} ({PANELS[panel][1]}, median of {len(latencies)})",
                        f"{statistics.median(latencies):.0f} ms (each move: {moves} ms)")
