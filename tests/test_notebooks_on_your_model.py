"""Every notebook's "On your model" section, executed with LABKIT_MODEL pointing at the fake
OpenAI-compatible server (tests/openai_server.py, 127.0.0.1) through langchain's real HTTP client —
misbehaving as real models do: it loops after compaction, sends malformed tool-call arguments
and calls a tool it was not offered. With the default budget, the section sends the server
requests, no more input tokens than the budget, and shows both runs with no error in any cell.
Only the notebook's first code cell (its imports) and the section run here: no other cell reads
LABKIT_MODEL (no cell calls get_model — tests/model/test_get_model.py checks it), so nbval's
offline run already executes them exactly as they would run with it set."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from labkit.yourmodel import DEFAULT_BUDGET
from tests.openai_server import OpenAIServer

NOTEBOOKS = sorted(p for p in (Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb")
                   if any("".join(c["source"]).startswith("## On your model")
                          for c in json.loads(p.read_text(encoding="utf-8"))["cells"]))


@pytest.fixture(scope="module")
def server():
    with OpenAIServer(window=64_000, behaviours=("loop", "bad_args", "unknown_tool")) as s:
        yield s


def test_the_sections_exist():
    assert len(NOTEBOOKS) >= 4


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_the_section_runs_on_your_model(path, server, monkeypatch):
    env = {"LABKIT_MODEL": "openai:fake-model", "LABKIT_BASE_URL": server.base_url, "OPENAI_API_KEY": "dummy",
           "LABKIT_WINDOW": "64000"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)  # the kernel inherits them
    monkeypatch.delenv("LABKIT_BUDGET_TOKENS", raising=False)  # the default budget
    before, received = len(server.chat_requests), server.received
    nb = nbformat.read(path, as_version=4)
    start = next(i for i, c in enumerate(nb.cells) if c.source.startswith("## On your model"))
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and i != first and i < start:
            cell.source = ""  # the lesson's cells: the offline nbval run covers them
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [o for c in nb.cells[start:] if c.cell_type == "code" for o in c.outputs]
    text = "".join(o.get("text", "") for o in outputs)
    assert "Your model: openai:fake-model" in text and "window 64,000" in text, text[:500]
    assert "  request 1 · parent · " in text, text[:800]
    assert not [o for o in outputs if o.output_type == "error"] and "Traceback" not in text
    assert len(server.chat_requests) > before, "the section sent the server requests"
    assert server.received - received <= DEFAULT_BUDGET * 1.05, "the default budget held"
