"""`make book` (scripts/book.py): notebook 01 and a one-cell panel notebook are run and built into a
static site, which Debian's chromium then opens from disk: every plotly figure is drawn (plotly.js
from the page's own _static/), the panel shows its snapshot with its figure, the diagram loads,
hidden check cells show no source, and no request leaves the machine (every URL the page asks for
is a file:// URL, checked in the browser, and no tag in any page points elsewhere).

Slow-ish (it runs two notebooks, ~40 s), not timed. The browser part (the ``browser`` fixture of
tests/conftest.py) is skipped without /usr/bin/chromium, as tests/test_browser.py is
(`sudo apt-get install chromium`).
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from tests.conftest import script

ROOT = Path(__file__).resolve().parent.parent
book = script("book")

FIRST = ROOT / "notebooks" / "01_why_context_explodes.ipynb"
PANEL = "99_panel"


def _panel_notebook(folder: Path) -> Path:
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# 99 · A panel\n\nBack to "
                                      "[notebook 01](01_why_context_explodes.ipynb)."),
        nbformat.v4.new_code_cell("from labkit import widgets\n\nwidgets.offload_panel(tool_limit=10_000)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = folder / f"{PANEL}.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("book")
    stored = FIRST.read_bytes()
    pages = book.build(out, [FIRST, _panel_notebook(src)], log=lambda line: None)
    assert FIRST.read_bytes() == stored, "the notebook file is not changed: outputs go to the page only"
    return out, pages


class _Refs(HTMLParser):
    """Every URL a page's tags would fetch or link to."""

    def __init__(self):
        super().__init__()
        self.urls = []

    def handle_starttag(self, tag, attrs):
        self.urls += [(tag, v) for k, v in attrs if k in ("src", "href") and v]


def _refs(page: Path) -> list[tuple[str, str]]:
    parser = _Refs()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.urls


def test_the_site_has_a_page_per_notebook_an_index_a_glossary_and_its_files(site):
    out, pages = site
    assert set(pages) == {FIRST.stem, PANEL}
    assert all(p.is_file() for p in pages.values())
    for name in ("index.html", "glossary.html", "_static/book.css"):
        assert (out / name).is_file(), f"{name} is written"
    assert (out / "_static" / "plotly.min.js").read_bytes() == book.PLOTLY_JS.read_bytes(), \
        "plotly.js is the installed package's own copy"
    figures = {p.name for p in (ROOT / "notebooks" / "figures").glob("*.svg")}
    assert figures and figures <= {p.name for p in (out / "figures").iterdir()}, "every diagram is copied"


def test_no_page_refers_to_anything_outside_the_site(site):
    out, _ = site
    for page in out.glob("*.html"):
        for tag, url in _refs(page):
            external = "//" in url or url.startswith(("http:", "https:", "data:text/javascript"))
            if tag == "a" and external:
                continue  # a link a reader may click (deepagents' site) fetches nothing
            assert not external, f"{page.name}: <{tag}> loads {url}"
            if tag == "a" and url in {f"{p.stem}.html" for p in book.notebooks()}:
                continue  # another notebook's page: this test builds two of them only
            assert url.startswith("#") or (out / url.split("#")[0]).exists(), \
                f"{page.name}: <{tag}> points at {url}, which the site lacks"


def test_pages_link_each_other_index_and_glossary(site):
    out, pages = site
    first, panel = (set(u for _, u in _refs(pages[s])) for s in (FIRST.stem, PANEL))
    assert {"index.html", "glossary.html", f"{PANEL}.html"} <= first, "01: index, glossary, next"
    assert {"index.html", "glossary.html", f"{FIRST.stem}.html"} <= panel, "the panel page: previous"
    index = (out / "index.html").read_text(encoding="utf-8")
    assert f'href="{FIRST.stem}.html"' in index, "the course map links notebook 01 to its page"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = [line for line in book.course_map(readme, {}).splitlines() if line[:4].strip("| ").isdigit()]
    assert len(rows) == 16 and all(r.split("|")[1].strip()[3:] in index for r in rows), \
        "every notebook of the README's course map is on the index"
    glossary = (out / "glossary.html").read_text(encoding="utf-8")
    assert "上下文窗口" in glossary and "<table>" in glossary, "the glossary's table, 中文 included"


