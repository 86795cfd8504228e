"""The course as slides: the slideshow metadata on each notebook's cells, by one written rule, and the
static reveal.js export `make slides` and `make book` write (offline).

The rule — one idea per slide; what makes a notebook a test, or only says something when a learner
is alone with it, is skipped:

- the title cell starts a slide, and so does each ``## `` heading of the core path (a heading
  always starts its cell: a test holds that); the setup cell under the title (imports) is skipped;
- a markdown cell after a code cell starts a sub-slide: the next idea of the section, its text, its
  code and what the code shows;
- the cell after a **Predict.** question comes as a fragment: the room answers before it shows;
- skipped: the deep dives and "On your model" (``pace.is_deep_dive``), the hidden checks
  (``pace.hidden``) and an exercise's commented hint line;
- everything else goes on the slide it follows ("-").

    python scripts/slides.py           # list the cells whose metadata is not the rule's (exit 1)
    python scripts/slides.py --write   # write the rule's metadata into every notebook

The export: nbconvert's reveal.js exporter, with reveal.js from the installed sphinx-revealjs
package and plotly.js from the installed plotly, both copied into ``_static/`` beside the slides
(no CDN, no require.js); figures drawn as on the book's pages (``book.StaticOutputs``), panels as
their snapshot, skipped cells left out of the page, a slide taller than the screen scrolled.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pace  # noqa: E402  (a sibling script: what a deep dive is, which cells are checks)

NOTEBOOKS = pace.NOTEBOOKS  # the course's notebooks, in order
HINT = re.compile(r"^#\s*\w+\.q\d+\.hint\(\)", re.M)  # the commented line that asks for a hint
PREDICT = "**Predict.**"


def slide_types(nb) -> list[str]:
    """The slide type the rule gives each cell of ``nb``, in order."""
    types, in_deep, previous, titled = [], False, None, True
    for i, cell in enumerate(nb.cells):
        heading = cell.cell_type == "markdown" and cell.source.startswith("## ")
        if heading:
            in_deep, titled = pace.is_deep_dive(cell.source.splitlines()[0]), False
        setup = titled and i > 0 and cell.cell_type == "code"
        if in_deep or setup or (cell.cell_type == "code" and (pace.hidden(cell) or HINT.search(cell.source))):
            kind = "skip"
        elif i == 0 or heading:
            kind = "slide"
        elif previous is not None and PREDICT in previous.source and previous.cell_type == "markdown":
            kind = "fragment"
        elif cell.cell_type == "markdown" and previous is not None and previous.cell_type == "code":
            kind = "subslide"
        else:
            kind = "-"
        types.append(kind)
        if kind != "skip":
            previous = cell
    return types


def headings_inside(nb) -> list[str]:
    """Markdown cells with a ``## `` heading that does not start the cell (its slide would begin
    mid-cell): their ids."""
    return [cell.id for cell in nb.cells if cell.cell_type == "markdown"
            and re.search(r"^## ", cell.source, re.M) and not cell.source.startswith("## ")]


def differences(path: Path) -> list[str]:
    """The cells of a notebook whose slide type is not the rule's, as 'id: has -> rule'."""
    nb = nbformat.read(path, as_version=4)
    return [f"{cell.id}: {cell.metadata.get('slideshow', {}).get('slide_type')} -> {kind}"
            for cell, kind in zip(nb.cells, slide_types(nb))
            if cell.metadata.get("slideshow", {}).get("slide_type") != kind]


def write(path: Path) -> bool:
    """Write the rule's slide types into a notebook; whether anything changed."""
    nb = nbformat.read(path, as_version=4)
    changed = False
    for cell, kind in zip(nb.cells, slide_types(nb)):
        if cell.metadata.get("slideshow") != {"slide_type": kind}:
            cell.metadata["slideshow"] = {"slide_type": kind}
            changed = True
    if changed:
        nbformat.write(nb, path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="write the rule's metadata")
    args = parser.parse_args(argv)
    paths = NOTEBOOKS
    if args.write:
        for path in paths:
            if write(path):
                print(f"{path.name}: slide metadata written")
        return 0
    wrong = {p.name: differences(p) for p in paths}
    for name, cells in wrong.items():
        for line in cells:
            print(f"{name} {line}")
    return 1 if any(wrong.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
