"""Benchmark: what a learner waits for before the course's first figure, in a real Jupyter kernel.

    .venv/bin/python bench/bench_first_cell.py [--kernels 5]

A fresh kernel (the course's, ``python3`` in .venv) runs notebook 01's code cells in order up to and
including the first cell that draws a figure; each cell's CPU time is the kernel's own
(``time.process_time`` read just before and just after it, in the kernel), so it covers everything
the cell does there — imports, the run, building the figure and the display data Jupyter sends.
* **first_cell_s** — the median over ``kernels`` kernels of the first drawing cell, whole.
Also printed: the cells before it (notebook 01's first cell imports labkit — langchain and
deepagents with it — and its run cell runs the scenario), so the wait from a fresh kernel to the
first figure is the sum. What it leaves out: the kernel's start-up and the browser's drawing.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from jupyter_client.manager import start_new_kernel

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "01_why_context_explodes.ipynb"
CLOCK = "import time as _bench_time; _bench_cpu = _bench_time.process_time()"
READ = "print(_bench_time.process_time() - _bench_cpu)"


def _run(client, code: str) -> tuple[str, bool]:
    """Run ``code``; its stdout and whether it displayed a figure."""
    msg_id = client.execute(code, store_history=False)
    out, drew = [], False
    while True:
        msg = client.get_iopub_msg(timeout=120)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream" and content.get("name") == "stdout":
            out.append(content["text"])
        elif kind in ("execute_result", "display_data"):
            drew = drew or "application/vnd.plotly.v1+json" in content.get("data", {})
        elif kind == "error":
            raise RuntimeError(f"{content['ename']}: {content['evalue']}")
        elif kind == "status" and content["execution_state"] == "idle":
            return "".join(out), drew


def one_kernel() -> list[tuple[str, float]]:
    """``(first line of the cell, CPU seconds)`` for each cell up to the first that draws."""
    cells = [c for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(NOTEBOOK.parent))
    try:
        times = []
        for cell in cells:
            source = "".join(cell["source"])
            _run(client, CLOCK)
            _, drew = _run(client, source)
            times.append((source.splitlines()[0][:60], float(_run(client, READ)[0])))
            if drew:
                return times
        raise RuntimeError("no cell of notebook 01 draws a figure")
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def measure(kernels: int = 5) -> dict[str, float]:
    runs = [one_kernel() for _ in range(kernels)]
    for i, (line, _) in enumerate(runs[0]):
        print(f"{statistics.median(r[i][1] for r in runs):6.2f} s  {line}")
    firsts = [r[-1][1] for r in runs]
    waits = [sum(t for _, t in r) for r in runs]
    print(f"first drawing cell, whole: median {statistics.median(firsts):.2f} s CPU over {kernels} kernels; "
          f"from a fresh kernel to the first figure: {statistics.median(waits):.2f} s")
    return {"first_cell_s": statistics.median(firsts)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", type=int, default=5, help="fresh kernels (median)")
    measure(parser.parse_args().kernels)


if __name__ == "__main__":
    main()
