"""labkit.installed: every private deepagents/langchain name the notebooks read is probed there, the
tested set has them all, and a changed one is named (feature, tested and installed version, the
command) instead of a KeyError or an AttributeError."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from deepagents.backends import StateBackend
from deepagents.middleware.summarization import create_summarization_middleware
from langchain.agents.middleware import SummarizationMiddleware as LangchainSummarization
from langchain_core.messages import AIMessage, HumanMessage

from labkit import LabModel, installed, scenario, versions

ROOT = Path(__file__).resolve().parent.parent
PRIVATE = re.compile(r"\.(_[A-Za-z]\w*)|\[[\"'](_[A-Za-z]\w*)[\"']\]|import (_[A-Za-z]\w*)")
NOTEBOOKS_OWN = {"_by_run"}  # notebook 10's CallSpy keeps it on itself


def private_names() -> dict[str, set[str]]:
    """Each private (single-underscore) name a notebook's code reads, with the notebooks reading it."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                for groups in PRIVATE.findall("".join(cell["source"])):
                    name = next(g for g in groups if g)
                    if not name.startswith("__") and name not in NOTEBOOKS_OWN:
                        found.setdefault(name, set()).add(path.name[:2])
    return found


@pytest.fixture
def older_deepagents(monkeypatch):
    """The version check as it would read with deepagents 0.7.20 installed."""
    older = versions.compare({**versions.TESTED, "deepagents": "0.7.20"})
    monkeypatch.setattr(installed, "compare", lambda: older)


def test_every_private_name_a_notebook_reads_is_probed():
    found = private_names()
    assert "_create_summary" in found and "_input_budget" in found, "the scan finds the names"
    for name, notebooks in found.items():
        covering = [f for f in installed.FEATURES if name in f.name or name in f.what]
        assert covering, f"notebooks {sorted(notebooks)} read {name}: add it to labkit.installed.FEATURES"
        listed = set().union(*(f.notebooks for f in covering))
        assert notebooks <= listed, f"{name}: FEATURES lists {sorted(listed)}, read in {sorted(notebooks)}"


def test_the_tested_set_has_every_feature():
    assert installed.missing() == []


def test_a_probe_that_fails_is_reported(monkeypatch):
    probe = installed._has("deepagents.middleware.summarization", "SummarizationMiddleware._gone")
    gone = installed.Feature("deepagents", "_gone", "SummarizationMiddleware has _gone", ("09",), probe)
    monkeypatch.setattr(installed, "FEATURES", (*installed.FEATURES, gone))
    assert installed.missing() == [gone]


def test_an_old_event_names_the_feature_both_versions_and_the_command(older_deepagents):
    event = {"cutoff_index": 3, "summary_message": HumanMessage("s"), "file_path": "/a.md"}  # 0.7.20's keys
    old = {"_summarization_event": event}
    with pytest.raises(installed.FeatureChanged) as raised:
        installed.summarization_event(old)
    message = str(raised.value)
    assert "deepagents 0.7.32's summarization event has the keys" in message and "created_at_index" in message
    assert "the installed deepagents 0.7.20 does not" in message
    assert "make setup" in message and "pip install -r requirements.lock" in message


def test_a_run_that_never_compacted_is_a_plain_keyerror():
    with pytest.raises(KeyError, match="never compacted"):
        installed.summarization_event({"messages": []})


def test_the_event_of_a_real_run_has_the_four_keys():
    run = scenario.run(LabModel(window=60_000), harness="deep")
    event = installed.summarization_event(run.state)
    assert set(event) == set(installed.EVENT_KEYS)
    assert event["file_path"] == f"/conversation_history/{installed.summarization_session_id(run.state)}.md"


def test_a_middleware_without_the_helper_is_named(older_deepagents):
    named = "keeps langchain's as _lc_helper; the installed deepagents 0.7.20"
    with pytest.raises(installed.FeatureChanged, match=named):
        installed.summary_helper(object())


def test_the_trim_reads_through_either_middleware():
    deep = create_summarization_middleware(LabModel(), StateBackend())
    lc = LangchainSummarization(LabModel(), trigger=("messages", 4))
    history = [HumanMessage("Go."), AIMessage("Done.")]
    assert installed.summary_helper(deep) is deep._lc_helper
    assert installed.trim_for_summary(deep, history) == deep._lc_helper._trim_messages_for_summary(history)
    assert installed.trim_for_summary(lc, history) == lc._trim_messages_for_summary(history) == history


def test_summary_calls_carry_nostream():
    assert installed.summary_call_tags() == ["nostream"]


def test_summary_calls_without_nostream_are_named(monkeypatch):
    monkeypatch.setattr(installed, "_summary_tags", lambda: ())
    named = r"summarizer tags its model call nostream; .* \(its tags are \[\]\)"
    with pytest.raises(installed.FeatureChanged, match=named):
        installed.summary_call_tags()
