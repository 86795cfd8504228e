"""Benchmark: what a learner waits for when a slider moves, and a fresh kernel's first plot.

Three figures for the line and one printed beside them, each CPU time (``time.process_time``: the
machine is shared, and a move is all in the kernel's one thread), each a median:

- ``knobs_cold_ms`` — ``widgets.knobs`` over a 200-call record (``replay.synthetic_run``): a move
  of one slider to a value this panel has not seen (no panel cache hit), all it does: the replay,
  the figure, the tables, the update the browser receives. Median of ``--moves`` moves, with the
  renderer a Jupyter kernel starts with (``plotly_mimetype+notebook``): the plot is redrawn in place
  (``labkit._render``); the same moves drawing a new plot each (VS Code's ``vscode``) are printed
  beside it.
- ``offload_cold_ms`` — ``widgets.offload_panel``: moves of ``tool_limit`` to values not seen
  (a move that evicts what an earlier move evicted redraws it; the others walk the panel's
  recorded runs, ``labkit._offload_runs``), median of ``--moves``; a few ``window`` and
  ``export_scale`` moves are printed beside it.
- with plotly's ``colab`` renderer (what Colab sets), the same knobs moves: each also sends the
  figure as HTML (``labkit._render``), printed beside ``knobs_cold_ms``.
- ``offload_cold_ms`` and the other offload moves run with ``JUPYTER`` too.
- ``knobs_all_ms`` — moves of every knob of ``widgets.knobs`` in turn (window, trigger, keep,
  keep_messages, keep_figures, archive, profile) over the same 200-call record, from a panel just
  made (its first move included), each to a setting it has not seen; median of ``--moves`` moves.
- ``offload_all_ms`` — moves of every knob of ``widgets.offload_panel`` in turn (window, export_scale,
  tool_limit, offload; tool_limit only while offloading is on, as the panel allows), each knob to a
  value it has not had; median of ``--moves`` moves.
- ``first_plot_s`` — a fresh Python process imports labkit, runs the lab and then renders its
  first figure as Jupyter does (``fig._repr_mimebundle_``): that last step's CPU time, median of
  ``--kernels`` processes. Plotly imports nbformat (and so jsonschema) at that moment.

What it leaves out: the browser (``bench_browser.py``: input → redraw in chromium), and the
kernel's start-up itself.

    .venv/bin/python bench/bench_sliders.py [--moves 21] [--kernels 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import plotly.io as pio

from labkit import widgets
from labkit.replay import synthetic_run, trajectory

FIRST_PLOT = """
import json, time
from labkit import LabModel, plots, scenario
fig = plots.tokens_per_turn(scenario.run(LabModel(window=128_000)), window=128_000)
start = time.process_time()
fig._repr_mimebundle_({"application/vnd.plotly.v1+json"}, set())
print(json.dumps(time.process_time() - start))
"""


def cpu_ms(fn) -> float:
    start = time.process_time()
    fn()
    return (time.process_time() - start) * 1000


def knobs_moves(moves: int) -> list[float]:
    """CPU ms of ``moves`` moves of the knobs panel, each to a setting it has not seen."""
    panel = widgets.knobs(trajectory(synthetic_run(200)))
    triggers = [round(0.30 + 0.05 * i, 2) for i in range(14)]  # 0.30 … 0.95
    keeps = [round(0.02 + 0.01 * i, 2) for i in range(moves)]
    times = []
    for i in range(moves):
        knob = {"trigger": triggers[i % len(triggers)], "keep": keeps[i]}
        times.append(cpu_ms(lambda: panel.set(**knob)))  # noqa: B023 — called at once
    return times


JUPYTER = "plotly_mimetype+notebook"  # what plotly sets in a Jupyter kernel (JupyterLab)


def knobs_moves_as(renderer: str, moves: int) -> list[float]:
    """``knobs_moves`` with plotly's ``renderer`` active when the panel is made and moved:
    ``JUPYTER`` redraws in place, ``vscode`` sends a new plot per move, ``colab`` also its HTML."""
    before = pio.renderers.default
    pio.renderers.default = renderer
    try:
        return knobs_moves(moves)
    finally:
        pio.renderers.default = before


def offload_moves(moves: int) -> tuple[list[float], list[float]]:
    """CPU ms of ``moves`` tool_limit moves to unseen values, and of a few window / scale moves."""
    panel = widgets.offload_panel()
    limits = [2_000 + 1_000 * ((7 * i) % 58) for i in range(1, moves + 1)]  # spread, unseen
    limit_times = [cpu_ms(lambda: panel.set(tool_limit=n)) for n in limits]  # noqa: B023
    other = [{"window": 120_000}, {"export_scale": 0.9}, {"window": 136_000}, {"export_scale": 1.1},
             {"window": 112_000}]
    other_times = [cpu_ms(lambda: panel.set(**knob)) for knob in other]  # noqa: B023
    return limit_times, other_times


KNOBS_ROUND = ({"window": (120_000, 96_000, 160_000, 64_000)}, {"trigger": (0.70, 0.55, 0.40, 0.90)},
               {"keep": (0.05, 0.08, 0.12, 0.03)}, {"keep_messages": (6, 0, 10, 0)},
               {"keep_figures": (True, False, True, False)}, {"archive": (False, True, False, True)},
               {"profile": (False, True, False, True)})


def sequence(rounds: tuple, moves: int) -> list[dict]:
    """Single-knob moves round the knobs in ``rounds`` order, each knob to its next value: ``moves``
    of them, at most four rounds (each knob has four values)."""
    return [{knob: values[i // len(rounds)]} for i in range(min(moves, 4 * len(rounds)))
            for knob, values in [next(iter(rounds[i % len(rounds)].items()))]]


def knobs_all_moves(moves: int) -> list[float]:
    """CPU ms of ``moves`` moves of every knob of the knobs panel in turn, from a panel just made."""
    panel = widgets.knobs(trajectory(synthetic_run(200)))
    return [cpu_ms(lambda: panel.set(**knob)) for knob in sequence(KNOBS_ROUND, moves)]  # noqa: B023


OFFLOAD_ROUND = ({"window": (120_000, 64_000, 184_000, 96_000)}, {"export_scale": (0.9, 1.3, 0.6, 1.7)},
                 {"tool_limit": (15_000, 33_000, 8_000, 52_000)}, {"offload": (False,) * 4},
                 {"window": (176_000, 88_000, 48_000, 144_000)}, {"export_scale": (1.5, 0.7, 1.9, 0.4)},
                 {"offload": (True,) * 4}, {"tool_limit": (47_000, 26_000, 11_000, 38_000)})


def offload_all_moves(moves: int) -> list[float]:
    """CPU ms of ``moves`` moves of every knob of the offload panel in turn (tool_limit only while
    offloading is on), each to a value that knob has not had."""
    panel = widgets.offload_panel()
    return [cpu_ms(lambda: panel.set(**knob)) for knob in sequence(OFFLOAD_ROUND, moves)]  # noqa: B023


def first_plot(kernels: int) -> list[float]:
    """CPU seconds of the first figure's render in ``kernels`` fresh processes."""
    return [json.loads(subprocess.run([sys.executable, "-c", FIRST_PLOT], capture_output=True,
                                      text=True, check=True).stdout) for _ in range(kernels)]


