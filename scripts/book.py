"""Build the course as a static HTML book, offline: `make book` -> build/book/index.html.

Each notebook is run top to bottom in a fresh kernel of this environment (on the lab model:
LABKIT_MODEL, LABKIT_BASE_URL, LABKIT_WINDOW and PLOTLY_RENDERER are left out of its environment),
in its own folder as JupyterLab and the tests run it; the run's outputs go to the page only, never
back into the notebook file. nbconvert's HTML exporter (lab template) then writes one page per
notebook, with these changes:

- every plotly figure gets a text/html form drawn by plotly.js, which the page loads once from
  _static/plotly.min.js, copied from the installed plotly package (no CDN);
- a panel (labkit.widgets) shows its static snapshot: the live widget would need the widget
  manager from a CDN, and sliders need a kernel anyway;
- cells tagged hide-input show only their output; no require.js, MathJax or widget script from a
  CDN (the course has no math); links to other notebooks point at their pages;
- a bar on top and at the bottom: index, start here, glossary, instructors, previous and next
  notebook.

index.html holds the README's course map (each notebook linked to its page), start_here.html the
learner's guide (notebooks/START_HERE.md), glossary.html the glossary (GLOSSARY.md), instructors.html
the instructor's guide (notebooks/INSTRUCTORS.md); notebooks/figures/ is copied beside the pages, so
the diagrams show.

    .venv/bin/python scripts/book.py [--out build/book] [--only 01 04] [--no-execute]

--only builds the named notebooks (by number or name); --no-execute writes the pages from the
notebooks as stored (no outputs): the site's structure in seconds, without running anything.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from html import escape
from pathlib import Path

import ipykernel.kernelspec
import nbformat
import plotly
import plotly.io as pio
from jinja2 import DictLoader
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbconvert import HTMLExporter, SlidesExporter
from nbconvert.filters import markdown2html
from nbconvert.preprocessors import Preprocessor, TagRemovePreprocessor

sys.path.insert(0, str(Path(__file__).resolve().parent))
import course_index  # noqa: E402  (a sibling script: the README's course table is read there)

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
OUT = ROOT / "build" / "book"
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
# reveal.js as the installed sphinx-revealjs package ships it (the `book` extra): found, not imported
# (importing it imports Sphinx). What the slides load of it is copied to _static/reveal.js/.
REVEAL = next((Path(p) / "sphinx_revealjs" / "_static" / "revealjs" for p in sys.path
               if (Path(p or ".") / "sphinx_revealjs" / "_static" / "revealjs" / "dist").is_dir()), None)
REVEAL_FILES = ("LICENSE", "dist/reveal.css", "dist/reveal.js", "dist/theme/white.css",
                "dist/theme/fonts/source-sans-pro", "plugin/notes/notes.js")
MIME = "application/vnd.plotly.v1+json"
WIDGET = "application/vnd.jupyter.widget-view+json"
# Not passed to the kernels: the book is the course as run on the lab model, with plotly's defaults.
UNSET = ("LABKIT_MODEL", "LABKIT_BASE_URL", "LABKIT_WINDOW", "PLOTLY_RENDERER")

TEMPLATE = """{%- extends 'index.html.j2' -%}
{% block html_head_js_requirejs %}{% endblock %}
{% block html_head_js_mathjax %}{% endblock %}
{% block html_head_js_mermaidjs %}{% endblock %}
{% block jupyter_widgets %}{% endblock %}
{% block html_head_css %}
<script src="_static/plotly.min.js"></script>
<link rel="stylesheet" href="_static/book.css">
{% endblock %}
{% block body_header %}{{ super() }}{{ resources.book_nav }}{% endblock %}
{% block body_footer %}{{ resources.book_nav }}{{ super() }}{% endblock %}
"""

# The slides: the reveal template without its CDN scripts (jQuery, require.js, mermaid, MathJax, the
# widget manager); reveal.js and plotly.js from _static/. A figure drawn on a slide not yet shown is
# resized when its slide shows; a slide taller than the screen scrolls.
SLIDES_TEMPLATE = """{%- extends 'index.html.j2' -%}
{% block html_head_js %}{% endblock %}
{% block html_head_js_mathjax %}{% endblock %}
{% block jupyter_widgets %}{% endblock %}
{% block html_head_css %}
<script src="_static/plotly.min.js"></script>
<link rel="stylesheet" href="_static/slides.css">
{% endblock %}
{% block footer_js %}
<script src="_static/reveal.js/dist/reveal.js"></script>
<script src="_static/reveal.js/plugin/notes/notes.js"></script>
<script>
Reveal.initialize({controls: true, progress: true, hash: true, center: false, transition: "none",
                   navigationMode: "linear",
                   slideNumber: "c/t", width: {{ resources.reveal.width }}, height: {{ resources.reveal.height }},
                   plugins: [RevealNotes]});