def test_the_section_each_notebook_points_at_is_in_the_book(site):
    """Every notebook says: see "Using a real model" in START_HERE.md. In the book that link goes to
    start_here.html, which has the section (the index, where it went before, did not)."""
    out, pages = site
    text = pages[FIRST.stem].read_text(encoding="utf-8")
    assert '"Using a real model" in <a href="start_here.html">' in text, "01's page links START_HERE's page"
    start = (out / "start_here.html").read_text(encoding="utf-8")
    assert re.search(r"<h2 id=\"Using-a-real-model\">Using a real model<", start), "the section, anchored"
    assert f'href="{FIRST.stem}.html"' in start and "<table>" in start, "its course map, linked"
    assert all("start_here.html" in {u for _, u in _refs(page)} for page in out.glob("*.html")
               if not page.name.endswith(".slides.html")), "every page's bar links it (a deck has no bar)"


def test_only_and_no_execute_build_the_named_notebook_from_its_stored_form(tmp_path):
    book.main(["--out", str(tmp_path), "--only", "02", "--no-execute"])
    assert sorted(p.name for p in tmp_path.glob("[0-9][0-9]_*.html")) == [
        "02_tokens_windows_profiles.html", "02_tokens_windows_profiles.slides.html"]
    body = (tmp_path / "02_tokens_windows_profiles.html").read_text(encoding="utf-8").split("<main>")[1]
    assert "jp-OutputArea-output" not in body and "jp-CodeCell" in body, \
        "nothing was run: the stored notebook has no outputs"
    with pytest.raises(SystemExit, match="no notebook named 42"):
        book.notebooks(["42"])
    decks = tmp_path / "slides"
    book.main(["--out", str(decks), "--only", "02", "--no-execute", "--slides"])  # make slides
    assert [p.name for p in decks.glob("[0-9][0-9]_*.html")] == ["02_tokens_windows_profiles.slides.html"]


