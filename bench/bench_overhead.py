"""Benchmark: the CPU labkit's middleware and agent loop spend per run, against a floor and deepagents.

Run it as a plain script (timings are never asserted in the test suite):

    .venv/bin/python bench/bench_overhead.py [--windows 128000,60000,32000] [--repeats 21]

Each stack runs the running example as ``labkit.evals.trial`` runs it (``scenario.run``, the three
user turns, the user re-sending a turn at most twice) on a fresh lab model, for each window:

* **labkit** — labkit's recommended setting (``evals.Setting(window=...)``: ``create_agent`` with
  ``OffloadMiddleware`` then ``SummarizeMiddleware``, three of deepagents' file tools, eviction off:
  its ``FilesystemMiddleware`` is deepagents', timed with the loop, not with labkit's middleware);
* **deepagents** — ``create_deep_agent``'s whole default stack, untouched.

Both get the same ``Recorder`` (``scenario.run`` puts it last). Every figure is CPU time: a run's
total is ``time.process_time`` (the whole process), its parts are attributed *exclusively* by
``time.thread_time``: a clock follows, in each thread (tool calls run in worker threads, in parallel
when a reply makes several), which code is running — a middleware hook's own code, the model's
``_generate``, the agent's construction, or everything else (langgraph's loop, langchain's model
node and ``bind_tools``, the tools, the checkpointer) — and a middleware's ``handler(...)`` call is
charged to whatever runs inside it. labkit runs its BPE counts on one thread of its own
(``labkit._encode_thread``; the asking thread waits): each count's CPU there is charged to the label
of the thread that asked, as if it had run in that thread (the in-run floor's too; the tight-loop
floor's is the process's time).

Each repeat times, per stack: **cold** runs — labkit's process-wide counting caches emptied first
(each text is BPE-encoded once, each tool converted once, as in a fresh kernel) and the lab model
counting with caches of its own, as a provider tokenizes on its side (labkit: two, one per place
of the in-run floor) — and a **warm** run, the same run again, every text's count already known.
Two figures:

* ``middleware_vs_floor`` — labkit's middleware CPU per run (the own code of ``OffloadMiddleware``,
  ``SummarizeMiddleware`` and the ``Recorder``: every hook, the summary call's model time excluded)
  divided by **the floor**, counted in the runs themselves (``floor_inrun``): middleware of its
  own, with caches of its own, counts each distinct message once — every message of every request,
  the system message, each raw tool result before offloading — converts each distinct tool schema
  (a new instance of it: counting a tool's tokens needs its schema) and counts it once, and sums
  each request's size (the arithmetic). A text counted a second time right after the first costs
  less, so each side is taken where it counts first: the ratio is the median over ``--repeats`` of
  labkit's CPU in the run whose floor counts after labkit's hooks over the floor's CPU in the run
  (made just before) where it counts before them. Both runs' numbers, by place, are printed. The
  same floor counted in a tight loop outside the runs (``floor_ms``: the run's messages, collected
  from one more run of the same deterministic trajectory with ``Recorder(keep_requests=True)`` and a
  spy on the raw tool results) costs about the same and is printed beside it; a ratio to it, taken
  seconds away from the run, read this machine's shifts in speed as overhead (single repeats
  0.7-1.6).
  The line's figure is the cold one: the floor then includes its BPE pass, as issue 12 defines it
  ("one exact BPE pass over each new message plus arithmetic"); the warm one (no BPE on either
  side: the texts' building, the lookups and the sums; over the tight-loop floor) is printed as
  ``middleware_vs_floor_warm``.
* ``loop_vs_deepagents`` — the whole agent loop's CPU per model call (agent calls and summary calls
  alike): the run's CPU minus the agent's construction, minus the model's own ``_generate``, minus
  the ``Recorder`` (the measuring instrument, in both stacks: under deepagents it BPE-counts the
  exports deepagents keeps in context, which is not deepagents' cost), for labkit's stack over
  deepagents' default stack. Medians; the two stacks alternate within each repeat. The line's
  figure is the warm one, from a run without the in-run floor (deepagents counts chars/4, so a cold
  run adds labkit's BPE pass to its loop only); the cold one, from the two runs that carry the
  floor (its hooks taken out of the loop too), is printed as ``loop_vs_deepagents_cold``.

Each figure is reported for the worst window. What it leaves out: wall time (a shared machine), the
model's own work (the lab model stands in for a provider), the agent's construction (once per
agent, not per call) and memory (a long run's growth: ``bench_counting.py`` and the tests).
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable

import floor_inrun
from bench_tokens import WINDOWS, recommended  # the same windows and setting as bench_tokens
from deepagents.middleware.filesystem import FilesystemMiddleware
from langchain.agents.middleware import AgentMiddleware
from langchain_core.utils.function_calling import convert_to_openai_tool

from labkit import _encode_thread, _token_cache, evals, scenario, tokens
from labkit._token_cache import TextTokens, ToolTokens, tool_shape
from labkit.model import LabModel
from labkit.scenario import harness
from labkit.tokens import TokenCounter
from labkit.trace import Recorder

HOOKS = ("before_agent", "before_model", "after_model", "after_agent", "wrap_model_call", "wrap_tool_call")


def deepagents_defaults(window: int) -> evals.Setting:
    return evals.Setting("deepagents defaults", middleware="deepagents", window=window)


def fresh_caches() -> None:
    """Empty labkit's process-wide counting caches (texts' BPE counts, message keys, tool schemas),
    so the next run or floor pays its BPE pass and its schema conversions as a first run does."""
    tokens._TEXT_TOKENS = TextTokens()
    tokens._TOOL_TOKENS = ToolTokens()
    tokens._SAME_OBJECTS.clear()
    _token_cache._SCHEMAS = ToolTokens()
    _token_cache._FIELD_SHAPES.clear()


class Clock:
    """Exclusive CPU time per label: each thread's CPU time (``time.thread_time``) goes to the label
    on top of that thread's own stack, or to nobody. Per thread, because tool calls run in worker
    threads, in parallel when a reply makes several: with one shared stack, one tool's execution
    would be charged to the middleware label another thread had pushed."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = defaultdict(float)
        self._local = threading.local()
        self._lock = threading.Lock()

    def _switch(self) -> list[str]:
        local, now = self._local, time.thread_time()
        if not hasattr(local, "stack"):
            local.stack, local.last = [], now
        if local.stack:
            with self._lock:
                self.totals[local.stack[-1]] += now - local.last
        local.last = now
        return local.stack

    def push(self, label: str) -> None:
        self._switch().append(label)

    def current(self) -> str | None:
        """The label this thread is running under, if any."""
        stack = getattr(self._local, "stack", None)
        return stack[-1] if stack else None

    def pop(self) -> None:
        self._switch().pop()


