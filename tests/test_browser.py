"""The panels in a real browser: JupyterLab runs a notebook, a knob moves, the plot redraws.

Everything else tests widgets in the kernel; this is the one check that the panel a learner sees
works end to end — ipywidgets' comms, the sliders' keyboard handling, the checkboxes and buttons,
the status line and the plotly figure redrawn in place (plotly's FigureWidget, ``labkit._render``).
``tests/browser_lab.py`` (shared with ``bench/bench_browser.py``) serves one-cell notebooks, one per
panel, from a temp dir with JupyterLab and drives Debian's ``/usr/bin/chromium`` with Playwright.

The first test opens the offload panel, presses End on the ``tool_limit`` slider (60,000 tokens:
above every export, so nothing is evicted and the run overflows the window), then Home (2,000:
every export evicted), and reads back the status line and the figure's own data from the page.
The last moves every knob of every panel (``browser_lab.plan``: the knobs panel over a 200-call
record) ``ROUNDS`` times, checks each move redraws the figure, and prints each knob's input →
redraw latency (a figure, not a check; ``make bench`` measures it as ``browser_redraw_ms_max``).
Every wait is on a condition (a figure drawn, a redraw, the kernel done), never a fixed time.
Skipped when ``/usr/bin/chromium`` is missing (``sudo apt-get install chromium``); Playwright never
downloads a browser. A failure leaves a screenshot in pytest's temp dir and names it in the error.
"""

from __future__ import annotations

import re
import statistics
from contextlib import contextmanager
from pathlib import Path

import pytest

from labkit import plots
from tests import browser_lab
from tests.conftest import CHROMIUM, NO_CHROMIUM

ROUNDS = 1  # rounds of moves per panel, each moving every knob (bench/bench_browser.py makes 5)

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab serving the panels' notebooks (``browser_lab.lab``); ``(url, token)``."""
    with browser_lab.lab(tmp_path_factory.mktemp("lab")) as served:
        yield served


@pytest.fixture
def page(lab, browser):
    """A fresh page; afterwards its kernels are deleted."""
    with browser_lab.new_page(browser) as page:
        try:
            yield page
        finally:
            browser_lab.delete_kernels(*lab)


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


_READBACK = """() => {
    const slider = [...document.querySelectorAll('.widget-hslider')]
        .find(s => s.textContent.includes('tool_limit'));
    const figure = labkitFigure();  // null unless drawn: then the test fails on reading it
    return {status: labkitStatus(), readout: slider.querySelector('.widget-readout').innerText,
            title: figure.title,
            traces: Object.fromEntries(figure.gd._fullData.filter(t => t.visible === true)  // as drawn
                .map(t => [t.name, Array.from(t.y)]))};
}"""


def _readback(page) -> dict:
    """What the page shows once the kernel is done, read in one go (status and figure from the same
    moment): the status line, the tool_limit readout, the figure's title and its traces' y values."""
    return page.evaluate(_READBACK)


def _numbers(status: str) -> dict:
    """Peak, window and results evicted, read from the status line's words."""
    m = re.search(r"peak ([\d,]+) of ([\d,]+) tokens · (\d+) results? evicted", status)
    assert m, f"the status line does not say peak / window / evicted: {status!r}"
    peak, window, evicted = (int(g.replace(",", "")) for g in m.groups())
    return {"peak": peak, "window": window, "evicted": evicted}


