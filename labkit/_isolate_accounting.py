"""What each isolated child cost: its own records, and a row per context for a table.

Used by: labkit.isolate (notebook 12), which re-exports ``ChildRun``, ``calls_by_context`` and
``cost_rows``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import HumanMessage

from labkit.tokens import message_text
from labkit.trace import CallRecord

__all__ = ["ChildRun", "calls_by_context", "cost_rows"]


def calls_by_context(calls: Sequence[Any]) -> dict[str, list[Any]]:
    """Group ``LabModel.calls`` by the context they belong to: the text of each call's first
    human message (a child's is its task description; the parent's is the first user turn).
    Under deepagents every child shares the parent's model, so this is how to tell them apart.
    Notebook 12."""
    groups: dict[str, list[Any]] = {}
    for call in calls:
        first = next((m for m in call.messages if isinstance(m, HumanMessage)), None)
        groups.setdefault(message_text(first, text_only=True) if first is not None else "", []).append(call)
    return groups


@dataclass
class ChildRun:
    """One task call: the child's own records (its own ``Recorder``), and what the parent got
    back. Every child pays its own system prompt and tool schemas on every call. Notebook 12."""

    order: tuple[int, int]  # (parent message index, position among its tool calls)
    tool_call_id: str
    subagent_type: str
    description: str
    records: list[CallRecord] = field(default_factory=list)
    reply: str = ""
    reply_tokens: int = 0  # of the child's own reply, before any cap
    capped: bool = False
    files: list[str] = field(default_factory=list)  # paths the child wrote (or deleted)
    error: str | None = None
    conflicts: dict[str, str | None] = field(default_factory=dict)  # path -> where its version went

    @property
    def peak(self) -> int:
        return max((r.seen for r in self.records), default=0)

    @property
    def total(self) -> int:
        """Input tokens over all its model calls (what a provider bills as input)."""
        return sum(r.seen for r in self.records if not r.error)

    @property
    def fixed(self) -> int:
        """Tokens of system prompt and tool schemas it paid over all its calls."""
        return sum(r.by_kind["system"] + r.by_kind["tools"] for r in self.records if not r.error)


def cost_rows(parent: Sequence[CallRecord], children: Sequence[ChildRun]) -> list[dict[str, Any]]:
    """One row per context — the parent, then each child — for a table: model calls, peak
    context, input tokens in all, and how many of them were system prompt and tool schemas.
    Notebook 12."""
    parent = list(getattr(parent, "records", parent))
    rows = [{"context": "parent", "model calls": len(parent),
             "peak": max((r.seen for r in parent), default=0),
             "input tokens": sum(r.seen for r in parent if not r.error),
             "system + tools": sum(r.by_kind["system"] + r.by_kind["tools"]
                                   for r in parent if not r.error)}]
    for i, c in enumerate(children, start=1):
        rows.append({"context": f"child {i} ({c.subagent_type})", "model calls": len(c.records),
                     "peak": c.peak, "input tokens": c.total, "system + tools": c.fixed})
    return rows
