"""The course map in ``notebooks/START_HERE.md``, the index learners see in JupyterLab.

JupyterLab serves ``notebooks/`` only, so the README is out of its reach; START_HERE.md repeats
what a learner needs from it. Its table is generated: each notebook's link and title (its first
heading), what the learner leaves knowing (the README's course table), and its core-path and total
minutes by the pace rule (``scripts/pace.py``). ``python scripts/pace.py --write`` rewrites it with
the time lines; a test fails when it is out of step.

    python scripts/course_index.py           # print the table
    python scripts/course_index.py --write   # write it into notebooks/START_HERE.md
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pace  # noqa: E402  (a sibling script, not a package)

INDEX = pace.ROOT / "notebooks" / "START_HERE.md"
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
    table = course_table(pace.README.read_text(encoding="utf-8"))
    return {number: knowing for number, _, knowing in ROW.findall(table)}


def title(path: Path) -> str:
    """A notebook's title: its first heading without the number."""
    first = nbformat.read(path, as_version=4).cells[0].source.splitlines()[0]
    return re.sub(r"^#\s*\d\d\s*·\s*", "", first).strip()


def table(times: dict[str, dict[str, int]]) -> str:
    """The course map: one row per notebook, linked, with its times."""
    knowing = leaves_knowing()
    rows = ["| | notebook | you leave knowing | core path | total |", "|---|---|---|---:|---:|"]
    for path in pace.NOTEBOOKS:
        number, m = path.name[:2], times[path.stem]
        rows.append(f"| {number} | [{title(path)}]({path.name}) | {knowing.get(number, '')} "
                    f"| {m['core']} min | {m['total']} min |")
    core, total = pace.hours(times)
    rows.append(f"| | **all sixteen** | | **{core}** | **{total}** |")
    return "\n".join(rows)


def write(times: dict[str, dict[str, int]]) -> None:
    """Replace the table between the markers in START_HERE.md."""
    pace.splice(INDEX, BEGIN, END, table(times))


def main(argv: list[str]) -> int:
    times = {path.stem: pace.minutes(path) for path in pace.NOTEBOOKS}
    print(table(times))
    if "--write" in argv:
        write(times)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
