"""A scripted run-through of the instructor's two-hour cut: what the machine adds to its time.

The guide's two-hour table (notebooks/INSTRUCTORS.md) lists items — a notebook's opening or one of
its ``## `` sections — with minutes by the reading rule. This runs the cut as the guide tells a
presenter to: each notebook in a fresh kernel of this environment, item by item in the table's
order, the cells of every section left out before an item run first (*Run All Above Selected
Cell*), then the item's own cells one by one; and it prints, per item, the wall time the
presenter waits for the cells (and the kernel's CPU), beside the item's minutes. The lab model answers, as
in the room; a browser's drawing is left out (the figures are sent, not drawn), and so is
everything a presenter does but wait: talking, questions, typing.

    python scripts/rehearse.py            # the two-hour cut; prints a table and the total
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
import guide_numbers  # noqa: E402  (sibling scripts: the guide and its notebooks, the sections)
import pace  # noqa: E402

CPU = "import time as _t\nprint(_t.process_time())"


def two_hour_items(guide: str) -> list[tuple[str, str, int]]:
    """The two-hour table's items of a notebook: (notebook, item, minutes)."""
    part = guide.split("### Two hours", 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| \d:\d\d \| (\d\d) (.+?) \| \**(\d+)\**\s*\|$", part, re.M)
    return [(nb, item, int(minutes)) for nb, item, minutes in rows]


def section_key(item: str) -> str:
    """``§3 A run that fits: …`` -> the heading's text ``3. A run that fits: …``; ``opening…``
    -> ``opening``; ``What to remember`` as it is."""
    if item.startswith("opening"):
        return "opening"
    m = re.match(r"§(\d+) (.+)", item)
    return f"{m[1]}. {m[2]}" if m else item


def sections(nb) -> list[tuple[str, list[int]]]:
    """The notebook's sections in order: (heading text or 'opening', indices of its code cells)."""
    out: list[tuple[str, list[int]]] = [("opening", [])]
    for i, cell in enumerate(nb.cells):
        if (head := pace.heading(cell)) is not None:
            out.append((head[3:].strip(), []))
        if cell.cell_type == "code":
            out[-1][1].append(i)
    return out


def kernel_cpu(client: NotebookClient) -> float:
    """The kernel's CPU seconds so far (a cell of our own, not the notebook's)."""
    cell = nbformat.v4.new_code_cell(CPU)
    client.execute_cell(cell, 0)
    return float(cell.outputs[0]["text"])


def rehearse(stem: str, items: list[tuple[str, int]]) -> list[tuple[str, int, float, float, int]]:
    """Run ``items`` (item, minutes) of one notebook in order, in a fresh kernel: (item, minutes,
    wall s, kernel CPU s, cells run) each, the cells of sections left out before it counted with it."""
    import book  # a kernel as the book runs notebooks in (it imports nbconvert and plotly: not here)

    path = guide_numbers.notebook(stem)
    nb = nbformat.read(path, as_version=4)
    with book.fresh_kernel() as (km, env):
        client = NotebookClient(nb, km=km, timeout=600, resources={"metadata": {"path": str(path.parent)}})
        with client.setup_kernel(env=env):
            return _run(client, nb, f"{stem} ({path.name})", items)


def _run(client: NotebookClient, nb, name: str, items: list[tuple[str, int]]) -> list:
    order = sections(nb)
    names = [heading for heading, _ in order]
    out, done = [], 0  # done: the sections whose cells have run
    for item, minutes in items:
        key = section_key(item)
        if key not in names:
            raise SystemExit(f"{name} {item}: no such section")
        at = names.index(key)
        if at < done:
            raise SystemExit(f"{name} {item}: comes before an item already run")
        if not order[at][1]:  # nothing to run here: the cells left out wait for the next item
            out.append((item, minutes, 0.0, 0.0, 0))  # that runs one (Run All Above)
            continue
        cells = [i for _, idx in order[done:at + 1] for i in idx]
        cpu, start = kernel_cpu(client), time.perf_counter()
        for i in cells:
            client.execute_cell(nb.cells[i], i)
        wall = time.perf_counter() - start
        out.append((item, minutes, wall, kernel_cpu(client) - cpu, len(cells)))
        done = at + 1
    return out


def main() -> int:
    guide = guide_numbers.GUIDE.read_text(encoding="utf-8")
    by_nb: dict[str, list[tuple[str, int]]] = {}
    for nb, item, minutes in two_hour_items(guide):
        by_nb.setdefault(nb, []).append((item, minutes))
    load = os.getloadavg()[0]
    print(f"the two-hour cut, run as the guide says (load average {load:.1f} at the start)")
    print(f"{'item':<58} {'minutes':>7} {'cells':>5} {'wait s':>7} {'CPU s':>6}")
    total_wall = total_cpu = 0.0
    for stem, items in by_nb.items():
        for item, minutes, wall, cpu, cells in rehearse(stem, items):
            total_wall, total_cpu = total_wall + wall, total_cpu + cpu
            print(f"{stem + ' ' + item:<58.58} {minutes:>7} {cells:>5} {wall:>7.1f} {cpu:>6.1f}")
    minutes = sum(m for items in by_nb.values() for _, m in items)
    print(f"{'the items in notebooks':<58} {minutes:>7} {'':>5} {total_wall:>7.1f} {total_cpu:>6.1f}")
    print(f"(load average {os.getloadavg()[0]:.1f} at the end; the kernels' start-up is left out)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
