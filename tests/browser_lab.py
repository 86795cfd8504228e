"""Driving labkit's panels in a real browser: shared by tests/test_browser.py and bench/bench_browser.py.

JupyterLab (this environment's) serves a temp folder of one-cell notebooks, one per panel, on
127.0.0.1 with a token; Debian's ``/usr/bin/chromium``, driven by Playwright (never a downloaded
browser), opens one, runs it and moves the panel's knobs by keyboard or click, as a learner does.

Nothing here waits a fixed time. Each step waits for what it reads: the figure counts as drawn only
when plotly has drawn its title (the SVG's title is the layout's); a move counts as redrawn at the
first animation frame after plotly says it finished drawing (one of its draw events) a figure that
differs from the one before the move; and the kernel has finished a move when the notebook's hidden
counter (``labkit-moves-done``, bumped by an observer registered after the panel's own) says so.
The latency of a move is from the page receiving the key press or click to that frame: wall time in
the page (``performance.now``), not the test's. What it leaves out: mouse drags, voila.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

COURSE = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-default-apps", "--disable-extensions", "--mute-audio"]
NO_CHROMIUM = ("no /usr/bin/chromium: install Debian's browser with `sudo apt-get install chromium` "
               "to run the browser tests (Playwright never downloads one)")
NO_PLAYWRIGHT = "playwright is in the test extra: run `make setup` (or `uv sync --all-extras`)"
WAIT_MS = 60_000  # for one step on a busy 2-core machine

# The cell each panel's notebook runs, as a learner's notebook shows the panel (the clinic: every
# case run first, as notebook 16 runs them; the knobs: a 200-call record, as bench/bench_sliders.py).
PANELS = {
    "offload": "from labkit import widgets\n\npanel = widgets.offload_panel()\n",
    "knobs": ("from labkit import widgets\nfrom labkit.replay import synthetic_run, trajectory\n\n"
              "panel = widgets.knobs(trajectory(synthetic_run(200)))\n"),
    "clinic": ("from labkit import diagnose, widgets\n\n"
               "cases = {m: (diagnose.reproduce(m), diagnose.fix(m)) for m in diagnose.MODES}\n"
               "panel = widgets.clinic(cases=cases)\n"),
}
COUNTER = """
import ipywidgets as ipw
from IPython.display import display

done = ipw.Label("0")  # moves the kernel has finished (the browser test waits on it)
done.add_class("labkit-moves-done")
for control in panel.controls.values():  # after the panel's own observer: after its redraw
    control.observe(lambda _: setattr(done, "value", str(int(done.value) + 1)), names="value")
