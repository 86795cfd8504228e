"""The diagrams say what the installed code does: their labels are read and compared with it."""

from __future__ import annotations

import inspect
import re
import typing
import xml.etree.ElementTree as ET
from pathlib import Path

FIGURES = Path(__file__).resolve().parents[1] / "notebooks" / "figures"
SVG = "{http://www.w3.org/2000/svg}"


def _labels(name: str) -> list[str]:
    root = ET.parse(FIGURES / name).getroot()
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


def test_nb09_view_and_archive_names_are_installed():
    from deepagents.middleware import summarization as da

    from labkit.summarize import policy

    labels = _labels("09-view-and-archive.svg")
    text = "\n".join(labels)
    event_keys = set(typing.get_type_hints(da.SummarizationEvent))
    shown = {k for k in ("cutoff_index", "summary_message", "file_path", "created_at_index") if k in labels}
    assert shown == event_keys, "the event box lists the installed event's keys"
    assert f'state["{da.SUMMARIZATION_SESSION_ID_KEY}"]' in text
    assert 'state["_summarization_event"]' in text
    assert "_summarization_event" in inspect.getsource(da)
    source = inspect.getsource(da.SummarizationMiddleware)
    assert "## Summarized at" in text
    assert "## Summarized at {timestamp}" in source, "the archive's section heading"
    assert 'f"session_{uuid.uuid4().hex}"' in source, "the archive is named by a session id"
    assert "/conversation_history/session_<32 hex>.md" in text
    assert re.search(r'f"\{_root\}/conversation_history"', source)
    assert "[summary_message, *messages[cutoff_index:]]" in text
    assert f'state["{policy.EVENTS_KEY}"]' in text, "labkit's event key"


def test_nb11_trigger_and_wall_are_the_installed_fallback():
    from deepagents.middleware import summarization as da
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    from labkit.summarize import middleware as lk

    labels = _labels("11-trigger-and-wall.svg")
    text = "\n".join(labels)
    wrap = inspect.getsource(lk.SummarizeMiddleware.wrap_model_call)
    assert "SummarizeMiddleware.wrap_model_call" in labels
    assert wrap.count("handler(") == 2, "one call, and one retry after an overflow"
    assert "_on_overflow" in wrap
    assert "_on_overflow: compact, forced" in labels
    overflow = inspect.getsource(lk.SummarizeMiddleware._on_overflow)
    assert '"overflow"' in overflow
    assert 'event, reason "overflow"' in labels
    assert "nothing is left to compact" in overflow
    assert "nothing is left to compact," in labels
    assert '"trigger"' in inspect.getsource(lk.SummarizeMiddleware._before)
    assert 'event, reason "trigger"' in labels
    assert "ContextOverflowError" in text
    no_profile = GenericFakeChatModel(messages=iter([]))
    assert da.compute_summarization_defaults(no_profile)["trigger"] == ("tokens", 170_000)
    assert "trigger: 170,000" in labels
    assert "_call_with_budget" in inspect.getsource(da.SummarizationMiddleware)
    assert "_call_with_budget" in text