def _open(browser, page_path: Path):
    """The page loaded from disk, and every URL it requested (none may leave the machine)."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.set_default_timeout(60_000)
    page.goto(page_path.as_uri(), wait_until="load")
    return context, page, requested


_DRAWN = """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => ({
    svg: !!gd.querySelector('svg.main-svg'), traces: (gd.data || []).length,
    title: gd.layout && gd.layout.title ? gd.layout.title.text : ''}))"""


def test_in_chromium_notebook_01_draws_every_figure_and_its_diagram_offline(site, browser):
    out, pages = site
    source = pages[FIRST.stem].read_text(encoding="utf-8")
    figures = source.count("Plotly.newPlot(")
    assert figures >= 3, "notebook 01's figures are in the page as plotly HTML"
    context, page, requested = _open(browser, pages[FIRST.stem])
    try:
        page.wait_for_function(f"() => document.querySelectorAll('.js-plotly-plot svg.main-svg').length "
                               f">= {figures}")
        drawn = page.evaluate(_DRAWN)
        assert len(drawn) == figures and all(d["svg"] and d["traces"] for d in drawn), drawn
        assert page.evaluate("() => [...document.images].every(i => i.complete && i.naturalWidth > 0)"), \
            "every image (the diagram) loads"
        assert page.locator("img[src='figures/01-three-defences.svg']").count() == 1
        nb = nbformat.read(FIRST, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        shown = [c for c in code if "hide-input" not in c.metadata.get("tags", [])]
        assert page.locator(".jp-CodeCell").count() == len(code), "every code cell is on the page"
        assert page.locator(".jp-CodeCell .jp-InputArea").count() == len(shown), \
            "cells tagged hide-input show their output only"
    finally:
        context.close()
    assert [u for u in requested if not u.startswith("file://")] == [], "no request leaves the machine"


def test_in_chromium_a_panel_shows_its_snapshot_with_its_figure(site, browser):
    _, pages = site
    context, page, requested = _open(browser, pages[PANEL])
    try:
        page.locator(".labkit-panel-snapshot .js-plotly-plot svg.main-svg").first.wait_for()
        text = page.locator(".labkit-panel-snapshot").inner_text()
        assert "tool_limit (tokens): 10,000" in text and "evicted to files" in text, text
        [drawn] = page.evaluate(_DRAWN)
        assert "evict results over 10,000 tokens" in drawn["title"] and drawn["traces"], drawn
        assert page.locator("a[href='01_why_context_explodes.html']").count() >= 2, \
            "the markdown link to notebook 01 and the bar point at its page"
    finally:
        context.close()
    assert [u for u in requested if not u.startswith("file://")] == [], "no request leaves the machine"
    assert not json.dumps(requested).count("cdn")


def test_each_notebook_has_its_slides_with_reveal_js_from_the_installed_package(site):
    out, pages = site
    assert (out / f"{FIRST.stem}.slides.html").is_file() and (out / f"{PANEL}.slides.html").is_file()
    for name in ("dist/reveal.js", "dist/reveal.css", "dist/theme/white.css", "plugin/notes/notes.js"):
        assert (out / "_static" / "reveal.js" / name).read_bytes() == (book.REVEAL / name).read_bytes(), \
            f"reveal.js's {name} is sphinx-revealjs's own copy"
    assert f'href="{FIRST.stem}.slides.html"' in pages[FIRST.stem].read_text(encoding="utf-8"), \
        "a notebook's page links its slides"
    assert f'href="{FIRST.stem}.slides.html"' in (out / "index.html").read_text(encoding="utf-8"), \
        "the course map links them too"


def test_in_chromium_the_slides_of_01_show_each_slide_with_its_figures_offline(site, browser):
    """Every slide and sub-slide the metadata asks for, in order; each figure drawn to its slide's
    width when its slide shows (plotly draws a hidden figure at a default 700 px); → walks them all
    and the Predict answer takes a press of its own; the checks and deep dives are not in the deck."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout  # the browser fixture checked it

    out, _ = site
    nb = nbformat.read(FIRST, as_version=4)
    kinds = [c.metadata["slideshow"]["slide_type"] for c in nb.cells]
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    requested, errors = [], []
    page.on("request", lambda r: requested.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_default_timeout(60_000)
    try:
        page.goto((out / f"{FIRST.stem}.slides.html").as_uri(), wait_until="load")
        page.wait_for_function("() => window.Reveal && Reveal.isReady()")
        slides = kinds.count("slide") + kinds.count("subslide")
        assert page.evaluate("() => Reveal.getTotalSlides()") == slides
        assert page.locator(".reveal .fragment").count() == kinds.count("fragment")
        hidden = [c.source for c, k in zip(nb.cells, kinds) if k == "skip" and c.cell_type == "code"]
        text = page.locator(".reveal .slides").inner_text()
        assert hidden and not any(s.splitlines()[0] in text for s in hidden), "skipped cells are left out"
        widths, seen, presses = [], set(), 0
        while presses <= 2 * slides:  # a bound, should → stop moving
            sized = ("() => [...Reveal.getCurrentSlide().querySelectorAll('.js-plotly-plot')].map(gd => ["
                     "Number(gd.querySelector('.main-svg')?.getAttribute('width') || 0), gd.clientWidth])")
            try:  # plotly resizes a figure a moment after its slide shows
                page.wait_for_function(f"() => ({sized})().every(([w, box]) => Math.abs(w - box) <= 2)",
                                       timeout=10_000)
            except PlaywrightTimeout:
                pass  # the assertion below says which figure kept which width
            at = page.evaluate("() => [Reveal.getIndices().h, Reveal.getIndices().v]")
            if tuple(at) not in seen:
                widths += page.evaluate(sized)
            seen.add(tuple(at))
            if page.evaluate("() => Reveal.isLastSlide() && !Reveal.availableFragments().next"):
                break
            page.keyboard.press("ArrowRight")  # as a presenter walks the deck: slides, sub-slides, fragments
            presses += 1
        assert len(seen) == slides, "→ reaches every slide and sub-slide"
        assert presses == slides - 1 + kinds.count("fragment"), "a Predict answer takes one press of its own"
        assert len(widths) >= 3 and all(abs(w - box) <= 2 for w, box in widths), \
            f"each figure as wide as its slide: {widths}"
        page.keyboard.press("Escape")
        assert page.evaluate("() => Reveal.isOverview()"), "Esc shows every slide at once"
    finally:
        context.close()
    assert not errors, errors
    assert [u for u in requested if not u.startswith("file://")] == [], "no request leaves the machine"
