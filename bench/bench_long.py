"""Benchmark: does a model call cost more as the thread grows? Per-call CPU at 20 to 2,000 calls.

    .venv/bin/python bench/bench_long.py [--calls 20,200,800] [--repeats 3] [--memory]

A long thread on one agent: the running example's three turns, then the needle question asked
again and again (one model call each) until the run has made ``calls`` model calls, on a
1,000,000-token window (nothing is compacted, so the thread only grows). Two stacks: labkit's
recommended (``evals.Setting``: ``OffloadMiddleware`` then ``SummarizeMiddleware`` under
``create_agent``) and ``create_deep_agent``'s default stack, each with the harness's ``Recorder``
and checkpointer. *Per call*: the run's CPU (``time.process_time``) minus the lab model's own
``_generate``, over the calls; the median of ``repeats`` runs, the two stacks interleaved, after
one warm-up run per stack (the first run in a process pays imports and BPE counts).
* **per_call_growth_800** — labkit's ms per call at 800 calls over its ms per call at 20.
``--memory`` also prints the memory a run holds at its end (``tracemalloc``, a separate pass).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_overhead, run from anywhere

import bench_overhead  # noqa: E402
from deepagents.middleware.filesystem import FilesystemMiddleware  # noqa: E402

from labkit import LabModel, evals, scenario  # noqa: E402
from labkit._checkpoint import SharedSaver  # noqa: E402
from labkit.evals import Setting  # noqa: E402
from labkit.scenario import harness  # noqa: E402
from labkit.trace import Recorder  # noqa: E402

WINDOW = 1_000_000
STACKS = {"labkit": Setting("labkit", window=WINDOW),
          "deepagents": Setting("deepagents", middleware="deepagents", harness="deep", window=WINDOW)}


def turns_for(calls: int) -> tuple[str, ...]:
    """The running example's turns, then the needle question until ``calls`` model calls."""
    return (*scenario.TURNS, *(scenario.NEEDLE_QUESTION,) * max(calls - 16, 0))


def _timed_saver(method):
    def timed(self, *args, **kwargs):
        bench_overhead._push("checkpointer")
        try:
            return method(self, *args, **kwargs)
        finally:
            bench_overhead._pop()
    return timed


class TimedSaver(SharedSaver):
    """The harness's checkpointer, its own work timed under ``"checkpointer"``."""


for _name in ("put", "put_writes", "get_tuple", "get_delta_channel_history"):
    setattr(TimedSaver, _name, _timed_saver(getattr(SharedSaver, _name)))


def one_run(name: str, calls: int) -> dict[str, float]:
    """One run's CPU ms per model call: ``labkit`` (its middleware, the Recorder and the
    checkpointer: labkit's own code) and ``loop`` (everything but the model and the agent's
    construction: langchain's, langgraph's and deepagents' code too)."""
    setting = STACKS[name]
    model = bench_overhead.TimedLabModel(window=WINDOW)
    layers = [bench_overhead.timed(m, "labkit middleware") if setting.middleware == "labkit"
              and not isinstance(m, FilesystemMiddleware) else m for m in evals.stack(setting, model)]
    gc.collect()
    original = harness.agent
    harness.agent, harness.SharedSaver = bench_overhead._timed_agent(original), TimedSaver
    bench_overhead.CLOCK = clock = bench_overhead.Clock()
    start = time.process_time()
    try:
        run = scenario.run(model, middleware=layers, harness=setting.harness, turns=turns_for(calls),
                           recorder=bench_overhead.timed(Recorder(), "recorder"), recursion_limit=10**6)
    finally:
        total = time.process_time() - start
        bench_overhead.CLOCK, harness.agent, harness.SharedSaver = None, original, SharedSaver
    if run.error is not None:
        raise RuntimeError(f"{name} at {calls} calls: {run.error}")
    t, made = clock.totals, len(run.records)
    own = sum(t.get(k, 0) for k in ("labkit middleware", "recorder", "checkpointer"))
    return {"labkit": 1000 * own / made, **{k: 1000 * v / made for k, v in t.items()},
            "loop": 1000 * (total - t.get("model", 0) - t.get("construction", 0)) / made}


def held_mb(name: str, calls: int) -> float:
    """Memory the run still holds at its end — its state, records and the checkpointer with every
    checkpoint of the thread (kept alive here: the run itself does not hold it) — in MB."""
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    setting = STACKS[name]
    model, saver = LabModel(window=WINDOW), SharedSaver()
    run = scenario.run(model, middleware=evals.stack(setting, model), harness=setting.harness,
                       turns=turns_for(calls), recursion_limit=10**6, checkpointer=saver)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    del run, saver
    return sum(s.size_diff for s in after.compare_to(before, "filename")) / 1e6


def measure(calls=(20, 200, 800), repeats: int = 3, memory: bool = False) -> dict[str, float]:
    for stack in STACKS:  # warm-up: imports, BPE counts, tool schemas
        one_run(stack, 20)
    samples: dict[tuple[str, int], list[dict]] = {}
    for n in calls:
        for _ in range(repeats):
            for stack in STACKS:  # interleaved
                samples.setdefault((stack, n), []).append(one_run(stack, n))
    ms = {(stack, n, part): statistics.median(s[part] for s in runs)
          for (stack, n), runs in samples.items() for part in ("labkit", "loop")}
    print("CPU ms per model call (median of runs): labkit's own code (its middleware, Recorder, "
          "checkpointer) / the whole loop but the model")
    print(f"{'calls':>6}  " + "  ".join(f"{s:>24}" for s in STACKS))
    for n in calls:
        print(f"{n:>6}  " + "  ".join(f"{ms[(s, n, 'labkit')]:>11.2f} / {ms[(s, n, 'loop')]:>8.2f}"
                                       for s in STACKS))
    if memory:
        for n in calls:
            print(f"held at the end of {n} calls: " + ", ".join(
                f"{s} {held_mb(s, n):.1f} MB" for s in STACKS))
    out = {}
    if 20 in calls and 800 in calls:
        out["per_call_growth_800"] = ms[("labkit", 800, "labkit")] / ms[("labkit", 20, "labkit")]
        loop = {s: ms[(s, 800, "loop")] / ms[(s, 20, "loop")] for s in STACKS}
        print(f"800 calls over 20, ms per call: labkit's own code {out['per_call_growth_800']:.2f}; "
              f"the whole loop {loop['labkit']:.2f} (labkit's stack), {loop['deepagents']:.2f} (deepagents')")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", default="20,200,800", help="model calls per run, comma-separated")
    parser.add_argument("--repeats", type=int, default=3, help="runs per stack and length (median)")
    parser.add_argument("--memory", action="store_true", help="also the memory a run holds at its end")
    args = parser.parse_args()
    measure(tuple(int(c) for c in args.calls.split(",")), args.repeats, args.memory)


if __name__ == "__main__":
    main()