CLOCK: Clock | None = None  # the clock of the run being timed (one run at a time)


def _push(label: str) -> None:
    if CLOCK is not None:
        CLOCK.push(label)


def _pop() -> None:
    if CLOCK is not None:
        CLOCK.pop()


_HOP = _encode_thread._hop


def _charged_hop(fn, *args):
    """labkit's counting thread (``labkit._encode_thread``) runs a BPE count for a thread that waits
    for it: its CPU is charged to the label that thread is running under (a middleware's hook, the
    model, ...), as if the count had run there."""
    label = CLOCK.current() if CLOCK is not None else None
    if label is None:
        return _HOP(fn, *args)

    def job(*a):
        _push(label)
        try:
            return fn(*a)
        finally:
            _pop()
    return _HOP(job, *args)


_encode_thread._hop = _charged_hop


def _timed_hook(label: str, hook: Callable, wraps_handler: bool) -> Callable:
    @functools.wraps(hook)  # keeps hook_config's attributes (can_jump_to)
    def timed(self, *args, **kwargs):
        if wraps_handler:  # wrap_model_call / wrap_tool_call: the handler is not the middleware's
            request, handler = args

            def inner(req):
                _pop()
                try:
                    return handler(req)
                finally:
                    _push(label)
            args = (request, inner)
        _push(label)
        try:
            return hook(self, *args, **kwargs)
        finally:
            _pop()
    return timed


@functools.cache
def _timed_class(cls: type, label: str) -> type:
    """``cls`` with each sync hook it defines timed under ``label`` (same name: middleware are
    matched by name)."""
    ns = {h: _timed_hook(label, getattr(cls, h), h.startswith("wrap_")) for h in HOOKS
          if getattr(cls, h) is not getattr(AgentMiddleware, h)}
    return type(cls.__name__, (cls,), ns)


def timed(middleware: AgentMiddleware, label: str) -> AgentMiddleware:
    middleware.__class__ = _timed_class(type(middleware), label)
    return middleware


