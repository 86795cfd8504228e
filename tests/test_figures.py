"""The diagrams in notebooks/figures say what the installed code does.

Each test reads an SVG's ``<text>`` labels and compares them with the installed deepagents and
langchain, so a diagram that drifts from the code after an upgrade fails here (issue 11, item 6).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from unittest import mock

import deepagents
import deepagents.graph
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import HumanMessage

from labkit import LabModel, Recorder, scenario

FIGURES = Path(__file__).resolve().parents[1] / "notebooks" / "figures"
SVG = "{http://www.w3.org/2000/svg}"
HOOKS = ["before_agent", "before_model", "wrap_model_call", "wrap_tool_call", "after_model", "after_agent"]


def _texts(name: str) -> list[ET.Element]:
    """The ``<text>`` elements of a figure, in document order."""
    return list(ET.parse(FIGURES / name).getroot().iter(f"{SVG}text"))


def _installed_stack(**kwargs) -> list:
    """The middleware list ``create_deep_agent`` hands to langchain's ``create_agent``, in order."""
    handed = {}
    real = deepagents.graph.create_agent

    def spy(*args, **kw):
        handed.update(kw)
        return real(*args, **kw)

    with mock.patch.object(deepagents.graph, "create_agent", spy):
        deepagents.create_deep_agent(model=LabModel(), **kwargs)
    return handed["middleware"]


def _hooks(middleware) -> list[str]:
    """The hooks a middleware's class overrides, sync or async — the test create_agent itself makes."""
    cls = type(middleware)
    return [h for h in HOOKS if any(getattr(cls, v) is not getattr(AgentMiddleware, v) for v in (h, "a" + h))]


def test_nb03_pipeline_matches_the_installed_stack():
    texts = _texts("03-pipeline.svg")
    names = [t.text for t in texts if t.get("class") == "middleware"]
    stack = _installed_stack()
    assert names == [m.name for m in stack]
    # the line under each name lists the hooks its class overrides
    drawn = [texts[texts.index(t) + 1].text.split(" · ") for t in texts if t.get("class") == "middleware"]
    assert drawn == [_hooks(m) for m in stack]


def test_nb03_pipeline_puts_user_middleware_where_the_figure_says():
    recorder = Recorder()
    stack = _installed_stack(middleware=[recorder])
    names = [m.name for m in stack]
    assert stack.index(recorder) == names.index("PatchToolCallsMiddleware") + 1


def test_nb03_agent_loop_names_every_installed_hook():
    labels = {t.text for t in _texts("03-agent-loop.svg")}
    hooks = {label for label in labels if label in dir(AgentMiddleware)}
    assert hooks == set(HOOKS)


def test_nb06_every_call_lists_the_tools_a_deep_agent_binds():
    model = LabModel()
    agent = deepagents.create_deep_agent(model=model, tools=scenario.tools())
    agent.invoke({"messages": [HumanMessage("Hello")]})
    drawn = [t.text for t in _texts("06-every-call.svg") if t.get("class") == "tool"]
    assert drawn == model.calls[0].tools


def test_nb01_three_defences_name_deepagents_default_paths():
    from deepagents.backends import StateBackend
    from deepagents.middleware.summarization import create_summarization_middleware

    labels = {t.text for t in _texts("01-three-defences.svg")}
    summarization = create_summarization_middleware(LabModel(), StateBackend())
    assert summarization._large_tool_results_prefix + "/" in labels
    assert summarization._history_path_prefix + "/" in labels