display(panel, done)
"""

# One round of moves per panel: (knob, the control's description or button label, what to do).
# Every knob is moved each round, each to a setting the panel has not seen (a checkbox's second
# click comes after other knobs moved), and never while a checkbox has it greyed out.
ROUNDS = {
    "offload": [("window", "window (tokens)", "ArrowLeft"), ("offload", "offload large results", "click"),
                ("export_scale", "export_scale (×)", "ArrowRight"),
                ("offload", "offload large results", "click"),
                ("tool_limit", "tool_limit (tokens)", "ArrowLeft")],
    "knobs": [("window", "window (tokens)", "ArrowLeft"),
              ("keep_messages", "keep (messages; 0 = off)", "ArrowRight"),  # keep greyed out
              ("trigger", "trigger (fraction)", "ArrowLeft"),
              ("keep_messages", "keep (messages; 0 = off)", "ArrowLeft"),
              ("profile", "model has a profile", "click"),  # trigger, keep greyed out
              ("keep_figures", "summary keeps exact figures", "click"),
              ("profile", "model has a profile", "click"),
              ("keep", "keep (fraction)", "ArrowRight"), ("archive", "archive folded messages", "click")],
}

_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # a proxy must not see the lab


def unavailable() -> str | None:
    """Why the browser cannot run here, or None."""
    if not CHROMIUM.exists():
        return NO_CHROMIUM
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return NO_PLAYWRIGHT
    return None


@contextmanager
def chromium():
    """Debian's chromium, headless, in a fresh profile Playwright makes and deletes."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def api(base: str, token: str, path: str, method: str = "GET", body: dict | None = None):
    """The lab server's REST API: ``body`` sent as JSON, the answer read as JSON (None if empty)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{base}{path}", data=data, method=method,
                                     headers={"Authorization": f"token {token}"})
    with _HTTP.open(request, timeout=10) as response:
        body = response.read()
    return json.loads(body) if body else None


def delete_kernels(base: str, token: str) -> None:
    """Kernels outlive browser pages: shut every session and kernel down through the REST API."""
    for session in api(base, token, "/api/sessions"):
        api(base, token, f"/api/sessions/{session['id']}", "DELETE")
    for kernel in api(base, token, "/api/kernels"):
        api(base, token, f"/api/kernels/{kernel['id']}", "DELETE")


def notebook(source: str) -> dict:
    return {"nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
            "cells": [{"cell_type": "code", "id": "panel", "metadata": {}, "execution_count": None,
                       "outputs": [], "source": source}]}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def lab(root: Path):
    """JupyterLab on a free 127.0.0.1 port with a token, serving ``root/served`` (one notebook per
    panel, ``panel_<name>.ipynb``, and START_HERE.md) with the settings overrides ``make lab``
    installs; yields ``(url, token)``. Config and runtime dirs are temp dirs
    too (no news toast, no "Select Kernel" dialog). On exit: kernels deleted, server stopped."""
    served, config, runtime = root / "served", root / "config", root / "runtime"
    served.mkdir(parents=True)
    settings = root / "settings"  # the overrides make lab installs, from this checkout
    settings.mkdir()
    (settings / "overrides.json").write_bytes((COURSE / "scripts" / "jupyterlab_overrides.json").read_bytes())
    (served / "START_HERE.md").write_bytes((COURSE / "notebooks" / "START_HERE.md").read_bytes())
    for name, source in PANELS.items():
        (served / f"panel_{name}.ipynb").write_text(json.dumps(notebook(source + COUNTER), indent=1),
                                                    encoding="utf-8")
    (config / "labconfig").mkdir(parents=True)
    (config / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    tracker = config / "lab" / "user-settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"autoStartDefaultKernel": True}))
    port, token = _free_port(), secrets.token_hex(16)
    base, log_path = f"http://127.0.0.1:{port}", root / "server.log"
    env = os.environ | {"JUPYTER_CONFIG_DIR": str(config), "JUPYTER_RUNTIME_DIR": str(runtime)}
    log = log_path.open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
         f"--port={port}", "--port-retries=0", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={served}", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         f"--LabApp.app_settings_dir={settings}"],
        env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with code {server.returncode}:\n"
                                   + log_path.read_text(errors="replace")[-3000:])
            try:
                api(base, token, "/api/status")
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    raise RuntimeError("JupyterLab did not answer /api/status within 60 s:\n"
                                       + log_path.read_text(errors="replace")[-3000:]) from None
                time.sleep(0.1)  # polling a server that is starting: there is no event to await
        yield base, token
    finally:
        try:
            if server.poll() is None:
                delete_kernels(base, token)
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


# Installed in every page before its scripts run. labkitFigure: the panel's figure as plotly drew it
# (null until plotly has drawn it with the layout's title), its draw events counted on the element.
_PAGE_JS = """(() => {
    const EVENTS = ['plotly_afterplot', 'plotly_update', 'plotly_react', 'plotly_restyle',
                    'plotly_relayout', 'plotly_redraw'];
    const plain = s => { const d = document.createElement('div'); d.innerHTML = s;
                         return d.textContent.replace(/\\s+/g, ' ').trim(); };
    window.labkitFigure = () => {
        const gd = document.querySelector('.js-plotly-plot');
        const title = gd && gd.layout && gd.layout.title && gd.layout.title.text;
        const shown = gd && gd.querySelector('.gtitle');
        if (typeof title !== 'string' || !gd._fullData || typeof gd.on !== 'function' || !shown
            || plain(shown.textContent) !== plain(title)) return null;
        if (!gd.labkitDraws) {
            gd.labkitDraws = [0];
            for (const e of EVENTS) gd.on(e, () => { gd.labkitDraws[0] += 1; });
        }
        const traces = gd._fullData.map(t => [t.name, t.visible, Array.from(t.y || [])]);
        return {gd, title, draws: gd.labkitDraws[0], key: JSON.stringify([title, traces])};
    };
    window.labkitStatus = () => (document.querySelector('.widget-html-content') || {}).innerText || '';
    window.labkitDone = () => {
        const el = document.querySelector('.labkit-moves-done');
        return el ? Number(el.textContent) : null;
    };
    window.labkitSettled = k => window.labkitDone() === k && window.labkitFigure() !== null
        && window.labkitStatus() !== '' && !window.labkitStatus().includes('re-running');
    for (const type of ['keydown', 'click'])  // the clock starts when the page receives the input
        document.addEventListener(type, () => { window.labkitInputAt ??= performance.now(); }, true);
    window.labkitArm = () => {
        window.labkitBefore = window.labkitFigure();
        window.labkitInputAt = null;
        return window.labkitBefore !== null;
    };
    window.labkitRedrawn = () => {
        const now = window.labkitFigure(), was = window.labkitBefore;
        if (!now || window.labkitStatus().includes('re-running')) return false;
        const redrawn = now.gd !== was.gd || (now.draws > was.draws && now.key !== was.key);
        return redrawn ? performance.now() : false;
    };
})();"""


@contextmanager
def new_page(browser):
    """A page in a fresh context (1280 × 1100), every wait ``WAIT_MS`` at most, ``_PAGE_JS`` in it."""
    context = browser.new_context(viewport={"width": 1280, "height": 1100})
    context.add_init_script(_PAGE_JS)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    try:
        yield page
    finally:
        context.close()


def run_all(page) -> None:
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


def open_panel(page, base: str, token: str, panel: str) -> None:
    """Open the panel's notebook, run it, and wait until its figure is drawn and its status shown."""
    page.goto(f"{base}/lab/tree/panel_{panel}.ipynb?token={token}&reset")
    run_all(page)
    page.wait_for_function("() => labkitSettled(0) || !!document.querySelector('.jp-OutputArea-output"
                           "[data-mime-type=\"application/vnd.jupyter.stderr\"]')", polling="raf")
    error = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    if error.count():
        raise AssertionError(f"the panel's cell failed:\n{error.first.inner_text()}")