class TimedLabModel(LabModel):
    """The lab model, its own generation timed under ``"model"``."""

    def _generate(self, *args, **kwargs):
        _push("model")
        try:
            return super()._generate(*args, **kwargs)
        finally:
            _pop()


def _timed_agent(build: Callable) -> Callable:
    @functools.wraps(build)
    def agent(*args, **kwargs):
        _push("construction")
        try:
            return build(*args, **kwargs)
        finally:
            _pop()
    return agent


def _fresh_tool(tool):
    """``_rebuilt(tool)``, its time kept out of the floor's (``floor_inrun.Floor``)."""
    _push("bench")
    try:
        return _rebuilt(tool)
    finally:
        _pop()


def run_once(setting: evals.Setting, recorder: Recorder | None = None, extra: tuple = (), cold: bool = False,
             floor: str | None = None):
    """``evals.trial(setting)`` on a ``TimedLabModel``, labkit's middleware timed; ``(run, model)``.
    ``cold``: labkit's counting caches emptied first, and the model counting with its own.
    ``floor``: ``"first"`` or ``"last"``, the floor counted in the run too (``floor_inrun``), timed
    under ``"floor"``."""
    model = TimedLabModel(window=setting.window)
    if cold:
        fresh_caches()
        model._counter = floor_inrun.OwnCounter()  # as a provider tokenizes on its side
    stack = [timed(m, "labkit middleware") if setting.middleware == "labkit"
             and not isinstance(m, FilesystemMiddleware) else m for m in evals.stack(setting, model)]
    if floor is not None:
        place = {"first": floor_inrun.floor_first, "last": floor_inrun.floor_last}[floor]
        counts = floor_inrun.Floor(floor_inrun.OwnCounter(), _fresh_tool)
        stack = [m if m in stack else timed(m, "floor") for m in place(counts, stack)]
    recorder = recorder or timed(Recorder(), "recorder")
    run = scenario.run(model, middleware=[*stack, *extra], harness=setting.harness, recorder=recorder,
                       turns=evals.reminded(scenario.TURNS, model, setting.reminders))
    return run, model


def sample(setting: evals.Setting, cold: bool = False, floor: str | None = None) -> dict:
    """One timed run: CPU ms by label, and the model calls (``cold``, ``floor``: see ``run_once``)."""
    global CLOCK
    gc.collect()
    original, harness.agent = harness.agent, _timed_agent(harness.agent)
    CLOCK = clock = Clock()
    start = time.process_time()
    try:
        run, model = run_once(setting, cold=cold, floor=floor)
    finally:
        total = time.process_time() - start
        CLOCK, harness.agent = None, original
    t = {k: v * 1000 for k, v in clock.totals.items()}
    calls = len(model.calls)
    loop = total * 1000 - sum(t.get(k, 0) for k in ("construction", "model", "recorder", "floor", "bench"))
    return {"calls": calls, "summaries": sum(c.kind == "summary" for c in model.calls),
            "middleware ms": t.get("labkit middleware", 0) + t.get("recorder", 0),
            "recorder ms": t.get("recorder", 0), "model ms": t.get("model", 0),
            "construction ms": t.get("construction", 0), "loop ms/call": loop / calls,
            "floor ms": t.get("floor", 0),
            "ok": run.error is None and run.score.goal_completed and run.score.needle_correct}


class _Spy(AgentMiddleware):
    """Innermost on tool calls: keeps each raw tool result's messages, before any middleware edits them."""

    name = "bench.ToolSpy"

    def __init__(self) -> None:
        super().__init__()
        self.raw: list = []

    def wrap_tool_call(self, request, handler):
        result = handler(request)
        self.raw += floor_inrun.raw_messages(result)
        return result


def trajectory(setting: evals.Setting) -> tuple[list, list, list[list[int]]]:
    """The run's distinct messages, its distinct tools, and each model call's request as indices
    into them (message indices, then tool indices offset by the number of messages)."""
    rec, spy = Recorder(keep_requests=True), _Spy()
    run, _ = run_once(setting, recorder=rec, extra=(spy,))
    messages, index = [], {}

    def add(m) -> int:
        if id(m) not in index:
            index[id(m)] = len(messages)
            messages.append(m)
        return index[id(m)]
    tools, tool_index = [], {}
    requests = []
    for r in rec.records:
        req = r.request
        ids = [add(m) for m in req.messages] + ([add(req.system)] if req.system is not None else [])
        for t in req.tools:
            key = (json.dumps(t, sort_keys=True, default=str) if isinstance(t, dict)
                   else tool_shape(t) or id(t))  # a tool copied for each call is one tool
            if key not in tool_index:
                tool_index[key] = len(tools)
                tools.append(t)
            ids.append(-1 - tool_index[key])
        requests.append(ids)
    for m in run.messages:
        add(m)
    for m in spy.raw:
        add(m)
    return messages, tools, requests


