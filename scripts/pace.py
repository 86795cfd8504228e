"""How long each notebook takes, by one written rule — and the stated times kept in step with it.

The rule (printed in the README, section "How long each notebook takes"):

- prose: the words of every markdown cell, read at 130 words a minute;
- code: the non-blank lines of every code cell a learner sees, read and run at 6 lines a minute
  (cells whose source is hidden — the checks that make a notebook a test — are not counted);
- exercises: 6 minutes for each question checked with ``.check(``;
- outputs, what a run shows (the check cells' lines too): their words — text and tables — scanned
  at 200 words a minute, 1 minute for each figure, 3 minutes for each panel (sliders to move);
- the core path and the deep dives each rounded up to the next 5 minutes; the total is their sum.

A notebook's sections are its ``## `` headings. A heading that ends with ``(deep dive)`` starts
a deep dive, and so does ``## On your model`` (it needs a model of your own to say anything new);
everything else — the title cell, the numbered core sections, the exercise, what to remember — is
the core path, which must take at most 45 minutes.

Outputs are not in the committed notebooks (git strips them), so ``--measure`` runs the notebooks
(as ``make book`` does) and keeps what each code cell showed in scripts/pace-outputs/, with a
hash of the cell's source; a test fails when a cell changed since it was measured.

    python scripts/pace.py           # print the table
    python scripts/pace.py --measure 07 16   # run these notebooks (none named: all) and keep
                                             # what their cells show
    python scripts/pace.py --write   # write each notebook's time line, the README table and the
                                     # course map in notebooks/START_HERE.md (scripts/course_index.py)
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import math
import re
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import course_index  # noqa: E402  (a sibling script: the course map it writes, the tables' helpers)

ROOT, NOTEBOOKS, README = course_index.ROOT, course_index.NOTEBOOKS, course_index.README
WORDS_PER_MINUTE, LINES_PER_MINUTE, MINUTES_PER_EXERCISE, CORE_LIMIT = 130, 6, 6, 45
OUTPUT_WORDS_PER_MINUTE, MINUTES_PER_FIGURE, MINUTES_PER_PANEL = 200, 1, 3
OUTPUTS = ROOT / "scripts" / "pace-outputs"  # one <notebook>.json each
FIGURE_TYPES = ("application/vnd.plotly.v1+json", "image/png", "image/svg+xml")
TIME_LINE = re.compile(r"^Time: [^\n]*?\(by the rule in the README\)\.")  # what time_line() writes
BEGIN, END = "<!-- pace: begin (scripts/pace.py --write) -->", "<!-- pace: end -->"


def heading(cell) -> str | None:
    """The first ``## `` heading of a markdown cell (the section it starts), else ``None``."""
    if cell.cell_type != "markdown":
        return None
    return next((line for line in cell.source.splitlines() if line.startswith("## ")), None)


def is_deep_dive(heading: str) -> bool:
    """Whether a ``## `` heading starts a deep dive rather than a section of the core path."""
    return heading.rstrip().endswith("(deep dive)") or heading.startswith("## On your model")


def hidden(cell) -> bool:
    """Whether a code cell's source is collapsed (the checks that make the notebook a test)."""
    return bool(cell.metadata.get("jupyter", {}).get("source_hidden"))


def source_hash(cell) -> str:
    return hashlib.sha1(cell.source.encode("utf-8")).hexdigest()[:12]


def shown(cell) -> dict[str, int]:
    """What an executed code cell shows: the words of its text and tables, its figures, its panels."""
    seen = {"words": 0, "figures": 0, "panels": 0}
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if out.get("output_type") == "stream":
            seen["words"] += len(out.get("text", "").split())
        elif "application/vnd.jupyter.widget-view+json" in data:
            seen["panels"] += 1
        elif any(kind in data for kind in FIGURE_TYPES):
            seen["figures"] += 1
        elif kind := next((k for k in ("text/html", "text/markdown", "text/plain") if k in data), None):
            seen["words"] += len(as_text(data, kind).split())
    return seen


def as_text(data: dict, kind: str) -> str:
    """A display output's text in ``kind`` as a reader sees it: HTML without its tags."""
    text = data[kind] if isinstance(data[kind], str) else "".join(data[kind])
    return html.unescape(re.sub(r"<[^>]+>", " ", text)) if kind == "text/html" else text


def measured(stem: str) -> dict[str, dict]:
    """What --measure kept for one notebook: cell id -> its source hash and what it showed."""
    path = OUTPUTS / f"{stem}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def output_minutes(seen: dict[str, int]) -> float:
    return (seen["words"] / OUTPUT_WORDS_PER_MINUTE + MINUTES_PER_FIGURE * seen["figures"]
            + MINUTES_PER_PANEL * seen["panels"])