def _shown(page, target: str, action: str):
    """What the control shows: a slider's readout, a checkbox's state, the pressed button."""
    if action == "button":
        return page.locator(".widget-toggle-button.mod-active").inner_text()
    if action == "click":
        return page.locator(".widget-checkbox", has_text=target).locator("input").is_checked()
    return page.locator(".widget-hslider", has_text=target).locator(".widget-readout").inner_text()


def move(page, target: str, action: str) -> float:
    """One move as a learner makes it — a key pressed on a slider (``action`` is the key), a
    checkbox clicked (``"click"``) or a button pressed (``"button"``) — and the ms from the page
    receiving it to the first frame showing the redrawn figure. Returns once the kernel has finished
    the move (its status line and figure in), having checked the control changed by one move."""
    done = page.evaluate("labkitDone()")
    was = _shown(page, target, action)
    latency = redraw(page, target, action)
    page.wait_for_function("k => labkitDone() >= k && labkitSettled(labkitDone())", arg=done + 1,
                           polling="raf")
    assert page.evaluate("labkitDone()") == done + 1, f"{action} on {target}: one change in the kernel"
    now = _shown(page, target, action)
    assert now != was, f"{action} on {target} changed what it shows (still {now!r})"
    return latency


def redraw(page, target: str, action: str) -> float:
    """The input of a move (as ``move``) and the wait for the first page's figure to be redrawn,
    not for the kernel to finish; the ms from the page receiving the input to that frame."""
    assert page.evaluate("labkitArm()"), "the figure is drawn before the move"
    if action == "button":
        page.get_by_role("button", name=target, exact=True).click()
    elif action == "click":
        page.locator(".widget-checkbox", has_text=target).locator("input").click()
    else:
        page.locator(".widget-hslider", has_text=target).locator(".noUi-handle").focus()
        page.keyboard.press(action)
    redrawn = page.wait_for_function("() => labkitRedrawn()", polling="raf").json_value()
    start = page.evaluate("window.labkitInputAt")
    assert start is not None, f"the page received the move ({action} on {target})"
    return redrawn - start


def plan(panel: str, rounds: int) -> list[tuple[str, str, str]]:
    """``rounds`` rounds of moves, each moving every knob of the panel (the clinic: each other
    failure mode's button, in turn)."""
    if panel == "clinic":
        from labkit import diagnose

        labels = [diagnose.LABELS[m] for m in diagnose.MODES]
        order = labels[1:] + labels[:1]  # the panel opens on the first mode
        return [("mode", label, "button") for _ in range(rounds) for label in order]
    return ROUNDS[panel] * rounds


def latencies(page, panel: str, rounds: int) -> dict[str, list[float]]:
    """Input → redraw ms of every move of ``plan(panel, rounds)``, by knob, in the page opened on
    the panel (``open_panel``)."""
    measured: dict[str, list[float]] = {}
    for knob, target, action in plan(panel, rounds):
        measured.setdefault(knob, []).append(move(page, target, action))
    return measured
