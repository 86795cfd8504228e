"""Benchmark: labkit's harness overhead per model call, against deepagents' default stack.

The design target: labkit's harness overhead per model call is below deepagents' default stack
on the same run. Run it as a plain script (timings are never asserted in the test suite):

    .venv/bin/python bench/bench_overhead.py [--windows 128000,32000] [--repeats 7]

Each stack runs the running example (``scenario.run``, all three user turns) on a fresh lab model:

* **labkit** — ``create_agent`` with labkit's middleware, offload first: ``OffloadMiddleware``,
  ``SummarizeMiddleware``, and the ``Recorder`` that ``scenario.run`` always puts last (plus the
  deepagents ``FilesystemMiddleware``, eviction off, that gives the agent its file tools);
* **deepagents** — ``create_deep_agent``'s whole default stack (with the same ``Recorder``);
* **bare** (a floor, for reference) — ``create_agent`` with the file tools and the ``Recorder``
  only, on a 1,000,000-token window so the run does not overflow.

Harness overhead is the wall time of the run minus the model's own time, per model call (the
agent's calls and the summary calls alike). The model's own time is measured in place: the lab
model is subclassed to add up the time spent inside its ``_generate`` / ``_stream``, so it is the
same model code on exactly the message lists (and tool schemas) that ``model.calls`` records — what
is left is langchain's model wrapper, langgraph's loop, the tools and every middleware. Each
number is the median of ``--repeats`` runs; the stacks take turns within each repeat so a busy
machine slows them alike, and the labkit / deepagents ratio is the number to quote.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import PrivateAttr

from labkit import scenario
from labkit.model import LabModel
from labkit.offload import OffloadMiddleware
from labkit.summarize import SummarizeMiddleware


class TimedLabModel(LabModel):
    """The lab model, adding up the seconds spent inside its own generation."""

    _seconds: float = PrivateAttr(default=0.0)

    @property
    def seconds(self) -> float:
        return self._seconds

    def _generate(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return super()._generate(*args, **kwargs)
        finally:
            self._seconds += time.perf_counter() - start

    def _stream(self, *args, **kwargs):
        chunks = super()._stream(*args, **kwargs)
        while True:
            start = time.perf_counter()
            try:
                chunk = next(chunks)
            except StopIteration:
                return
            finally:
                self._seconds += time.perf_counter() - start
            yield chunk


def labkit_stack(window: int):
    model = TimedLabModel(window=window)
    return model, lambda: scenario.run(model, middleware=[OffloadMiddleware(), SummarizeMiddleware(model)])


def deepagents_stack(window: int):
    model = TimedLabModel(window=window)
    return model, lambda: scenario.run(model, harness="deep")


def bare_stack(window: int):
    model = TimedLabModel(window=1_000_000)
    return model, lambda: scenario.run(model)


STACKS: dict[str, Callable] = {"labkit": labkit_stack, "deepagents": deepagents_stack, "bare": bare_stack}


@dataclass
class Sample:
    wall: float
    model: float
    calls: int
    summary_calls: int
    ok: bool

    @property
    def overhead_ms(self) -> float:
        return (self.wall - self.model) / self.calls * 1000

    @property
    def model_ms(self) -> float:
        return self.model / self.calls * 1000


def sample(stack: Callable, window: int) -> Sample:
    """One timed run of ``stack`` on a fresh model."""
    model, go = stack(window)
    gc.collect()
    start = time.perf_counter()
    run = go()
    wall = time.perf_counter() - start
    summaries = sum(c.kind == "summary" for c in model.calls)
    ok = run.error is None and run.score.goal_completed and run.score.needle_correct
    return Sample(wall, model.seconds, len(model.calls), summaries, ok)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", default="128000,32000",
                        help="comma-separated context windows, in tokens (default: 128000,32000)")
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per stack and window")
    args = parser.parse_args()
    windows = [int(w) for w in args.windows.split(",")]

    for stack in STACKS.values():  # warm imports, the tokenizer and the data before timing
        sample(stack, windows[0])
    print(f"harness overhead per model call: run wall time minus the model's own time, divided by "
          f"the model calls; median of {args.repeats}")
    for window in windows:
        samples: dict[str, list[Sample]] = {name: [] for name in STACKS}
        for _ in range(args.repeats):
            for name, stack in STACKS.items():
                samples[name].append(sample(stack, window))
        print()
        print(f"window {window:,} tokens (bare: 1,000,000)")
        print(f"{'stack':<12}{'calls':>7}{'summary':>9}{'run ms':>9}{'model ms/call':>15}"
              f"{'overhead ms/call':>18}{'completed':>11}")
        overhead = {}
        for name, runs in samples.items():
            overhead[name] = statistics.median(s.overhead_ms for s in runs)
            print(f"{name:<12}{runs[0].calls:>7}{runs[0].summary_calls:>9}"
                  f"{statistics.median(s.wall for s in runs) * 1000:>9.0f}"
                  f"{statistics.median(s.model_ms for s in runs):>15.2f}{overhead[name]:>18.2f}"
                  f"{'yes' if all(s.ok for s in runs) else 'NO':>11}")
        ratio = overhead["labkit"] / overhead["deepagents"]
        verdict = "below" if ratio < 1 else "NOT below"
        print(f"labkit / deepagents overhead per call: {ratio:.2f} ({verdict} deepagents' default stack); "
              f"labkit / bare: {overhead['labkit'] / overhead['bare']:.2f}, "
              f"deepagents / bare: {overhead['deepagents'] / overhead['bare']:.2f}")


if __name__ == "__main__":
    main()
