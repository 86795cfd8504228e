"""notebooks/INSTRUCTORS.md, the instructor's guide: every number it quotes is in its prose and is one
its notebook prints (scripts/guide-outputs.json, kept by `python scripts/guide_numbers.py --measure`),
no notebook's code changed since that was measured, and its two-hour cut still fits 120 minutes by
the course's reading rule (scripts/pace.py). Nothing is run here: the test reads files only.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import nbformat
import pytest

from tests.conftest import script

ROOT = Path(__file__).resolve().parents[1]
guide_numbers = script("guide_numbers")
pace = script("pace")
rehearse = script("rehearse")
GUIDE = guide_numbers.GUIDE.read_text(encoding="utf-8")
ROWS = guide_numbers.listed(GUIDE)
KEPT = guide_numbers.stored()
MEASURE = "run: python scripts/guide_numbers.py --measure"


def test_the_guide_lists_the_numbers_it_quotes_and_the_notebook_of_each():
    assert len(ROWS) >= 50, "the block at the end of INSTRUCTORS.md lists the numbers quoted"
    for nb, number in ROWS:
        assert guide_numbers.notebook(nb).exists(), f"{nb} | {number}: no such notebook"
        assert guide_numbers.NUMBER.fullmatch(number), f"{nb} | {number}: write the number as printed"
    assert {nb for nb, _ in ROWS} == {f"{n:02d}" for n in range(1, 17)}, "a number from every notebook"


def test_every_listed_number_is_in_the_guides_prose():
    prose = guide_numbers.prose(GUIDE)
    missing = [f"{nb} | {n}" for nb, n in ROWS if not guide_numbers.in_text(n, prose)]
    assert not missing, f"listed, but the guide no longer quotes them: {missing}"


# Numbers the prose quotes from a notebook's code or markdown, not from what it prints.
UNPRINTED = {"90,000": "01 §5's trigger, in its code", "3,000": "06's Predict offers it",
             "5,000": "12's Predict offers it"}


def test_every_large_number_in_the_prose_is_listed():
    """The other way round: a number with a thousands comma, written in the prose (code left out),
    is in the block — so a typo in the prose is caught, not only one in the block."""
    prose = re.sub(r"```.*?```|`[^`]*`", " ", guide_numbers.prose(GUIDE), flags=re.S)
    listed = {n for _, n in ROWS} | UNPRINTED.keys()
    unlisted = sorted({n for n in guide_numbers.NUMBER.findall(prose) if "," in n} - listed)
    assert not unlisted, f"quoted but not in the block at the end (nor printed, maybe): {unlisted}"


def test_every_listed_number_is_printed_by_its_notebook():
    unmeasured = sorted({nb for nb, _ in ROWS} - KEPT.keys())
    assert not unmeasured, f"not measured: {unmeasured}; {MEASURE} {' '.join(unmeasured)}"
    wrong = [f"{nb} | {n}" for nb, n in ROWS if n not in KEPT[nb]["numbers"]]
    assert not wrong, f"the notebook does not print these (a typo, or its run changed): {wrong}"


@pytest.mark.parametrize("nb", sorted({nb for nb, _ in ROWS}))
def test_no_notebook_changed_since_its_numbers_were_measured(nb):
    assert nb in KEPT, f"{MEASURE} {nb}"
    assert KEPT[nb]["sha256"] == guide_numbers.code_hash(guide_numbers.notebook(nb)), \
        f"stale: notebook {nb}'s code changed since; {MEASURE} {nb}, then check the guide's numbers"


def test_the_checker_catches_a_wrong_number_and_a_number_inside_another():
    """A worked example: notebook 01 prints "Call 9 needed 153,383 tokens". Listed as 153,384 (a
    typo), the number is neither printed nor quoted; "3" does not stand in "153,383" as a number."""
    sha = guide_numbers.code_hash(guide_numbers.notebook("01"))
    kept = {"01": {"sha256": sha, "numbers": ["153,383", "9"]}}
    guide = "Call 9 needed 153,383 tokens.\n\n<!-- guide numbers: notebook | the number as printed\n{}\n-->\n"
    assert guide_numbers.problems(guide.format("01 | 153,383\n01 | 9"), kept) == []
    found = guide_numbers.problems(guide.format("01 | 153,384"), kept)
    assert found == ["01 | 153,384: listed, but not in the guide's prose",
                     "01 | 153,384: notebook 01 does not print it"], found
    assert not guide_numbers.in_text("3", "153,383") and guide_numbers.in_text("153,383", "(153,383x)")


def _two_hour_rows() -> list[tuple[str, str, int]]:
    """The two-hour table: (notebook or '', the item, its minutes)."""
    part = GUIDE.split("### Two hours", 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| \d:\d\d \| (.+?) \| \**(\d+)(?: min)?\**\s*\|$", part, re.M)
    return [(item[:2] if item[:2].isdigit() else "", item, int(m)) for item, m in rows]


def _sections(stem: str) -> dict[str, tuple[bool, float]]:
    """A notebook's sections by the rule (as pace.minutes groups them): the first `## ` heading
    of a markdown cell (or 'opening' before any) -> (deep dive?, minutes, unrounded)."""
    path = guide_numbers.notebook(stem)
    nb, kept = nbformat.read(path, as_version=4), pace.measured(path.stem)
    out, at = {"opening": [False, 0.0]}, "opening"
    for cell in nb.cells:
        if (head := pace.heading(cell)) is not None:
            at = head[3:].strip()
            out[at] = [pace.is_deep_dive(head), 0.0]
        out[at][1] += pace.cell_minutes(cell, kept.get(cell.id))
    return {k: (deep, m) for k, (deep, m) in out.items()}


def _section(item: str) -> str:
    """The table's item (``01 §3 A run that fits: …``) as the key of :func:`_sections`."""
    return rehearse.section_key(item[3:])


