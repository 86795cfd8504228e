"""The folders labkit's middleware write to, in one place.

Used by: labkit.offload (evicted results, large human messages; re-exported there),
labkit.summarize.archive (the archive), labkit.evals (where a needle was read back from) and
labkit.widgets. They are deepagents' own folder names, so a deepagents agent and a labkit one
write to the same places. The scenario's own files (``/reports/…``) belong to labkit.scenario.
"""

from __future__ import annotations

__all__ = ["HISTORY_DIR", "RESULTS_DIR"]

RESULTS_DIR = "/large_tool_results"  # evicted tool results, one file per tool call
HISTORY_DIR = "/conversation_history"  # the summarization archive, and offloaded human messages