def _rebuilt(tool):
    """A new instance of a langchain tool with the same fields. langchain keeps a tool's converted
    schema on the instance, and the run being measured converts the tools its agent just built
    (measured: ten tools, ~13 ms new, ~0.5 ms converted before); the floor's tools come from an
    earlier run, already converted, so a cold floor converts new instances of them."""
    fields = getattr(type(tool), "model_fields", None)
    return type(tool)(**{k: getattr(tool, k) for k in fields}) if fields else tool


def floor_ms(messages: list, tools: list, requests: list[list[int]], cold: bool = True) -> float:
    """CPU ms of the floor: each distinct message counted once, each distinct tool schema converted
    and counted once, then each request's size summed from those counts. ``cold``: labkit's
    caches emptied first and the tools new instances (``_rebuilt``), so each distinct text is
    BPE-encoded once and each tool converted once from scratch (the issue's floor); else the
    texts' counts are already known and the floor is the texts' building, lookups and sums."""
    if cold:
        fresh_caches()
        tools = [_rebuilt(t) for t in tools]  # as each run builds its own: converted cold there too
    gc.collect()
    start = time.process_time()
    counter = TokenCounter()
    sizes = [counter.message(m) for m in messages]
    tool_sizes = [counter.text(json.dumps(t["function"] if isinstance(t, dict) and "function" in t
                                          else convert_to_openai_tool(t)["function"], ensure_ascii=False))
                  for t in tools]
    totals = [sum(sizes[i] if i >= 0 else tool_sizes[-1 - i] for i in ids) for ids in requests]
    assert totals  # the arithmetic is done, not optimised away
    return (time.process_time() - start) * 1000


def _table(title: str, floor: float, med: dict, samples: dict) -> None:
    print(f"{title}; floor {floor:.1f} ms; middleware ms: labkit's hooks with the Recorder's "
          "(deepagents: the Recorder's alone, its own middleware is in its loop)")
    print(f"{'stack':<12}{'calls':>6}{'summary':>8}{'middleware ms':>14}{'recorder ms':>12}"
          f"{'model ms':>10}{'built ms':>10}{'loop ms/call':>13}{'completed':>10}")
    for name, m in med.items():
        ok = all(s["ok"] for s in samples[name])
        print(f"{name:<12}{m['calls']:>6.0f}{m['summaries']:>8.0f}{m['middleware ms']:>14.1f}"
              f"{m['recorder ms']:>12.1f}{m['model ms']:>10.1f}{m['construction ms']:>10.1f}"
              f"{m['loop ms/call']:>13.2f}{'yes' if ok else 'NO':>10}")


