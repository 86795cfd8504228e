"""Summarization (摘要压缩): fold old messages into a summary — without deleting them.

Notebooks 07–11. Three parts, read in this order: ``policy`` (when to compact, where to cut,
what the model then sees: pure functions that ``labkit.replay`` re-runs), ``archive`` (where the
folded messages are kept, word for word, and who owns a section) and ``middleware``
(:class:`SummarizeMiddleware`: the hooks, the summary call, the overflow fallback and the
``compact_conversation`` tool). Everything is importable from ``labkit.summarize`` itself.
"""

from labkit.summarize.archive import Section, archive_path, archive_section, read_archive, section_id
from labkit.summarize.middleware import SummarizeMiddleware
from labkit.summarize.policy import (
                                     CONVERSATION_KEY,
                                     EVENTS_KEY,
                                     FALLBACK_KEEP,
                                     FALLBACK_TRIGGER,
                                     MANUAL_TOOL,
                                     SUMMARY_METADATA,
                                     SUMMARY_TAGS,
                                     Event,
                                     Fold,
                                     current,
                                     cut_in,
                                     cut_point,
                                     defaults,
                                     events_of,
                                     next_fold,
                                     safe_cut,
                                     should_compact,
                                     summary_message,
                                     summary_parts,
                                     summary_prompt,
                                     view,
                                     view_of,
)

__all__ = [
    "CONVERSATION_KEY",
    "EVENTS_KEY",
    "FALLBACK_KEEP",
    "FALLBACK_TRIGGER",
    "MANUAL_TOOL",
    "SUMMARY_METADATA",
    "SUMMARY_TAGS",
    "Event",
    "Fold",
    "Section",
    "SummarizeMiddleware",
    "archive_path",
    "archive_section",
    "current",
    "cut_in",
    "cut_point",
    "defaults",
    "events_of",
    "next_fold",
    "read_archive",
    "safe_cut",
    "section_id",
    "should_compact",
    "summary_message",
    "summary_parts",
    "summary_prompt",
    "view",
    "view_of",
]
