"""Used by: ``labkit.model.chat``, ``labkit.model.behaviour`` and the other private helpers.

How the lab model reads its context: the messages pre-read once (a :class:`View`: the whole
context as plain text plus the tool calls that got an answer), the paths and KPI lines it
quotes, a summary prompt (labkit's or deepagents', by their four section names), a summary's
sections, and the task the user asked for. Notebook 01 introduces the lab model.

What it leaves out: deciding what to do with what it reads — that is ``behaviour.act``.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from labkit import prompts
from labkit import scenario as sc
from labkit.tokens import message_text

__all__ = ["KPI", "PATHS", "View", "active_task", "is_summary_prompt", "plain", "read_view"]

# a path ends at a backslash too: in a tool call's JSON arguments the text after it is an escape
# ("….md\\n\\nRead"), and a path read with it grew by one escaping on every call
PATHS = re.compile(r"(/(?:large_tool_results|conversation_history|reports|research)/[^\s'\"<>`),;\\]+)")
KPI = re.compile(r"kpi,([A-Z]{4}),(\w+),([\d.]+%?)")


@dataclass
class View:
    """The model's context, pre-read: all text, and the answered tool calls. Notebook 01."""

    messages: list[BaseMessage]
    text: str
    answered: dict[str, tuple[dict, str]] = field(default_factory=dict)  # id -> (call, result)


def plain(message: BaseMessage) -> str:
    """A message's text as the lab model reads it (HTML entities unescaped). Notebook 01."""
    return html.unescape(message_text(message))


def read_view(messages: list[BaseMessage]) -> View:
    """Read the messages once: their text, and each answered call with its result. Notebook 01."""
    calls = {tc["id"]: tc for m in messages if isinstance(m, AIMessage) for tc in m.tool_calls}
    answered = {
        m.tool_call_id: (calls[m.tool_call_id], plain(m))
        for m in messages
        if isinstance(m, ToolMessage) and m.tool_call_id in calls
    }
    return View(messages, "\n".join(plain(m) for m in messages), answered)


def _section(text: str, name: str) -> str:
    m = re.search(rf"##\s*{name}\s*\n(.*?)(?=\n##\s*[A-Z][A-Z ]+\n|</summary>|\Z)", text, re.S)
    return m.group(1).strip() if m else ""


def is_summary_prompt(text: str) -> bool:
    """Is this a request to summarize (labkit's or deepagents' prompt)? Notebook 07."""
    return all(s in text for s in prompts.SUMMARY_SECTIONS) and (
        "<messages>" in text or "Context Extraction Assistant" in text
    )


def active_task(view: View) -> sc.Task | None:
    """The latest thing the user asked for that is still visible: a human message naming a task,
    or the last task in a summary's SESSION INTENT. Notebook 01."""
    for m in reversed(view.messages):
        if m.type not in ("human", "system"):
            continue
        text = plain(m)
        intent = _section(text, "SESSION INTENT")
        if intent:
            found = [(intent.rfind(t.marker), t) for t in sc.tasks() if t.marker in intent]
            if found:
                return max(found, key=lambda p: p[0])[1]
        for task in sc.tasks():
            if task.marker in text and not intent:
                return task
    return None