def measure(windows=WINDOWS, repeats: int = 21) -> dict[str, float]:
    """Print a table per window and mode; return the worst window's ``middleware_vs_floor`` (cold:
    the floor includes its BPE pass, as issue 12 defines it) and ``loop_vs_deepagents`` (warm),
    and the other mode of each (``..._warm``, ``..._cold``). Each ratio is the median of one ratio
    per repeat, of runs made next to each other: this machine's speed shifts by ~1.5x for seconds
    at a time, and a ratio of medians taken seconds apart reads that shift as overhead. The cold
    middleware ratio takes each side where it counts first (``floor_inrun``): labkit's hooks in the
    run whose floor counts after them, over the floor in the run where it counts before them."""
    settings = {"labkit": recommended, "deepagents": deepagents_defaults}
    for make in settings.values():  # warm imports, the tokenizer, the data and the caches
        sample(make(windows[0]))
    keys = ("middleware_vs_floor", "loop_vs_deepagents",
            "middleware_vs_floor_warm", "loop_vs_deepagents_cold")
    worst = dict.fromkeys(keys, 0.0)
    print(f"CPU time (process_time), exclusive per part; medians of {repeats} repeats; each repeat "
          "counts the floor in a tight loop (cold, then warm), runs labkit cold twice with the floor "
          "counted in the run (just before labkit's hooks, then just after), labkit warm, then "
          "deepagents cold and warm. cold: labkit's counting caches emptied before the run (each text "
          "BPE-encoded once, each tool converted once); warm: the same run again, its texts' counts "
          "already known. Ratios: medians of each repeat's own ratio (cold: labkit's hooks where they "
          "count first over the floor where it counts first; warm: over the tight-loop floor; labkit "
          "over deepagents in that repeat). The line takes the cold middleware and the warm loop ratio")
    for window in windows:
        traj = trajectory(recommended(window))
        floor_ms(*traj, cold=False)  # langchain keeps a conversion on the tool: no warm floor pays it
        samples = {mode: {name: [] for name in settings} for mode in ("cold", "warm")}
        orders: dict[str, list[dict]] = {"first": [], "last": []}  # labkit's cold runs, by the floor's place
        tight: dict[str, list[float]] = {"cold": [], "warm": []}  # the floor in a tight loop
        ratios: dict[str, list[tuple[float, float]]] = {"cold": [], "warm": []}
        for _ in range(repeats):
            for mode in ("cold", "warm"):
                tight[mode].append(floor_ms(*traj, cold=mode == "cold"))
            for order in orders:
                orders[order].append(sample(recommended(window), cold=True, floor=order))
            lab_warm = sample(recommended(window))
            deep = {mode: sample(deepagents_defaults(window), cold=mode == "cold")
                    for mode in ("cold", "warm")}
            first, last = orders["first"][-1], orders["last"][-1]
            samples["cold"]["labkit"] += [first, last]
            samples["warm"]["labkit"].append(lab_warm)
            for mode in ("cold", "warm"):
                samples[mode]["deepagents"].append(deep[mode])
            cold_loop = (first["loop ms/call"] + last["loop ms/call"]) / 2
            ratios["cold"].append((last["middleware ms"] / first["floor ms"],
                                   cold_loop / deep["cold"]["loop ms/call"]))
            ratios["warm"].append((lab_warm["middleware ms"] / tight["warm"][-1],
                                   lab_warm["loop ms/call"] / deep["warm"]["loop ms/call"]))
        print()
        print(f"window {window:,} tokens: {len(traj[0])} distinct messages, {len(traj[1])} tools, "
              f"{len(traj[2])} requests; the floor cold in a tight loop "
              f"{statistics.median(tight['cold']):.1f} ms")
        for order, runs in orders.items():  # whoever counts a text second finds the caches warm
            lab_ms, its_ms = (statistics.median(r[k] for r in runs) for k in ("middleware ms", "floor ms"))
            print(f"cold runs with the floor counting {order}: labkit's hooks {lab_ms:.1f} ms, "
                  f"the floor {its_ms:.1f} ms")
        ratio = {}
        for mode in ("cold", "warm"):
            med = {name: {k: statistics.median(s[k] for s in runs) for k in runs[0] if k != "ok"}
                   for name, runs in samples[mode].items()}
            floor = statistics.median([r["floor ms"] for r in orders["first"]] if mode == "cold"
                                      else tight["warm"])
            _table(f"{mode}", floor, med, samples[mode])
            ratio[mode] = tuple(statistics.median(r[i] for r in ratios[mode]) for i in (0, 1))
            each = [" ".join(f"{r[i]:.2f}" for r in ratios[mode]) for i in (0, 1)]
            goals = ("goal <= 1.25; ", "") if mode == "cold" else ("", "goal <= 1; ")  # the line's two
            print(f"{mode}: middleware_vs_floor {ratio[mode][0]:.2f} ({goals[0]}per repeat {each[0]}); "
                  f"loop_vs_deepagents {ratio[mode][1]:.2f} ({goals[1]}per repeat {each[1]})")
        for key, value in zip(keys, (ratio["cold"][0], ratio["warm"][1], ratio["warm"][0], ratio["cold"][1])):
            worst[key] = max(worst[key], value)
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", default=",".join(str(w) for w in WINDOWS),
                        help="comma-separated context windows, in tokens (default: 128000,60000,32000)")
    parser.add_argument("--repeats", type=int, default=21, help="timed runs per stack and window (>= 5)")
    args = parser.parse_args()
    print(measure([int(w) for w in args.windows.split(",")], args.repeats))


if __name__ == "__main__":
    main()
