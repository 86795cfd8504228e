"""Every notebook's "On your model" section, executed with LABKIT_MODEL pointing at the fake
OpenAI-compatible server (tests/openai_server.py, 127.0.0.1) through langchain's real HTTP client:
the section sends the server requests and shows both runs. Only the notebook's first code cell
(its imports) and the section run here: no other cell reads LABKIT_MODEL (no cell calls
get_model — tests/model/test_get_model.py checks it), so nbval's offline run already executes them
exactly as they would run with it set."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.openai_server import OpenAIServer

NOTEBOOKS = sorted(p for p in (Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb")
                   if any("".join(c["source"]).startswith("## On your model")
                          for c in json.loads(p.read_text(encoding="utf-8"))["cells"]))


@pytest.fixture(scope="module")
def server():
    with OpenAIServer(window=64_000) as s:
        yield s


def test_the_sections_exist():
    assert len(NOTEBOOKS) >= 4


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_the_section_runs_on_your_model(path, server, monkeypatch):
    env = {"LABKIT_MODEL": "openai:fake-model", "LABKIT_BASE_URL": server.base_url, "OPENAI_API_KEY": "dummy",
           "LABKIT_WINDOW": "64000", "LABKIT_BUDGET_TOKENS": "200000"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)  # the kernel inherits them
    before = len(server.chat_requests)
    nb = nbformat.read(path, as_version=4)
    start = next(i for i, c in enumerate(nb.cells) if c.source.startswith("## On your model"))
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and i != first and i < start:
            cell.source = ""  # the lesson's cells: the offline nbval run covers them
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    text = "".join(o.get("text", "") for c in nb.cells[start:] if c.cell_type == "code" for o in c.outputs)
    assert "Your model: fake-model; window 64,000" in text and "call 1:" in text, text[:500]
    assert len(server.chat_requests) > before, "the section sent the server requests"
