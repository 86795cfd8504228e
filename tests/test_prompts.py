"""labkit.prompts: golden snapshots of the texts that moved here, and their old homes.

The texts of the lab model's memory answers (notebook 13), the progress-file instruction
(notebook 14) and the ``task`` tool (notebook 12) live in ``labkit.prompts``; ``labkit.model``
and ``labkit.isolate`` still export the names learners import from them. A change to any text is
a visible diff: rewrite the snapshots on purpose with ``LABKIT_UPDATE_SNAPSHOTS=1`` and commit
them with the change.
"""

from __future__ import annotations

import string

import pytest

from labkit import isolate, model, prompts
from tests.conftest import assert_snapshot

# snapshot file -> (text, the fields its code fills in with str.format)
TEXTS = {
    "memory_saved.txt": (prompts.MEMORY_SAVED, {"rule", "path", "result"}),
    "memory_had.txt": (prompts.MEMORY_HAD, {"rule", "path"}),
    "progress_prompt.txt": (prompts.PROGRESS_PROMPT, set()),
    "task_description.txt": (prompts.TASK_DESCRIPTION, {"agents"}),
    "general_purpose_prompt.txt": (prompts.GENERAL_PURPOSE_PROMPT, set()),
    "general_purpose_description.txt": (prompts.GENERAL_PURPOSE_DESCRIPTION, set()),
    "task_truncated.txt": (prompts.TRUNCATED, {"name", "cap", "total"}),
    "task_bad_call.txt": (prompts.BAD_CALL, {"types", "problems"}),
    "task_no_text.txt": (prompts.NO_TEXT, set()),
    "task_child_failed.txt": (prompts.CHILD_FAILED, {"name", "error"}),
    "task_file_conflict.txt": (prompts.FILE_CONFLICT,
                               {"path", "first", "this", "outcome"}),
    "task_conflict_saved.txt": (prompts.CONFLICT_SAVED, {"saved"}),
    "task_conflict_deleted.txt": (prompts.CONFLICT_DELETED, set()),
    "task_conflict_reply.txt": (prompts.CONFLICT_REPLY, {"conflicts", "who", "reply"}),
}


@pytest.mark.parametrize("name", TEXTS)
def test_golden_snapshot(name):
    """Rewrite on purpose with ``LABKIT_UPDATE_SNAPSHOTS=1`` and commit with the change."""
    assert_snapshot(name, TEXTS[name][0])


@pytest.mark.parametrize("name", TEXTS)
def test_each_template_has_exactly_the_fields_its_code_fills(name):
    """A renamed placeholder would fail only when the text is used (a KeyError mid-run)."""
    text, fields = TEXTS[name]
    assert {f for _, f, _, _ in string.Formatter().parse(text) if f is not None} == fields


def test_the_progress_prompt_names_the_file_the_lab_model_looks_for():
    """The lab model turns the progress-file anchor on when a system message names the path."""
    assert prompts.PROGRESS_PATH == "/progress.md"
    assert prompts.PROGRESS_PROMPT.count(prompts.PROGRESS_PATH) == 2


@pytest.mark.parametrize(("home", "names"), [
    (model, ["PROGRESS_PATH", "PROGRESS_PROMPT"]),
    (isolate, ["TASK_DESCRIPTION", "GENERAL_PURPOSE_PROMPT", "GENERAL_PURPOSE_DESCRIPTION",
               "TRUNCATED", "BAD_CALL", "NO_TEXT", "CHILD_FAILED"]),
])
def test_the_old_homes_still_export_the_same_texts(home, names):
    for name in names:
        assert getattr(home, name) is getattr(prompts, name), f"{home.__name__}.{name}"


def test_every_exported_text_is_defined_and_listed_once():
    assert prompts.__all__ == sorted(set(prompts.__all__))
    assert all(isinstance(getattr(prompts, n), (str, tuple)) for n in prompts.__all__)