def test_moving_the_tool_limit_slider_redraws_the_run(lab, page, tmp_path):
    with screenshot_on_failure(page, tmp_path / "failure.png"):
        browser_lab.open_panel(page, *lab, "offload")
        first = _readback(page)
        seen = first["traces"]["seen by the model"]
        start = _numbers(first["status"])
        assert first["readout"] == "20,000" and "evict results over 20,000 tokens" in first["title"]
        assert "needle answered correctly: yes" in first["status"] and start["evicted"] > 0
        assert start["peak"] == max(seen) < start["window"] == 128_000
        assert "call failed" not in first["traces"]

        browser_lab.move(page, "tool_limit (tokens)", "End")  # 60,000: no export is that big
        top = _readback(page)
        high = _numbers(top["status"])
        assert top["readout"] == "60,000" and "evict results over 60,000 tokens" in top["title"]
        assert top["status"].startswith("overflow: call ") and high["evicted"] == 0
        assert high["peak"] == max(top["traces"]["seen by the model"]) > high["window"] == 128_000
        assert top["traces"]["call failed"], "the call that overflowed is marked on the figure"

        browser_lab.move(page, "tool_limit (tokens)", "Home")  # 2,000: every export evicted
        bottom = _readback(page)
        low = _numbers(bottom["status"])
        assert bottom["readout"] == "2,000" and "evict results over 2,000 tokens" in bottom["title"]
        assert "needle answered correctly: yes" in bottom["status"]
        assert low["evicted"] > start["evicted"] and low["peak"] < start["peak"]
        assert low["peak"] == max(bottom["traces"]["seen by the model"])


@pytest.mark.parametrize("panel", browser_lab.PANELS)
def test_every_knob_of_each_panel_redraws_and_says_how_long(lab, page, tmp_path, panel, record_property):
    """Each knob of the panel moved ``ROUNDS`` times, each move to a setting not seen before (the
    clinic: every other failure mode's button, ``ROUNDS`` times over; its cases run first, as
    notebook 16 runs them): each move changes its control by one step, the kernel makes one change,
    and the figure is redrawn. Input → redraw latency — the key press or click reaching the page to
    the first animation frame showing the new figure — printed in the test summary
    (``tests/conftest.py``): each knob's median, the worst first, never a pass/fail time."""
    with screenshot_on_failure(page, tmp_path / "failure.png"):
        browser_lab.open_panel(page, *lab, panel)
        measured = browser_lab.latencies(page, panel, ROUNDS)
    knobs = {knob for knob, _, _ in browser_lab.plan(panel, 1)}
    assert set(measured) == knobs, "every knob of the panel was moved"
    assert all(ms > 0 for times in measured.values() for ms in times), "each redraw came after its move"
    medians = sorted(((statistics.median(t), knob) for knob, t in measured.items()), reverse=True)
    record_property(f"latency_ms {panel} (median of each knob's moves, worst first)",
                    ", ".join(f"{knob} {ms:.0f}" for ms, knob in medians) + " ms")


_FITS = """() => [...document.querySelectorAll('.js-plotly-plot')].every(gd => {
    const svg = gd.querySelector('.main-svg'), cell = gd.closest('.jp-Cell');
    const right = svg && svg.getBoundingClientRect().right, edge = cell && cell.getBoundingClientRect().right;
    return right && edge && right <= edge && right > edge - 40;  // as wide as the cell, no wider
})"""

_LOOKS = """() => {
    const box = el => el.getBoundingClientRect();
    const apart = (a, b) => a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top;
    const status = document.querySelector('.widget-html.jp-RenderedHTMLCommon');
    const gd = labkitFigure().gd, layout = gd._fullLayout;
    const th = status.querySelector('th');
    const ys = gd._fullData.filter(t => t.visible === true).flatMap(t => Array.from(t.y || []));
    return {
        clipped_labels: [...document.querySelectorAll('.widget-label')]
            .filter(l => l.textContent && l.scrollWidth > l.clientWidth).map(l => l.textContent),
        status_overflow: status.scrollWidth - status.clientWidth,
        th_padding: th ? parseFloat(getComputedStyle(th).paddingLeft) : null,
        title_meets_toolbar: !apart(box(gd.querySelector('.gtitle')), box(gd.querySelector('.modebar'))),
        x_ticks: [...gd.querySelectorAll('.xtick text')].map(t => t.textContent),
        y_top: layout.yaxis.range[1], data_top: Math.max(...ys),
        lines: (layout.shapes || []).map(s => s.y0),
        figure_overflow: box(gd.querySelector('.main-svg')).right - box(gd.closest('.jp-Cell')).right,
        title_overflow: box(gd.querySelector('.gtitle')).right - box(gd.querySelector('.main-svg')).right,
        figure_below_controls: box(gd).top - Math.max(...[...document.querySelectorAll(
            '.widget-toggle-buttons, .widget-hslider, .widget-checkbox')].map(c => box(c).bottom)),
    };
}"""


