"""Benchmark: input → redraw in a real browser, every knob of every panel moved.

One figure for the line: ``browser_redraw_ms_max`` — for each knob of each panel (the offload
panel, the knobs panel over a 200-call record, the clinic's failure-mode buttons), the median over
its moves of the time from the page receiving the key press or click to the first animation frame
showing the redrawn figure; the worst knob's median. JupyterLab and Debian's chromium, driven as
``tests/test_browser.py`` drives them (``tests/browser_lab.py``): ``--rounds`` rounds per panel,
each moving every knob once to a setting not seen (the clinic: every other button), the knobs of a
panel interleaved. Wall time in the page (``performance.now``): the one figure not in CPU time, as
a move spans the browser, the server and the kernel; so the load average is printed beside it.
What it leaves out: starting the kernel and the first draw, mouse drags, front ends other than
JupyterLab. Without ``/usr/bin/chromium`` (or playwright) it says so and the figure is not measured.

    .venv/bin/python bench/bench_browser.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.browser_lab, from anywhere

from tests import browser_lab  # noqa: E402

FIGURE = "browser_redraw_ms_max"


def _load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def measure(rounds: int = 5) -> dict[str, float | None]:
    reason = browser_lab.unavailable()
    if reason:
        print(f"{FIGURE}: not measured — {reason}")
        return {FIGURE: None}
    print(f"at the start: {_load()}")
    measured: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp, browser_lab.lab(Path(tmp)) as (base, token), \
            browser_lab.chromium() as browser:
        for panel in browser_lab.PANELS:
            with browser_lab.new_page(browser) as page:
                try:
                    browser_lab.open_panel(page, base, token, panel)
                    for knob, times in browser_lab.latencies(page, panel, rounds).items():
                        measured[panel, knob] = times
                finally:
                    browser_lab.delete_kernels(base, token)
    print(f"at the end: {_load()}")
    print(f"{'panel':8} {'knob':14} {'moves':>5} {'median ms':>9} {'min':>5} {'max':>5}")
    for (panel, knob), times in measured.items():
        print(f"{panel:8} {knob:14} {len(times):5d} {statistics.median(times):9.0f} "
              f"{min(times):5.0f} {max(times):5.0f}")
    worst = max(measured, key=lambda k: statistics.median(measured[k]))
    figure = statistics.median(measured[worst])
    print(f"{FIGURE}={figure:.0f} (the worst knob: {worst[0]} {worst[1]}; goal <= 150)")
    return {FIGURE: figure}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of moves per panel (>= 5)")
    args = parser.parse_args()
    measure(args.rounds)


if __name__ == "__main__":
    main()