def test_the_two_hour_cut_is_core_sections_of_01_04_07_16_and_fits_120_minutes_by_the_rule():
    rows = _two_hour_rows()
    assert rows[-1][1] == "end" and rows[-1][2] == 120, "the table ends at 120 minutes"
    assert sum(m for _, _, m in rows[:-1]) == 120, "its items add up to the end"
    items = [(nb, item, m) for nb, item, m in rows if nb]
    assert {nb for nb, _, _ in items} == {"01", "04", "07", "16"}, "notebooks 01, 04, 07 and 16"
    by_rule = 0.0
    for nb, item, _ in items:
        sections = _sections(nb)
        name = _section(item)
        assert name in sections, f"{item}: no such section in notebook {nb}"
        deep, minutes = sections[name]
        assert not deep, f"{item}: a deep dive, not a core section"
        by_rule += minutes
    rest = sum(m for nb, _, m in rows[:-1] if not nb)  # setting up and the break
    assert by_rule + rest <= 120, \
        f"by the rule the cut now takes {by_rule + rest:.0f} minutes: recompute its table (scripts/pace.py)"


def test_the_guide_says_its_times_are_the_reading_rules_and_is_linked():
    flat = " ".join(GUIDE.split())
    assert "The times are the reading rule's, not a timed session." in flat
    assert "Nobody has run these cuts in front of a room with a clock." in flat
    assert "](notebooks/INSTRUCTORS.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "](INSTRUCTORS.md)" in (ROOT / "notebooks" / "START_HERE.md").read_text(encoding="utf-8")


