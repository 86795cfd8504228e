"""Each diagram says what the installed code does: its labels are read back and checked against it."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from langgraph.prebuilt.tool_node import ToolNode

from labkit import LabModel, scenario
from labkit.isolate import IsolateMiddleware, SubagentSpec

FIGURES = Path(__file__).resolve().parents[1] / "notebooks" / "figures"


def _labels(name: str) -> str:
    return " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", (FIGURES / name).read_text()))


def test_nb12_fan_out_names_the_installed_tool_its_arguments_and_the_notes_paths():
    text = _labels("12-fan-out.svg")
    task = IsolateMiddleware(LabModel(), [SubagentSpec(**scenario.researcher())]).tools[0]
    assert task.name == "task"
    assert f"{task.name}(description, subagent_type=\"researcher\")" in text.replace("&quot;", '"')
    assert set(task.args) == {"description", "subagent_type"}
    assert all(t.name in text for t in scenario.tools()), "the child's two data tools"
    assert all(scenario.notes_path(c["ticker"]) in text for c in scenario.companies()), "the notes paths"
    assert "ToolNode" in text and "executor" in inspect.getsource(ToolNode._func), "parallel on a thread pool"
