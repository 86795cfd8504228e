"""bench/floor_inrun.py: the floor ``make bench`` divides labkit's middleware by does the work it
stands for — each request's exact size (the Recorder's ``seen``) and each raw tool result counted —
whether it counts before labkit's hooks or after them. No timing here (``make bench`` times it)."""

from __future__ import annotations

import importlib.util

import pytest
from langchain_core.messages import ToolMessage

from labkit import LabModel, evals, scenario
from labkit.offload import OFFLOADED
from labkit.tokens import TokenCounter

from .conftest import ROOT


def _floor_inrun():
    spec = importlib.util.spec_from_file_location("floor_inrun", ROOT / "bench" / "floor_inrun.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("order", ["floor_first", "floor_last"])
def test_the_floor_counts_every_request_exactly_and_every_raw_result(order):
    floor_inrun = _floor_inrun()
    setting = evals.Setting("recommended", window=32_000)
    model = LabModel(window=setting.window)
    floor = floor_inrun.Floor(TokenCounter(), fresh=lambda tool: tool)
    stack = getattr(floor_inrun, order)(floor, list(evals._middleware(setting, model)))
    turns = evals.reminded(scenario.TURNS, model, setting.reminders)
    run = scenario.run(model, middleware=stack, turns=turns)
    assert run.error is None and run.score.goal_completed
    assert floor.totals == [r.seen for r in run.records], "each request's size, as the Recorder measured it"
    calls = {tc["id"] for m in run.messages if m.type == "ai" for tc in m.tool_calls}
    raw = {m.tool_call_id for m in floor.held
           if isinstance(m, ToolMessage) and OFFLOADED not in m.additional_kwargs}
    assert raw == calls and not floor.raw, "every tool call's raw result counted, none left waiting"
    assert any(OFFLOADED in m.additional_kwargs for m in floor.held), "and each offloaded stub as sent"
