"""The lab model: the offline, deterministic chat model the course runs on (notebook 01).

Read it in this order: ``behaviour`` (what it does from what it sees — the script), ``chat``
(``LabModel``, the LangChain chat model around the script), ``history`` (the histories it
refuses, as a provider would), ``providers`` (``get_model``: it, or a real model). Private
helpers: ``_context`` (reading the context), ``_writing`` (its summary, drafts and replies),
``_anchors`` (goal anchors, notebook 14), ``_skills`` (skills and memory, notebook 13).

What it leaves out: any language understanding. It is not a language model; outside the
scenario it says so and how to switch to a real one (``LABKIT_MODEL``).
"""

from labkit.model._anchors import ANCHOR_MIN_STEPS, TODO_TOOL
from labkit.model._skills import prompt_sections
from labkit.model._writing import Facts, lab_summary, merge, summary_facts, write_summary
from labkit.model.behaviour import COMPACT_TOOL, wants_compaction
from labkit.model.chat import MODEL_NAME, PROVIDER, Call, LabModel
from labkit.model.history import InvalidHistoryError
from labkit.model.providers import describe, get_model
from labkit.prompts import PROGRESS_PATH, PROGRESS_PROMPT

__all__ = [
    "ANCHOR_MIN_STEPS",
    "COMPACT_TOOL",
    "MODEL_NAME",
    "PROGRESS_PATH",
    "PROGRESS_PROMPT",
    "PROVIDER",
    "TODO_TOOL",
    "Call",
    "Facts",
    "InvalidHistoryError",
    "LabModel",
    "describe",
    "get_model",
    "lab_summary",
    "merge",
    "prompt_sections",
    "summary_facts",
    "wants_compaction",
    "write_summary",
]

_wants_compaction = wants_compaction  # the name notebook 11 imports
