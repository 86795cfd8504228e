"""The diagrams in notebooks/figures say what the installed code does (issue 11, item 6).

Each test reads one SVG's ``<text>`` labels and compares the names in it with the installed
deepagents / langchain objects, or with the notebook's own code, so a diagram cannot drift from
what the notebook runs. One function per figure, named after its notebook.
"""

from __future__ import annotations

import inspect
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "notebooks" / "figures"
SVG = "{http://www.w3.org/2000/svg}"


def _labels(name: str, cls: str | None = None) -> list[str]:
    """The text of every ``<text>`` in ``figures/name`` (only those of class ``cls``, if given)."""
    root = ET.parse(FIGURES / name).getroot()
    return ["".join(t.itertext()).strip() for t in root.iter(f"{SVG}text")
            if cls is None or t.get("class") == cls]


def _notebook_names(notebook: str, starts: str, names: dict) -> dict:
    """Run the notebook's code cell that starts with ``starts`` in ``names``; return the names."""
    nb = nbformat.read(ROOT / "notebooks" / notebook, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith(starts))
    exec(cell.source, names)  # noqa: S102 — the course's own notebook cell
    return names


def test_nb13_composite_backend_routes_are_the_notebooks():
    from deepagents.backends import CompositeBackend, StateBackend, StoreBackend

    from labkit import scenario

    names = _notebook_names("13_skills_and_memory.ipynb", "def memory_backend", {
        "CompositeBackend": CompositeBackend, "StateBackend": StateBackend, "StoreBackend": StoreBackend,
        "scenario": scenario})
    backend = names["memory_backend"](scenario.memory_store())
    routes = [f"{prefix} → {type(b).__name__}" for prefix, b in backend.sorted_routes]
    assert _labels("13-composite-backend.svg", "route") == routes
    assert _labels("13-composite-backend.svg", "default") == [f"default → {type(backend.default).__name__}"]
    assert _labels("13-composite-backend.svg", "composite") == [type(backend).__name__]
    labels = _labels("13-composite-backend.svg")
    routed, key = backend._get_backend_and_key(scenario.MEMORY_PATH)
    assert type(routed) is StoreBackend
    assert f"{scenario.MEMORY_PATH} → key {key}" in labels, "the prefix cut off as the installed route does"
    assert f"namespace {scenario.MEMORY_NAMESPACE}" in labels
    assert f"{scenario.REPORT_PATH}, /large_tool_results/…" in labels
    assert type(backend._get_backend_and_key(scenario.REPORT_PATH)[0]) is StateBackend


def test_nb14_goal_anchor_names_are_the_installed_ones():
    from deepagents.backends import StateBackend
    from deepagents.middleware.summarization import SummarizationMiddleware
    from langchain.agents.middleware import TodoListMiddleware
    from langchain.agents.middleware import summarization as lc_summarization

    from labkit import LabModel, evals
    from labkit.prompts import PROGRESS_PATH, PROGRESS_PROMPT

    text = " ".join(_labels("14-goal-anchor.svg"))
    assert SummarizationMiddleware(LabModel(), backend=StateBackend()).name in text  # its name in the stack
    assert TodoListMiddleware.__name__ in text
    assert [t.name for t in TodoListMiddleware().tools] == ["write_todos"]
    assert "write_todos" in text
    assert f"backend (StateBackend): {PROGRESS_PATH}" in text
    assert PROGRESS_PATH in PROGRESS_PROMPT
    assert "too long to summarize" in text
    assert "Previous conversation was too long to summarize." in inspect.getsource(lc_summarization)
    assert "trigger 8 messages, keep 4" in text  # evals.forced_compaction's defaults, notebook 14
    defaults = inspect.signature(evals.forced_compaction).parameters
    assert (defaults["trigger"].default, defaults["keep"].default) == (8, 4)
