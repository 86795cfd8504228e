"""The course map in ``notebooks/START_HERE.md``, the index learners see in JupyterLab.

JupyterLab serves ``notebooks/`` only, so the README is out of its reach; START_HERE.md repeats
what a learner needs from it. Its table is generated: each notebook's link and title (its first
heading), what the learner leaves knowing (the README's course table), and its core-path and total
minutes by the pace rule (``scripts/pace.py``, which imports this module — never the other way:
the times are handed in). ``python scripts/pace.py --write`` rewrites it with the time lines; a
test fails when it is out of step. ``hours`` and ``splice`` serve the README's table too.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
README = ROOT / "README.md"
INDEX = ROOT / "notebooks" / "START_HERE.md"
BEGIN, END = "<!-- course map: begin (scripts/pace.py --write) -->", "<!-- course map: end -->"


# A row of the README's course table: number, name, what the learner leaves knowing.
ROW = re.compile(r"^\| (\d\d) ([^|]+?) \| ([^\n]+?) \|$", re.MULTILINE)


def course_table(readme: str) -> str:
    """The README's course table (header ``| notebook | the learner leaves knowing |``), its rows
    matched by ``ROW``: read here and linked by ``scripts/book.py``."""
    m = re.search(r"^\| notebook \| the learner leaves knowing \|\n(?:\|.*\n)+", readme, re.MULTILINE)
    if not m:
        raise SystemExit("README.md has no course map ('| notebook | the learner leaves knowing |')")
    return m.group(0)


def leaves_knowing() -> dict[str, str]:
    """The README course table's second column, by notebook number."""
    table = course_table(README.read_text(encoding="utf-8"))
    return {number: knowing for number, _, knowing in ROW.findall(table)}


def title(path: Path) -> str:
    """A notebook's title: its first heading without the number."""
    first = nbformat.read(path, as_version=4).cells[0].source.splitlines()[0]
    return re.sub(r"^#\s*\d\d\s*·\s*", "", first).strip()


def table(times: dict[str, dict[str, int]]) -> str:
    """The course map: one row per notebook, linked, with its times."""
    knowing = leaves_knowing()
    rows = ["| | notebook | you leave knowing | core path | total |", "|---|---|---|---:|---:|"]
    for path in NOTEBOOKS:
        number, m = path.name[:2], times[path.stem]
        rows.append(f"| {number} | [{title(path)}]({path.name}) | {knowing.get(number, '')} "
                    f"| {m['core']} min | {m['total']} min |")
    core, total = hours(times)
    rows.append(f"| | **all sixteen** | | **{core}** | **{total}** |")
    return "\n".join(rows)


def hours(times: dict[str, dict[str, int]]) -> tuple[str, str]:
    """The whole course's core path and total, in hours: the last row of both tables."""
    return tuple(f"{sum(m[key] for m in times.values()) / 60:.1f} h" for key in ("core", "total"))


def splice(path: Path, begin: str, end: str, body: str) -> None:
    """Replace what lies between the markers ``begin`` and ``end`` in ``path`` with ``body``."""
    text = path.read_text(encoding="utf-8")
    start, stop = text.index(begin) + len(begin), text.index(end)
    path.write_text(text[:start] + "\n" + body + "\n" + text[stop:], encoding="utf-8")


def write(times: dict[str, dict[str, int]]) -> None:
    """Replace the table between the markers in START_HERE.md."""
    splice(INDEX, BEGIN, END, table(times))