SCREENS = {"desk": (1280, 1100, 1.0), "projector": (1280, 720, 1.5)}


@pytest.mark.parametrize("screen", SCREENS)
@pytest.mark.parametrize("panel", browser_lab.PANELS)
def test_each_panel_reads_well_in_jupyterlab(lab, browser, tmp_path, panel, screen):
    """As a learner sees it at 1280 px, and as a room does on a 1280 × 720 projector with the
    browser zoomed to 150% and JupyterLab's side bar closed: no control's label cut off, the tables
    styled as JupyterLab styles an output's and none wider than the panel, the toolbar (shown on
    hover) clear of the title, whole model calls on the x axis, and the y axis at the data's scale
    (a reference line far above it is named, not drawn) — for the clinic, on every failure mode,
    its plot right under its buttons. A screenshot of each is kept beside the test's temp files."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    width, height, zoom = SCREENS[screen]
    with browser_lab.new_page(browser) as page, screenshot_on_failure(page, tmp_path / "failure.png"):
        browser_lab.open_panel(page, *lab, panel)  # at 1280 px: a narrow toolbar hides the kernel's state
        if zoom != 1:  # zoomed (CSS pixels are the screen's over the zoom), then the side bar closed
            page.set_viewport_size({"width": round(width / zoom), "height": round(height / zoom)})
            page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click()  # closes it
            page.locator("#jp-left-stack").wait_for(state="hidden")
            try:  # the figure is redrawn to its cell's new width, not at once
                page.wait_for_function(_FITS, timeout=15_000)
            except PlaywrightTimeout:
                pass  # the checks below say what does not fit
        modes = ([label for _, label, _ in browser_lab.plan("clinic", 1)] if panel == "clinic" else [None])
        for n, mode in enumerate(modes):
            if mode:
                browser_lab.move(page, mode, "button")
            page.locator(".js-plotly-plot").first.hover()
            page.locator(".modebar").first.wait_for()
            looks = page.evaluate(_LOOKS)
            page.screenshot(path=str(tmp_path / f"{panel}_{n}.png"), full_page=True)
            where = f"{panel} {mode or ''}: {looks}"
            assert looks["clipped_labels"] == [], where
            assert looks["status_overflow"] <= 0, where
            assert looks["th_padding"] is None or looks["th_padding"] > 0, where
            assert not looks["title_meets_toolbar"], where
            assert looks["figure_overflow"] <= 0 and looks["title_overflow"] <= 0, f"cut off: {where}"
            assert all(re.fullmatch(r"\d+", t.replace(",", "")) for t in looks["x_ticks"]), where
            top = max([looks["data_top"], *looks["lines"]])
            assert looks["y_top"] <= 1.25 * top, where
            assert all(y <= plots.FAR * looks["data_top"] for y in looks["lines"]), where
            if panel == "clinic":
                assert looks["figure_below_controls"] < 40, f"the plot first: {where}"
        browser_lab.delete_kernels(*lab)


def test_start_here_opens_rendered(lab, page):
    """Opened from the file browser, START_HERE.md shows as a page — its table a table, its links
    links — not as Markdown source: make lab's settings make Markdown Preview the default viewer."""
    base, token = lab
    page.goto(f"{base}/lab?token={token}&reset")
    page.locator(".jp-DirListing-item", has_text="START_HERE.md").dblclick()
    shown = page.locator(".jp-MainAreaWidget:visible .jp-RenderedMarkdown")
    shown.locator("table").first.wait_for()
    assert shown.locator("a[href*='01_why_context_explodes.ipynb']").count() >= 1, "links are links"
    assert page.locator(".jp-MainAreaWidget:visible .jp-FileEditor").count() == 0, "no source editor"
