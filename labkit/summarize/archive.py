"""The compaction archive: where it lives, what a section looks like, and who owns a section.

Notebook 09. Used by ``labkit.summarize.middleware``; the public names are in ``labkit.summarize``.
A top-level agent archives to ``/conversation_history/<thread>.md``; a run nested in another
agent's tool call (deepagents' ``task``, ``labkit.isolate``; also an agent used as a node of a
graph of yours) to ``/conversation_history/<thread>/<agent name>-<conversation>.md``. A section's
id is ``<conversation>-<number>`` (a hash of the conversation's first message id): a compaction
redone after a failed call replaces only its own section; anything else is appended. Messages are
escaped XML, so only the raw ``<section>`` tags — not the ``## Compaction`` headings, which are
for people — mark where a section begins and ends. What it leaves out: langchain's XML rendering
drops a tool result's ``tool_call_id`` and artifact, invalid tool calls and base64 media; writes
are serialized within one process, not across processes sharing a backend.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import threading
from collections.abc import Mapping, Sequence
from typing import Any
from xml.sax.saxutils import quoteattr

from langchain_core.messages import BaseMessage, get_buffer_string
from langgraph.config import get_config

from labkit._paths import HISTORY_DIR
from labkit.offload import safe_name

_CLOSE = "\n</section>\n"


def conversation_key(messages: Sequence[BaseMessage]) -> str:
    """Twelve hex characters naming a conversation: a hash of its first message's id (langgraph
    gives every message in state one), or of its type and text when it has none. Notebook 09."""
    if not messages:
        return "empty"
    first = messages[0]
    name = f"id:{first.id}" if first.id else f"{first.type}:{first.text}"
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def section_id(messages: Sequence[BaseMessage], number: int) -> str:
    """The id of compaction ``number`` of the conversation whose state is ``messages``. Notebook 09."""
    return section_of(conversation_key(messages), number)


def section_of(conversation: str, number: int) -> str:
    """The id of compaction ``number`` of ``conversation`` (a :func:`conversation_key`). Notebook 09."""
    return f"{conversation}-{number}"


def archive_path(thread_id: str, agent: str | None = None, conversation: str | None = None) -> str:
    """The top-level agent's archive for a thread, or, with ``agent``, a subagent's own file. Notebook 09."""
    thread = safe_name(thread_id or "default")
    if agent is None:
        return f"{HISTORY_DIR}/{thread}.md"
    return f"{HISTORY_DIR}/{thread}/{safe_name(agent)}-{conversation or 'conversation'}.md"


def archive_section(messages: Sequence[BaseMessage], number: int, first: int,
                    when: dt.datetime | None = None, *, section: str) -> str:
    """One dated section holding the folded messages (rendered as XML), tagged with its id. Notebook 09."""
    when = when or dt.datetime.now(dt.timezone.utc)
    last = first + len(messages) - 1
    return (f"## Compaction {number} — {when.isoformat(timespec='seconds')} — messages "
            f"{first}–{last}\n<section id={quoteattr(section)}>\n\n"
            f"{get_buffer_string(list(messages), format='xml')}\n{_CLOSE}\n")


def with_section(archive: str, section: str, text: str) -> str:
    """``archive`` with ``text`` in place of the section whose id is ``section``, or appended
    when there is none. Nothing else in the file is touched. Notebook 09."""
    tag = f"\n<section id={quoteattr(section)}>\n"
    at = archive.find(tag)
    if at < 0:
        return archive + text
    start = archive.rfind("\n", 0, at) + 1  # the section's heading line
    end = archive.find(_CLOSE, at)
    after = archive.find("\n<section id=", at + len(tag))
    if end < 0 or 0 <= after < end:  # this section was cut short: keep what is there, append anew
        return archive + text
    end += len(_CLOSE)
    end += archive.startswith("\n", end)
    return archive[:start] + text + archive[end:]


_LOCKS: dict[tuple[int, str], threading.Lock] = {}  # one per (backend, path): read, edit, write as one
_LOCKS_GUARD = threading.Lock()


def write_section(backend: Any, path: str, section: str, text: str) -> Any:
    """Put ``text`` in the archive at ``path`` as section ``section``; ``None``, or the error. An
    archive that exists but cannot be read is never overwritten; two writers in this process
    never interleave their read and write. Notebook 09."""
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault((id(backend), path), threading.Lock())
    with lock:
        return _write_section(backend, path, section, text)


def _write_section(backend: Any, path: str, section: str, text: str) -> Any:
    try:
        found = backend.download_files([path])[0]
        if found.error not in (None, "file_not_found"):
            return found.error
        old = found.content.decode("utf-8") if found.content else ""
        return getattr(backend.write(path, with_section(old, section, text)), "error", None)
    except Exception as e:  # the run goes on; the summary just cannot point to an archive
        return e


def archive_owner() -> tuple[str, str | None]:
    """Whose archive this is: ``(thread id, None)`` for the top-level agent, ``(thread id, agent
    name)`` inside a subagent — a run nested in a tool call of another agent, as deepagents'
    ``task`` and ``labkit.isolate`` start them (they share the parent's thread id). Notebook 09."""
    try:
        config = get_config()
    except RuntimeError:
        return "default", None
    configurable = config.get("configurable", {})
    thread = str(configurable.get("thread_id") or "default")
    if "|" not in str(configurable.get("checkpoint_ns") or ""):
        return thread, None
    return thread, str(config.get("metadata", {}).get("lc_agent_name") or "subagent")


def state_messages(request: Any) -> list[BaseMessage]:
    """The messages as the agent's state holds them (an outer middleware may have changed the
    request's copies, e.g. offload shortening old write_file arguments). Notebook 11."""
    state = getattr(request, "state", None)
    return list(state.get("messages") or []) if isinstance(state, Mapping) else []


def as_stored(folded: Sequence[BaseMessage], messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Each folded message replaced by the stored message with the same id, where there is one:
    the archive keeps every word the agent has, whatever the request showed. Notebook 11."""
    by_id = {m.id: m for m in messages if m.id}
    return [by_id.get(m.id, m) if m.id else m for m in folded]