def _cut_rows(heading: str) -> list[tuple[str, str, str]]:
    """A longer cut's table: (notebook or '', the item, its minutes as written). "Two days / Day 1:"
    names the first table under "### Two days"."""
    heading, _, day = heading.partition(" / ")
    part = GUIDE.split(f"### {heading}", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    if day:
        part = part.split(day, 1)[1].split("\n\n|", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| [\d:]+ \| (.+?) \| \**([\d—]+)(?: min)?\**\s*\|$", part, re.M)
    return [(item[:2] if item[:2].isdigit() else "", item, m) for item, m in rows]


def _named(nb: str, item: str) -> list[str]:
    """The sections an item such as ``04 opening, §1–4, §7, exercise, what to remember`` names."""
    keys, names = list(_sections(nb)), []
    for part in re.sub(r"\(.*?\)", "", item[3:]).split(","):
        part = part.strip()
        span = re.fullmatch(r"§(\d+)(?:–(\d+))?", part)
        if span:
            for k in range(int(span[1]), int(span[2] or span[1]) + 1):
                names += [key for key in keys if key.startswith(f"{k}. ")] or [f"§{k}?"]
        else:
            names.append(next((key for key in keys if key.lower() == part.lower()), f"{part}?"))
    return names


@pytest.mark.parametrize("heading", ["Half a day", "A full day", "Two days / Day 1:", "Two days / Day 2:"])
def test_the_longer_cuts_are_core_sections_timed_by_the_rule(heading):
    """Each item's minutes are its sections' by the rule, each rounded up to a whole minute (as
    the guide says), and the items add up to the table's end."""
    rows = _cut_rows(heading)
    assert rows[-1][1] == "end", "the table ends with its total"
    assert sum(int(m) for _, _, m in rows[:-1] if m.isdigit()) == int(rows[-1][2]), "items add up"
    for nb, item, minutes in rows:
        if not nb:
            continue
        sections, names = _sections(nb), _named(nb, item)
        missing = [n for n in names if n not in sections]
        assert not missing, f"{item}: no section {missing}"
        assert not any(sections[n][0] for n in names), f"{item}: names a deep dive"
        assert int(minutes) == sum(math.ceil(sections[n][1]) for n in names), \
            f"{item}: {minutes} min, by the rule {sum(math.ceil(sections[n][1]) for n in names)}"


def test_the_rehearsal_script_finds_every_item_of_the_two_hour_cut_in_order():
    """scripts/rehearse.py runs the two-hour cut item by item: each of its items is a section of
    its notebook, in the notebook's order (it refuses otherwise)."""
    items = rehearse.two_hour_items(GUIDE)
    assert [nb for nb, _, _ in items] == [nb for nb, _, _ in _two_hour_rows() if nb]
    for stem in {nb for nb, _, _ in items}:
        names = [name for name, _ in rehearse.sections(nbformat.read(guide_numbers.notebook(stem), 4))]
        at = [names.index(rehearse.section_key(item)) for nb, item, _ in items if nb == stem]
        assert at == sorted(set(at)), f"notebook {stem}: items out of order or twice"


def test_the_rehearsal_runs_a_left_out_sections_cells_with_the_next_item_that_runs_a_cell():
    """As the guide says to present a cut: a section left out still runs (Run All Above), with the
    next item that has a cell; an item of prose alone runs nothing."""
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Title"), nbformat.v4.new_code_cell("a = 1"),
        nbformat.v4.new_markdown_cell("## 1. Shown"), nbformat.v4.new_code_cell("b = a"),
        nbformat.v4.new_markdown_cell("## 2. Left out"), nbformat.v4.new_code_cell("c = b"),
        nbformat.v4.new_markdown_cell("## 3. Prose"),
        nbformat.v4.new_markdown_cell("## 4. Shown again"), nbformat.v4.new_code_cell("d = c")])

    class Kernel:  # records what runs; answers the script's own CPU cell
        ran: list[int] = []

        def execute_cell(self, cell, index):
            if cell.source == rehearse.CPU:
                cell.outputs = [{"text": "0.0\n"}]
            else:
                self.ran.append(index)

    kernel = Kernel()
    out = rehearse._run(kernel, nb, "test", [("opening", 1), ("§1 Shown", 1), ("§3 Prose", 1),
                                             ("§4 Shown again", 1)])
    assert [cells for *_, cells in out] == [1, 1, 0, 2], out
    assert kernel.ran == [1, 3, 5, 8], "§2's cell ran with §4, in order"
