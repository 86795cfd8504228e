"""Benchmark: how long does ``labkit.replay`` take to re-simulate a 200-call run?

The design target: a slider move re-simulates a 200-turn run in well under 100 ms. Run it as a
plain script (not a test — timings are never asserted in the test suite):

    .venv/bin/python bench/bench_replay.py [--turns 200] [--repeats 9]

It builds a 200-call trajectory with ``replay.synthetic_run`` (the running example repeated
week after week on one thread), measures it once with ``replay.trajectory``, then times
``replay.replay`` for a few knob settings — *cold* (the summaries not yet made: what the first
move to a new setting costs) and *warm* (a setting the panel has seen before), each the median of
``--repeats`` runs with ``time.perf_counter``. Machines are noisy, so it also times one real
``scenario.run`` under ``SummarizeMiddleware`` (16 model calls through the agent loop) and prints
each replay as a fraction of it.
"""

from __future__ import annotations

import argparse
import statistics
import time

from labkit import plots, scenario
from labkit.model import LabModel
from labkit.replay import replay, synthetic_run, trajectory
from labkit.summarize import SummarizeMiddleware

SETTINGS = [
    ("window 128k, defaults (85% / keep 10%)", {"window": 128_000}),
    ("window 60k, defaults", {"window": 60_000}),
    ("window 128k, trigger 10 msgs, keep 4 msgs", {"window": 128_000, "trigger": ("messages", 10),
                                                   "keep": ("messages", 4)}),
    ("window 128k, no profile (overflow fallback)", {"window": 128_000, "profile": False}),
]


def median_ms(fn, repeats: int, before=None) -> float:
    times = []
    for _ in range(repeats):
        if before:
            before()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def real_run() -> int:
    """The running example through the agent loop under SummarizeMiddleware; its model calls."""
    model = LabModel(window=128_000)
    return len(scenario.run(model, middleware=[SummarizeMiddleware(model)]).records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200, help="model calls in the trajectory")
    parser.add_argument("--repeats", type=int, default=9, help="timed repeats per measurement")
    args = parser.parse_args()

    real_calls = real_run()  # also warms imports and the tokenizer before timing anything
    start = time.perf_counter()
    run = synthetic_run(args.turns)
    built = time.perf_counter() - start
    start = time.perf_counter()
    traj = trajectory(run)
    measured = time.perf_counter() - start
    reference = median_ms(real_run, max(3, args.repeats // 3))
    print(f"trajectory: {len(traj.calls)} model calls, {len(traj.messages)} messages, "
          f"{traj.prefix[-1]:,} tokens in state at the end")
    print(f"  synthetic_run {built * 1000:.0f} ms, trajectory() {measured * 1000:.0f} ms "
          "(once per recording)")
    print(f"reference: one real scenario.run under SummarizeMiddleware ({real_calls} calls): "
          f"{reference:.0f} ms (median of {max(3, args.repeats // 3)})")
    print()
    print(f"{'setting':<46}{'events':>7}{'cold ms':>9}{'warm ms':>9}{'+figure ms':>12}{'cold/real':>11}")
    for name, knobs in SETTINGS:
        result = replay(traj, **knobs)
        cold = median_ms(lambda: replay(traj, **knobs), args.repeats, before=traj.memo.clear)
        warm = median_ms(lambda: replay(traj, **knobs), args.repeats)
        figure = median_ms(lambda: plots.tokens_per_turn(replay(traj, **knobs), window=knobs["window"]),
                           args.repeats)
        print(f"{name:<46}{len(result.events):>7}{cold:>9.1f}{warm:>9.1f}{figure:>12.1f}"
              f"{cold / reference:>11.3f}")
    print()
    print("cold: summaries made afresh; warm: a setting seen before; +figure: warm replay plus "
          "plots.tokens_per_turn")


if __name__ == "__main__":
    main()
