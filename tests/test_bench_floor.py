"""bench/floor_inrun.py: the floor ``make bench`` divides labkit's middleware by does the work it
stands for — each request's exact size (the Recorder's ``seen``), every raw tool result BPE-counted
by its own counter, each tool schema converted from a new instance — and counts where it says it
does: before labkit's hooks, or after them. No timing here (``make bench`` times it)."""

from __future__ import annotations

import importlib.util

import pytest
from langchain_core.messages import ToolMessage

from labkit import LabModel, evals, scenario
from labkit.offload import OFFLOADED, OffloadMiddleware
from labkit.trace import Recorder

from .conftest import ROOT


def _floor_inrun():
    spec = importlib.util.spec_from_file_location("floor_inrun", ROOT / "bench" / "floor_inrun.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("order", ["floor_first", "floor_last"])
def test_the_floor_counts_every_request_and_raw_result_where_it_says(order, monkeypatch):
    floor_inrun = _floor_inrun()
    seen: list[tuple[str, str]] = []  # (who, tool call id): who weighed each raw result, in order
    real_evict = OffloadMiddleware._evict_result
    def evict(self, m, *twin):
        seen.append(("labkit", m.tool_call_id))
        return real_evict(self, m, *twin)
    monkeypatch.setattr(OffloadMiddleware, "_evict_result", evict)
    made = []
    floor = floor_inrun.Floor(floor_inrun.OwnCounter(), fresh=lambda tool: made.append(tool.name) or tool)
    real_count = floor.count

    def count(messages):
        seen.extend(("floor", m.tool_call_id) for m in messages
                    if isinstance(m, ToolMessage) and OFFLOADED not in m.additional_kwargs)
        real_count(messages)
    floor.count = count

    setting = evals.Setting("recommended", window=32_000)
    model = LabModel(window=setting.window)
    stack = getattr(floor_inrun, order)(floor, list(evals.stack(setting, model)))
    rec = Recorder(keep_requests=True)
    turns = evals.reminded(scenario.TURNS, model, setting.reminders)
    run = scenario.run(model, middleware=stack, turns=turns, recorder=rec)
    assert run.error is None and run.score.goal_completed

    assert floor.totals == [r.seen for r in run.records], "each request's size, as the Recorder measured it"
    raw = [m for m in floor.held if isinstance(m, ToolMessage) and OFFLOADED not in m.additional_kwargs]
    calls = {tc["id"] for m in run.messages if m.type == "ai" for tc in m.tool_calls}
    assert {m.tool_call_id for m in raw} == calls and not floor.raw, "every raw result, none left waiting"
    own = floor.counter._texts._lru
    assert all((floor.counter.encoding_name, m.content) in own for m in raw), "BPE-counted by its own counter"
    tools = {name for r in run.records for name in r.request.tool_names}
    assert sorted(made) == sorted(tools), "each tool converted once, from a new instance"
    weighed = [tc for who, tc in seen if who == "labkit"]
    assert weighed, "labkit weighed the raw results too"
    first = "floor" if order == "floor_first" else "labkit"
    assert all(next(who for who, t in seen if t == tc) == first for tc in weighed), f"{first} counts first"