def measure(moves: int = 21, kernels: int = 5) -> dict[str, float]:
    knobs = knobs_moves_as(JUPYTER, moves)
    vscode = knobs_moves_as("vscode", moves)
    colab = knobs_moves_as("colab", moves)
    before = pio.renderers.default
    pio.renderers.default = JUPYTER
    try:
        limits, others = offload_moves(moves)
        knobs_all, offload_all = knobs_all_moves(moves), offload_all_moves(moves)
    finally:
        pio.renderers.default = before
    plots = first_plot(kernels)
    print(f"knobs (200-call record), {moves} unseen moves: median {statistics.median(knobs):.1f} ms CPU "
          f"(min {min(knobs):.1f}, max {max(knobs):.1f})")
    print(f"knobs, the same moves drawing a new plot each (VS Code's renderer, plotly's JSON): median "
          f"{statistics.median(vscode):.1f} ms CPU")
    print(f"knobs, the same moves with plotly's colab renderer (JSON + HTML): median "
          f"{statistics.median(colab):.1f} ms CPU")
    print(f"offload panel, {moves} unseen tool_limit moves: median {statistics.median(limits):.1f} ms CPU "
          f"(max {max(limits):.0f}: a move that evicts something new walks a recorded run again)")
    print(f"offload panel, {len(others)} window / export_scale moves: median "
          f"{statistics.median(others):.0f} ms CPU")
    for name, times in (("knobs", knobs_all), ("offload panel", offload_all)):
        print(f"{name}, {moves} moves of every knob in turn: median {statistics.median(times):.1f} ms CPU "
              f"(max {max(times):.1f}; each: {' '.join(f'{t:.0f}' for t in times)})")
    print(f"first plot in a fresh process, {kernels} processes: median {statistics.median(plots):.2f} s CPU")
    return {"knobs_cold_ms": statistics.median(knobs), "offload_cold_ms": statistics.median(limits),
            "first_plot_s": statistics.median(plots), "knobs_all_ms": statistics.median(knobs_all),
            "offload_all_ms": statistics.median(offload_all)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moves", type=int, default=21, help="slider moves per panel (>= 20)")
    parser.add_argument("--kernels", type=int, default=5, help="fresh processes for the first plot")
    args = parser.parse_args()
    measure(args.moves, args.kernels)


if __name__ == "__main__":
    main()