def cell_minutes(cell, seen: dict[str, int] | None = None) -> float:
    """What one cell costs a learner, by the rule (``seen``: what the cell shows when it runs)."""
    if cell.cell_type == "markdown":
        return len(cell.source.split()) / WORDS_PER_MINUTE
    if cell.cell_type != "code":
        return 0.0
    out = output_minutes(seen) if seen else 0.0
    if hidden(cell):
        return out
    lines = sum(1 for line in cell.source.splitlines() if line.strip())
    return (lines / LINES_PER_MINUTE + MINUTES_PER_EXERCISE * len(re.findall(r"\.check\(", cell.source))
            + out)


def stale(path: Path) -> list[str]:
    """The code cells of a notebook whose outputs were not measured for their present source."""
    nb, kept = nbformat.read(path, as_version=4), measured(path.stem)
    return [cell.id for cell in nb.cells if cell.cell_type == "code"
            and kept.get(cell.id, {}).get("sha") != source_hash(cell)]


def minutes(path: Path) -> dict[str, int]:
    """A notebook's core path and deep dives, each rounded up to the next 5 minutes, and their sum."""
    nb, kept = nbformat.read(path, as_version=4), measured(path.stem)
    core = deep = 0.0
    in_deep = False
    for cell in nb.cells:
        if (head := heading(cell)) is not None:
            in_deep = is_deep_dive(head)
        cost = cell_minutes(cell, kept.get(cell.id))
        if in_deep:
            deep += cost
        else:
            core += cost
    up = lambda m: 5 * math.ceil(m / 5)  # noqa: E731
    return {"core": up(core), "deep": up(deep), "total": up(core) + up(deep)}


def time_line(m: dict[str, int]) -> str:
    """The sentence each notebook's first cell starts with."""
    return (f"Time: about {m['total']} minutes — the core path {m['core']}, the deep dives "
            f"{m['deep']} (by the rule in the README).")


def readme_table(times: dict[str, dict[str, int]]) -> str:
    rows = ["| notebook | core path | deep dives | total |", "|---|---:|---:|---:|"]
    rows += [f"| {name} | {m['core']} min | {m['deep']} min | {m['total']} min |"
             for name, m in times.items()]
    core, total = course_index.hours(times)
    rows.append(f"| **all sixteen** | **{core}** | | **{total}** |")
    return "\n".join(rows)


def write(times: dict[str, dict[str, int]]) -> None:
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        first = nb.cells[0]
        lines = first.source.split("\n")
        at = next(i for i, line in enumerate(lines) if line.startswith("Time: "))
        if not TIME_LINE.match(lines[at]):
            raise SystemExit(f"{path.name}: its time line is not one pace.py wrote: {lines[at]!r}")
        lines[at] = TIME_LINE.sub(time_line(times[path.stem]), lines[at], count=1)
        first.source = "\n".join(lines)
        nbformat.write(nb, path)
    course_index.splice(README, BEGIN, END, readme_table(times))
    course_index.write(times)


def measure(paths: list[Path]) -> None:
    """Run each notebook (as the book does) and keep what its code cells show in OUTPUTS."""
    import book  # a sibling script: the kernel of this environment, in the notebook's folder
    OUTPUTS.mkdir(exist_ok=True)
    for path in paths:
        nb = book.execute(nbformat.read(path, as_version=4), path.parent)
        kept = {cell.id: {"sha": source_hash(cell), **shown(cell)}
                for cell in nb.cells if cell.cell_type == "code"}
        (OUTPUTS / f"{path.stem}.json").write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n",
                                                   encoding="utf-8")
        print(f"measured {path.name}", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the time lines and the README table")
    parser.add_argument("--measure", nargs="*", metavar="NB", help="run these notebooks (none: all) "
                        "and keep what their cells show")
    args = parser.parse_args()
    if args.measure is not None:
        measure([p for p in NOTEBOOKS if not args.measure or p.name[:2] in args.measure
                 or p.stem in args.measure])
    unmeasured = [p.name[:2] for p in NOTEBOOKS if stale(p)]
    if unmeasured:
        print(f"outputs not measured for the present cells of {', '.join(unmeasured)}: "
              f"python scripts/pace.py --measure {' '.join(unmeasured)}", file=sys.stderr)
    times = {path.stem: minutes(path) for path in NOTEBOOKS}
    print(readme_table(times))
    if args.write:
        write(times)
    over = [name for name, m in times.items() if m["core"] > CORE_LIMIT]
    if over:
        print(f"core path over {CORE_LIMIT} minutes: {', '.join(over)}", file=sys.stderr)
    return 1 if over or unmeasured else 0


if __name__ == "__main__":
    sys.exit(main())
