"""Run every benchmark in bench/ and end with one line of this run's figures (``make bench``).

    .venv/bin/python bench/run_all.py [--repeats 21] [--moves 21] [--kernels 5] [--quick]

Each benchmark's ``measure(...)`` prints its own tables and returns a dict; this driver runs them
one after another in this process (``bench_sliders`` also starts ``--kernels`` fresh processes for
the first plot; ``bench_notebooks`` runs all 16 notebooks, ~3–4 min) and prints, last, exactly:

    bench: middleware_vs_floor=… loop_vs_deepagents=… tokens_vs_deepagents_max=… tokens_vs_naive_max=…
    tokens_vs_oracle_max=… knobs_cold_ms=… offload_cold_ms=… first_plot_s=…
    cache_prediction_error_max=… cached_cost_vs_deepagents_max=… per_call_growth_800=…
    tokens_vs_oracle_needed_max=… notebook_mb_max=… knobs_all_ms=… offload_all_ms=…
    browser_redraw_ms_max=… first_cell_s=…

(one line; a figure that cannot be measured here reads ``not_measured``). Ratios over windows are
the worst of 128k, 60k and 32k; every time is CPU time, a median, but ``browser_redraw_ms_max``:
wall time in the page (bench/README.md says what each figure measures and leaves out).
``bench_replay`` and ``bench_counting`` print figures that are not on the line. ``--quick`` is for
checking the driver itself (few repeats, the figures are not to be quoted).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the bench modules, run from anywhere

import bench_browser  # noqa: E402
import bench_caching  # noqa: E402
import bench_counting  # noqa: E402
import bench_first_cell  # noqa: E402
import bench_long  # noqa: E402
import bench_notebooks  # noqa: E402
import bench_overhead  # noqa: E402
import bench_replay  # noqa: E402
import bench_sliders  # noqa: E402
import bench_tokens  # noqa: E402

LINE = ("middleware_vs_floor", "loop_vs_deepagents", "tokens_vs_deepagents_max", "tokens_vs_naive_max",
        "tokens_vs_oracle_max", "knobs_cold_ms", "offload_cold_ms", "first_plot_s",
        "cache_prediction_error_max", "cached_cost_vs_deepagents_max", "per_call_growth_800",
        "tokens_vs_oracle_needed_max", "notebook_mb_max", "knobs_all_ms", "offload_all_ms",
        "browser_redraw_ms_max", "first_cell_s")


def _fmt(key: str, value: float | None) -> str:
    if value is None:  # bench_browser without chromium
        return "not_measured"
    if key.endswith(("_ms", "_ms_max")):
        return f"{value:.1f}"
    return f"{value:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=21,
                        help="bench_overhead's runs per stack and window (>= 5; replay, counting: <= 11)")
    parser.add_argument("--moves", type=int, default=21, help="slider moves per panel (>= 20)")
    parser.add_argument("--kernels", type=int, default=5, help="fresh processes for the first plot (>= 5)")
    parser.add_argument("--quick", action="store_true", help="few repeats: check the driver only")
    args = parser.parse_args()
    if args.quick:
        args.repeats, args.moves, args.kernels = 1, 3, 1
    figures: dict[str, float] = {}
    steps = [("bench_tokens", lambda: bench_tokens.measure()),
             ("bench_overhead", lambda: bench_overhead.measure(repeats=args.repeats)),
             ("bench_sliders", lambda: bench_sliders.measure(args.moves, args.kernels)),
             ("bench_replay", lambda: bench_replay.measure(repeats=max(5, min(args.repeats, 11)))),
             ("bench_counting", lambda: bench_counting.measure(max(3, min(args.repeats, 11) // 2))),
             ("bench_caching", lambda: bench_caching.measure()),
             ("bench_long", lambda: bench_long.measure((20, 800) if args.quick else (20, 200, 800),
                                                       repeats=1 if args.quick else 3)),
             ("bench_notebooks", lambda: bench_notebooks.measure(["04"] if args.quick else None)),
             ("bench_browser", lambda: bench_browser.measure(rounds=1 if args.quick else 5)),
             ("bench_first_cell", lambda: bench_first_cell.measure(args.kernels))]
    for name, run in steps:
        print(f"\n=== {name} ===", flush=True)
        start = time.perf_counter()
        figures.update(run())
        print(f"({name}: {time.perf_counter() - start:.0f} s wall)", flush=True)
    print()
    print("bench: " + " ".join(f"{key}={_fmt(key, figures[key])}" for key in LINE))


if __name__ == "__main__":
    main()
