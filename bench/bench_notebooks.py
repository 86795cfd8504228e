"""Benchmark: how big an executed notebook is — what a learner's saved notebook, nbconvert's
``--execute`` output and the book's build carry.

    .venv/bin/python bench/bench_notebooks.py [--only 04 07 16]

* **notebook_mb_max** — the largest of the course's notebooks, each run top to bottom in a fresh
  kernel on the lab model (``scripts/book.py``'s ``execute``: nbclient, as nbconvert and nbval run
  them, with the widget state stored, its default) and written with nbformat: MB (10^6 bytes) of
  the file. Printed per notebook: the file, its widget state, its cells' outputs, the run's wall time.
Nothing here is timed as a figure: the sizes are the same on a busy machine, only slower (all 16
notebooks take ~3–4 minutes here). Before labkit._figure_widget each panel stored plotly's 5 MB
widget script: notebook 07 was 10.4 MB.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))  # book.py, from anywhere

import book  # noqa: E402  (scripts/book.py: runs a notebook as the book and pace.py do)

STATE = "application/vnd.jupyter.widget-state+json"


def sizes(path: Path) -> dict:
    """Bytes of ``path`` executed and written: the whole file, its widget state, its outputs."""
    start = time.perf_counter()
    nb = book.execute(nbformat.read(path, as_version=4), path.parent)
    text = nbformat.writes(nb)
    outputs = sum(len(json.dumps(c.get("outputs", []))) for c in nb.cells)
    state = nb.metadata.get("widgets", {}).get(STATE, {})
    return {"bytes": len(text.encode("utf-8")), "widget_state": len(json.dumps(state)),
            "models": len(state.get("state", {})), "outputs": outputs, "wall_s": time.perf_counter() - start}


def measure(only: list[str] | None = None) -> dict:
    """Run the notebooks (``only``: those named by number or name; else all) and return
    ``notebook_mb_max``."""
    paths = book.notebooks(only)
    print(f"{'notebook':<36} {'MB':>6} {'widgets MB':>11} {'models':>7} {'outputs MB':>11} {'wall s':>7}")
    largest = 0.0
    for path in paths:
        s = sizes(path)
        print(f"{path.stem:<36} {s['bytes'] / 1e6:>6.2f} {s['widget_state'] / 1e6:>11.2f} {s['models']:>7} "
              f"{s['outputs'] / 1e6:>11.2f} {s['wall_s']:>7.1f}", flush=True)
        largest = max(largest, s["bytes"] / 1e6)
    return {"notebook_mb_max": largest}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="notebooks by number or name (default: all 16)")
    args = parser.parse_args()
    print(measure(args.only))


if __name__ == "__main__":
    main()
