"""The slideshow metadata on the notebooks' cells (scripts/slides.py): every notebook carries the rule's
slide types, each rule is shown on a small notebook by flipping what it reads, and a heading always
starts its cell (a slide cannot begin mid-cell). Nothing is run: the test reads files only. The
decks themselves (make slides) are built and opened in chromium in tests/test_book.py.
"""

from __future__ import annotations

import nbformat
import pytest

from tests.conftest import script

slides = script("slides")


def _nb(*cells):
    """A notebook from (kind, source[, metadata]) tuples."""
    made = []
    for kind, source, *meta in cells:
        new = nbformat.v4.new_markdown_cell if kind == "md" else nbformat.v4.new_code_cell
        made.append(new(source, metadata=meta[0] if meta else {}))
    return nbformat.v4.new_notebook(cells=made)


CHECK = {"jupyter": {"source_hidden": True}, "tags": ["hide-input"]}
LESSON = [("md", "# 99 · A lesson"), ("code", "from labkit import plots"),
          ("md", "## 1. An idea"), ("code", "run = 1"), ("code", "assert run == 1", CHECK),
          ("md", "What it showed."), ("md", "**Predict.** What comes next?"), ("code", "run + 1"),
          ("md", "## 2. More (deep dive)"), ("md", "Only for the curious."), ("code", "run * 2"),
          ("md", "## Exercise"), ("code", "nb99.q1.check(answer)"),
          ("code", "# nb99.q1.hint()  # remove the \"#\" and run for a hint"),
          ("md", "## On your model"), ("code", "mine.figure()")]


def test_the_rule_on_a_lesson_slide_by_slide():
    assert slides.slide_types(_nb(*LESSON)) == [
        "slide", "skip",                 # the title; its setup cell (imports)
        "slide", "-", "skip",            # a core section; its code; a hidden check
        "subslide", "-", "fragment",     # text after code; a Predict question; its answer, on a click
        "skip", "skip", "skip",          # a deep dive, all of it
        "slide", "-", "skip",            # the exercise; its check; the commented hint line
        "skip", "skip"]                  # On your model


@pytest.mark.parametrize("flip, cell, before, after", [
    ("the heading loses '(deep dive)'", 8, "skip", "slide"),
    ("the check is not hidden", 4, "skip", "-"),
    ("the question is not a Predict", 7, "fragment", "-"),
    ("the hint line is uncommented", 13, "skip", "-"),
])
def test_each_rule_flips_with_what_it_reads(flip, cell, before, after):
    lesson = [list(c) for c in LESSON]
    assert slides.slide_types(_nb(*lesson))[cell] == before
    if "deep dive" in flip:
        lesson[8][1] = "## 2. More"
    elif "hidden" in flip:
        lesson[4] = ["code", "assert run == 1"]
    elif "Predict" in flip:
        lesson[6][1] = "What comes next?"
    else:
        lesson[13][1] = "nb99.q1.hint()"
    assert slides.slide_types(_nb(*lesson))[cell] == after, flip


@pytest.mark.parametrize("path", slides.NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_every_notebook_carries_the_rules_slide_metadata(path):
    nb = nbformat.read(path, as_version=4)
    assert not slides.headings_inside(nb), \
        "a '## ' heading must start its markdown cell (split the cell there): it starts a slide"
    assert not slides.differences(path), "run: python scripts/slides.py --write"
    kinds = slides.slide_types(nb)
    assert kinds[0] == "slide", "a title slide"
    assert kinds.count("fragment") >= 1, "a Predict question answered on a click"
