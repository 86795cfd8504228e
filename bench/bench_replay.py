"""Benchmark: how long does ``labkit.replay`` take to re-simulate a 200-call run?

The replay is the arithmetic behind a ``widgets.knobs`` slider move; it is not the move. What a
move costs — replay, figure, tables and the output the browser receives — is
``bench_sliders.py``'s ``knobs_cold_ms``; this script only says how much of that is the replay
(target: well under 10 ms, the move's whole budget). Run it as a plain script (not a test —
timings are never asserted in the test suite):

    .venv/bin/python bench/bench_replay.py [--turns 200] [--repeats 9]

It builds a 200-call trajectory with ``replay.synthetic_run`` (the running example repeated
week after week on one thread), measures it once with ``replay.trajectory``, then times
``replay.replay`` for a few knob settings — *cold* (the summaries not yet made and no token count
remembered: the trajectory's memo, its counter and labkit's shared counters all cleared before each
run) and *warm* (a setting the panel has seen before), each the median of ``--repeats`` runs in CPU
time (``time.process_time``). Machines are noisy, so it also times one real
``scenario.run`` under ``SummarizeMiddleware`` (16 model calls through the agent loop) and prints
each replay as a fraction of it.
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench_overhead import fresh_caches  # labkit's process-wide counting caches, emptied

from labkit import plots, scenario, tokens
from labkit.model import LabModel
from labkit.replay import replay, synthetic_run, trajectory
from labkit.summarize import SummarizeMiddleware
from labkit.tokens import TokenCounter

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
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times) * 1000


def forget(traj):
    """Forget every summary and every token count the trajectory or labkit remembers: the setting,
    and the texts it makes, are new (``trajectory()``'s own per-message sizes stay: they are part
    of the recording)."""
    def clear() -> None:
        traj.memo.clear()
        traj.counter = TokenCounter(traj.counter.encoding_name)
        tokens._shared.cache_clear()
        fresh_caches()  # the process-wide counts too: the summaries' lines are new texts
    return clear


def real_run() -> int:
    """The running example through the agent loop under SummarizeMiddleware; its model calls."""
    model = LabModel(window=128_000)
    return len(scenario.run(model, middleware=[SummarizeMiddleware(model)]).records)


def measure(turns: int = 200, repeats: int = 9) -> dict[str, float]:
    """The replay alone, cold and warm, for the first setting (informational: no goal of its own)."""
    traj = trajectory(synthetic_run(turns))
    knobs = SETTINGS[0][1]
    replay(traj, **knobs)
    out = {"replay_cold_ms": median_ms(lambda: replay(traj, **knobs), repeats, before=forget(traj)),
           "replay_warm_ms": median_ms(lambda: replay(traj, **knobs), repeats)}
    print(f"replay of a {turns}-call record ({SETTINGS[0][0]}): cold {out['replay_cold_ms']:.1f} ms, "
          f"warm {out['replay_warm_ms']:.1f} ms CPU (median of {repeats}; a whole slider move is "
          "bench_sliders' knobs_cold_ms)")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200, help="model calls in the trajectory")
    parser.add_argument("--repeats", type=int, default=9, help="timed repeats per measurement")
    args = parser.parse_args()

    real_calls = real_run()  # also warms imports and the tokenizer before timing anything
    start = time.process_time()
    run = synthetic_run(args.turns)
    built = time.process_time() - start
    start = time.process_time()
    traj = trajectory(run)
    measured = time.process_time() - start
    reference = median_ms(real_run, max(3, args.repeats // 3))
    print(f"trajectory: {len(traj.calls)} model calls, {len(traj.messages)} messages, "
          f"{traj.prefix[-1]:,} tokens in state at the end")
    print(f"  synthetic_run {built * 1000:.0f} ms, trajectory() {measured * 1000:.0f} ms CPU "
          "(once per recording)")
    print(f"reference: one real scenario.run under SummarizeMiddleware ({real_calls} calls): "
          f"{reference:.0f} ms (median of {max(3, args.repeats // 3)})")
    print()
    print(f"{'setting':<46}{'events':>7}{'cold ms':>9}{'warm ms':>9}{'+figure ms':>12}{'cold/real':>11}")
    for name, knobs in SETTINGS:
        result = replay(traj, **knobs)
        cold = median_ms(lambda: replay(traj, **knobs), args.repeats, before=forget(traj))
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