function shown(event) {
  const slide = event.currentSlide, room = Reveal.getConfig().height * 0.95;
  for (const gd of slide.querySelectorAll(".js-plotly-plot")) Plotly.Plots.resize(gd);
  if (slide.scrollHeight > room) slide.classList.add("scrolled");
}
Reveal.on("ready", shown);
Reveal.on("slidechanged", shown);
</script>
{% endblock %}
"""

SLIDES_CSS = """
.reveal .slides section { text-align: left; }
.reveal h1, .reveal h2 { text-transform: none; }
.reveal .slides section.scrolled { height: 95% !important; overflow-y: auto; }
.reveal .jp-OutputArea-output table { font-size: 0.8em; }
.labkit-panel-snapshot { border-left: 3px solid #d0d7de; padding-left: 0.8em; }
"""

CSS = """
nav.book { display: flex; gap: 1.5em; flex-wrap: wrap; padding: 0.6em 1em; margin: 0 0 1em;
  background: #f3f5f8; border-bottom: 1px solid #d0d7de; font-family: system-ui, sans-serif; }
nav.book:last-child { border-top: 1px solid #d0d7de; margin: 2em 0 0; }
nav.book .next { margin-left: auto; }
body.book-page { max-width: 960px; margin: 0 auto; padding: 1em 2em;
  font-family: system-ui, sans-serif; line-height: 1.5; }
body.book-page table { border-collapse: collapse; }
body.book-page th, body.book-page td { border: 1px solid #d0d7de; padding: 0.3em 0.6em;
  text-align: left; vertical-align: top; }
.labkit-panel-snapshot { border-left: 3px solid #d0d7de; padding-left: 0.8em; }
"""


def notebooks(only: list[str] | None = None, folder: Path = NOTEBOOKS) -> list[Path]:
    """The course's notebooks in order; ``only`` keeps those whose name or number is given."""
    found = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    if not only:
        return found
    chosen = [p for p in found if p.stem in only or p.stem[:2] in only or p.name in only]
    missing = [w for w in only if not any(w in (p.stem, p.stem[:2], p.name) for p in chosen)]
    if missing:
        raise SystemExit(f"no notebook named {', '.join(missing)} in {folder}")
    return chosen


class _ThisPython(KernelSpecManager):
    """The python3 kernel of the Python running the build (as nbval's --nbval-current-env)."""

    def get_kernel_spec(self, kernel_name):
        return self.kernel_spec_class(resource_dir=ipykernel.kernelspec.RESOURCES,
                                      **ipykernel.kernelspec.get_kernel_dict())


@contextmanager
def fresh_kernel():
    """``(km, env)``: a kernel manager for a fresh kernel of this environment, not yet started
    (start it with ``env``), shut down when the block ends; the course's state and progress files
    go to a temp folder, not the learner's."""
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="labkit-book-") as sockets:
        env["LABKIT_STATE"] = str(Path(sockets) / "state")  # notebook 13's SQLite files: not yours
        env["LABKIT_PROGRESS"] = str(Path(sockets) / "progress.jsonl")  # nor your exercises' checks
        km = KernelManager(kernel_name="python3", kernel_spec_manager=_ThisPython(), transport="ipc",
                           ip=str(Path(sockets) / "kernel"))
        try:
            yield km, env
        finally:  # a kernel manager passed to nbclient is the caller's to shut down
            if km.has_kernel:
                km.shutdown_kernel()


def execute(nb, cwd: Path, timeout: int = 300):
    """Run ``nb`` in memory, in a fresh kernel of this environment started in ``cwd``."""
    with fresh_kernel() as (km, env):
        NotebookClient(nb, km=km, timeout=timeout, resources={"metadata": {"path": str(cwd)}}).execute(env=env)
    return nb


class StaticOutputs(Preprocessor):
    """Outputs a page without a kernel can show: plotly figures as HTML (plotly.js from the page),
    panels as their snapshot; no widget state (it would load the widget manager from a CDN)."""

    def preprocess(self, nb, resources):
        nb.metadata.pop("widgets", None)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if MIME in data and "text/html" not in data:
                data["text/html"] = pio.to_html(dict(data[MIME]), include_plotlyjs=False,
                                                include_mathjax=False, full_html=False, validate=False,
                                                default_width="100%")
            if WIDGET in data:
                data.pop(WIDGET)
                data.setdefault("text/html", "<p><i>An interactive widget: run the notebook to use it.</i></p>")
        return cell, resources


def page_links(markdown: str) -> str:
    """Markdown links to a notebook, the README, START_HERE, the instructor's guide or the glossary,
    pointed at the book's pages: a notebook's page, index.html, start_here.html, instructors.html,
    glossary.html."""
    markdown = re.sub(r"\]\((\d\d_\w+)\.ipynb", r"](\1.html", markdown)
    markdown = re.sub(r"\]\((?:\.\./)?README\.md", "](index.html", markdown)
    markdown = re.sub(r"\]\((?:notebooks/)?START_HERE\.md", "](start_here.html", markdown)
    markdown = re.sub(r"\]\((?:notebooks/)?INSTRUCTORS\.md", "](instructors.html", markdown)
    return re.sub(r"\]\((?:\.\./)?GLOSSARY\.md", "](glossary.html", markdown)


class PageLinks(Preprocessor):
    """Links in markdown to another notebook, the README, START_HERE or the glossary point at the
    book's pages (:func:`page_links`)."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "markdown":
            cell.source = page_links(cell.source)
        return cell, resources


def title(nb, fallback: str) -> str:
    """The notebook's first heading, without its '#'."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if m:
                return m.group(1).strip()
    return fallback


def nav(prev: tuple[str, str] | None = None, next_: tuple[str, str] | None = None,
        slides: str | None = None) -> str:
    """The bar above and below each page: index, start here, glossary, instructors, the notebook's
    slides, the previous and the next notebook."""
    links = ['<a href="index.html">Index</a>', '<a href="start_here.html">Start here</a>',
             '<a href="glossary.html">Glossary</a>', '<a href="instructors.html">Instructors</a>']
    if slides:
        links.append(f'<a class="slides" href="{slides}">Slides</a>')
    if prev:
        links.append(f'<a class="prev" rel="prev" href="{prev[0]}">← {escape(prev[1])}</a>')
    if next_:
        links.append(f'<a class="next" rel="next" href="{next_[0]}">{escape(next_[1])} →</a>')
    return f'<nav class="book">{" ".join(links)}</nav>'


def exporter() -> HTMLExporter:
    """nbconvert's HTML exporter, lab template, with the book's head and navigation."""
    html = HTMLExporter(template_name="lab", extra_loaders=[DictLoader({"book.html.j2": TEMPLATE})],
                        template_file="book.html.j2", exclude_input_prompt=True,
                        exclude_output_prompt=True)
    html.register_preprocessor(TagRemovePreprocessor(remove_input_tags={"hide-input"}), enabled=True)
    html.register_preprocessor(StaticOutputs(), enabled=True)
    html.register_preprocessor(PageLinks(), enabled=True)
    return html


def slides_exporter() -> SlidesExporter:
    """nbconvert's reveal.js exporter at 1280 × 720, reveal.js and plotly.js from _static/."""
    slides = SlidesExporter(extra_loaders=[DictLoader({"slides.html.j2": SLIDES_TEMPLATE})],
                            template_file="slides.html.j2", exclude_input_prompt=True,
                            exclude_output_prompt=True, reveal_url_prefix="_static/reveal.js",
                            reveal_theme="white", reveal_width="1280", reveal_height="720")
    slides.register_preprocessor(TagRemovePreprocessor(remove_input_tags={"hide-input"}), enabled=True)
    slides.register_preprocessor(StaticOutputs(), enabled=True)
    slides.register_preprocessor(PageLinks(), enabled=True)
    return slides


def copy_reveal(static: Path) -> None:
    """What the slides load of reveal.js, from the installed sphinx-revealjs, into static/reveal.js/."""
    if REVEAL is None:
        raise SystemExit("the slides need reveal.js from the sphinx-revealjs package (the `book` extra): "
                         "run `make setup` (or `uv sync --all-extras`)")
    for name in REVEAL_FILES:
        source, target = REVEAL / name, static / "reveal.js" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copyfile(source, target)


def page(body: str, heading: str, navbar: str) -> str:
    """A plain page (index, glossary) in the book's style."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(heading)}</title>'
            f'<link rel="stylesheet" href="_static/book.css"></head>\n<body class="book-page">{navbar}'
            f"\n{body}\n{navbar}</body></html>\n")


def course_map(readme: str, pages: dict[str, str], decks: dict[str, str] | None = None) -> str:
    """The README's course map (the 'notebook | the learner leaves knowing' table), each notebook
    linked to its page and its slides when they were built."""
    def link(row: re.Match) -> str:
        number, name, knowing = row.groups()
        target, deck = pages.get(number), (decks or {}).get(number)
        shown = f"[{number} {name}]({target})" if target else f"{number} {name}"
        if deck:
            shown += f" · [slides]({deck})"
        return f"| {shown} | {knowing} |" if target or deck else row.group(0)

    return course_index.ROW.sub(link, course_index.course_table(readme))


def index_page(readme: str, pages: dict[str, str], decks: dict[str, str] | None = None) -> str:
    """index.html: the README's title, its first paragraph, the course map (pages and slides), the
    glossary link."""
    heading = re.search(r"^# (.+)$", readme, re.M).group(1)
    intro = readme.split("## What this is", 1)[1].split("\n\n")[1].replace("](GLOSSARY.md)", "](glossary.html)")
    body = (f"<h1>{escape(heading)}</h1>\n{markdown2html(intro)}\n<h2>The course</h2>\n"
            f"{markdown2html(course_map(readme, pages, decks))}\n"
            '<p>The course\'s terms, English ↔ 中文: <a href="glossary.html">the glossary</a>.</p>')
    return page(body, heading, nav())


def markdown_page(text: str) -> str:
    """A Markdown file as a page of the book — GLOSSARY.md, notebooks/START_HERE.md (the notebooks
    point at its sections, such as "Using a real model"), notebooks/INSTRUCTORS.md — titled by its
    first heading, its links pointed at the book's pages."""
    heading = re.search(r"^# (.+)$", text, re.M).group(1)
    return page(markdown2html(page_links(text)), heading, nav())


MARKDOWN_PAGES = {"glossary.html": ROOT / "GLOSSARY.md", "start_here.html": NOTEBOOKS / "START_HERE.md",
                  "instructors.html": NOTEBOOKS / "INSTRUCTORS.md"}


def build(out: Path = OUT, paths: list[Path] | None = None, run: bool = True, log=print,
          pages: bool = True, slides: bool = True) -> dict[str, Path]:
    """Write the book to ``out``: for each notebook in ``paths`` (default: all) its page and its
    slides (``<stem>.slides.html``), each run once for both; index.html, start_here.html,
    glossary.html, instructors.html, _static/ and figures/. Returns what was written, by notebook stem
    (the page, or the slides when ``pages`` is false)."""
    paths = notebooks() if paths is None else list(paths)
    out.mkdir(parents=True, exist_ok=True)
    static = out / "_static"
    static.mkdir(exist_ok=True)
    shutil.copyfile(PLOTLY_JS, static / "plotly.min.js")
    (static / "book.css").write_text(CSS, encoding="utf-8")
    if slides:
        copy_reveal(static)
        (static / "slides.css").write_text(SLIDES_CSS, encoding="utf-8")
    shutil.copytree(NOTEBOOKS / "figures", out / "figures", dirs_exist_ok=True)
    stored = [nbformat.read(p, as_version=4) for p in paths]
    titles = [(f"{p.stem}.html", title(nb, p.stem)) for p, nb in zip(paths, stored)]
    html, deck, built = exporter(), slides_exporter(), {}
    for i, (path, nb) in enumerate(zip(paths, stored)):
        start = time.monotonic()
        if run:
            execute(nb, path.parent)
        resources = {"metadata": {"name": titles[i][1]}}
        if slides:
            body, _ = deck.from_notebook_node(copy.deepcopy(nb), resources=dict(resources))
            built[path.stem] = out / f"{path.stem}.slides.html"
            built[path.stem].write_text(body, encoding="utf-8")
        if pages:
            links = nav(titles[i - 1] if i else None, titles[i + 1] if i + 1 < len(titles) else None,
                        slides=f"{path.stem}.slides.html" if slides else None)
            body, _ = html.from_notebook_node(nb, resources=resources | {"book_nav": links})
            built[path.stem] = out / titles[i][0]
            built[path.stem].write_text(body, encoding="utf-8")
        log(f"{path.stem}: {'ran and ' if run else ''}written in {time.monotonic() - start:.0f} s")
    found = {f.name[:2]: f.name for f in sorted(out.glob("[0-9][0-9]_*.html")) if ".slides." not in f.name}
    decks = {f.name[:2]: f.name for f in sorted(out.glob("[0-9][0-9]_*.slides.html"))}  # earlier builds' too
    (out / "index.html").write_text(index_page((ROOT / "README.md").read_text(encoding="utf-8"), found, decks),
                                    encoding="utf-8")
    for name, source in MARKDOWN_PAGES.items():
        (out / name).write_text(markdown_page(source.read_text(encoding="utf-8")), encoding="utf-8")
    log(f"book: {out / 'index.html'} ({len(built)} notebooks: "
        f"{' and '.join(w for w, on in (('pages', pages), ('slides', slides)) if on)})")
    return built


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="where the site goes (default build/book)")
    parser.add_argument("--only", nargs="+", help="build only these notebooks (number or name)")
    parser.add_argument("--no-execute", dest="run", action="store_false",
                        help="pages from the notebooks as stored, without running them")
    parser.add_argument("--slides", action="store_true",
                        help="the slides only, no pages (make slides)")
    args = parser.parse_args(argv)
    build(args.out, notebooks(args.only), run=args.run, pages=not args.slides)


if __name__ == "__main__":
    sys.exit(main())
