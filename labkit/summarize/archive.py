"""The compaction archive: where it lives, what a section holds, and who owns a section.

Notebook 09. Used by ``labkit.summarize.middleware``; the public names are in ``labkit.summarize``.
A top-level agent archives to ``/conversation_history/<thread>.md``, a run nested in another
agent's tool call (deepagents' ``task``, ``labkit.isolate``) to ``…/<thread>/<agent>-<conversation>.md``.
A section's id is ``<conversation>-<number>``, the conversation an id drawn at random and kept in
state; its ``fold`` names the messages it holds, so only a redo of the same fold replaces it (a
fork or a reused id appends). Messages are written word for word — every string raw, grep finds
it — between markers that carry a random ``nonce`` no message contains, so no text can forge a
boundary; :func:`read_archive` gives the messages back. Writes are serialized per file across
backend objects, and across processes for a ``FilesystemBackend`` (a lock on its folder).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict
from langgraph.config import get_config

from labkit._file_lock import locked as _locked
from labkit._paths import HISTORY_DIR
from labkit.offload import safe_name
from labkit.summarize.policy import message_key

RAW = "$raw"  # a string lifted out of a message's JSON, written raw below it


def conversation_key(messages: Sequence[BaseMessage]) -> str:
    """Twelve hex characters from a history's first message (its id, or its type and text):
    ``labkit.replay`` names the sections of a replayed run with it. The middleware does not: it
    draws a conversation id (:func:`new_conversation`). Notebook 09."""
    if not messages:
        return "empty"
    first = messages[0]
    name = f"id:{first.id}" if first.id else f"{first.type}:{first.text}"
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def new_conversation() -> str:
    """A conversation id, drawn at random: never derived from content or an application's ids,
    which two conversations can share. Notebook 09."""
    return secrets.token_hex(6)


def fold_key(messages: Sequence[BaseMessage]) -> str:
    """Twelve hex characters naming what a compaction folded (ids and contents): a redo folds
    the same messages; a fork that edited one folds others."""
    names = [message_key(m) or f"{m.type}:{m.text}" for m in messages]
    return hashlib.sha256("\x00".join(names).encode("utf-8", "surrogatepass")).hexdigest()[:12]


def section_id(messages: Sequence[BaseMessage], number: int) -> str:
    """The id a replay gives compaction ``number`` of the history ``messages``. Notebook 09."""
    return section_of(conversation_key(messages), number)


def section_of(conversation: str, number: int) -> str:
    """The id of compaction ``number`` of ``conversation``. Notebook 09."""
    return f"{conversation}-{number}"


def archive_path(thread_id: str, agent: str | None = None, conversation: str | None = None) -> str:
    """The top-level agent's archive for a thread, or, with ``agent``, a subagent's own file. Notebook 09."""
    thread = safe_name(thread_id or "default")
    if agent is None:
        return f"{HISTORY_DIR}/{thread}.md"
    return f"{HISTORY_DIR}/{thread}/{safe_name(agent)}-{conversation or 'conversation'}.md"


# -- a section, word for word ----------------------------------------------------------------------


def _lift(value: Any, raws: list[str], key: str) -> Any:
    """``value`` with every string JSON would escape (or longer than a line) moved to ``raws``."""
    if isinstance(value, str):
        if len(value) > 60 or not value.isprintable() or '"' in value or "\\" in value:
            raws.append(value)
            return {key: len(raws) - 1}
        return value
    if isinstance(value, dict):
        return {k: _lift(v, raws, key) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_lift(v, raws, key) for v in value]
    return value


def _drop(value: Any, raws: list[str], key: str) -> Any:
    if isinstance(value, dict):
        if set(value) == {key}:
            return raws[value[key]]
        return {k: _drop(v, raws, key) for k, v in value.items()}
    if isinstance(value, list):
        return [_drop(v, raws, key) for v in value]
    return value


def _empty(value: Any) -> bool:
    """A field the message class fills in again when it is left out (never an artifact's array)."""
    return value is None or isinstance(value, (dict, list)) and not value


def _message(message: BaseMessage, nonce: str) -> str:
    raws: list[str] = []
    whole = message_to_dict(message)  # what is left out below is what the class fills in again
    data = {k: v for k, v in whole["data"].items()
            if k == "content" or k != "type" and not _empty(v)}
    head = json.dumps(_lift({"type": whole["type"], "data": data}, raws, f"{RAW} {nonce}"),
                      ensure_ascii=False, default=repr)
    body = "".join(f'<raw nonce="{nonce}">\n{raw}\n</raw nonce="{nonce}">\n' for raw in raws)
    return f'<message nonce="{nonce}">\n{head}\n{body}</message nonce="{nonce}">\n'


def archive_section(messages: Sequence[BaseMessage], number: int, first: int,
                    when: dt.datetime | None = None, *, section: str, fold: str | None = None,
                    nonce: str | None = None) -> str:
    """One dated section holding the folded messages word for word, tagged with its id. Notebook 09.

    Each message is one line of JSON (langchain's ``message_to_dict``: text, name, status,
    tool calls and their arguments, tool_call_id, artifact, reasoning) with every string that
    JSON would escape lifted out and written raw below it, so grep finds any exact text. The
    ``nonce`` is drawn at random unless given (for reproducible tests)."""
    when = when or dt.datetime.now(dt.timezone.utc)
    fold = fold or fold_key(messages)
    plain = json.dumps([message_to_dict(m) for m in messages], ensure_ascii=False, default=repr)
    while nonce is None or nonce in plain:  # only the markers may carry it (a given one too)
        nonce = secrets.token_hex(8)
    body = "".join(_message(m, nonce) for m in messages)
    last = first + len(messages) - 1
    return (f"## Compaction {number} — {when.isoformat(timespec='seconds')} — messages {first}–{last}\n"
            f'<section id="{section}" fold="{fold}" nonce="{nonce}">\n\n{body}</section nonce="{nonce}">\n\n')


@dataclass(frozen=True)
class Section:
    """One section of an archive as :func:`read_archive` finds it. Notebook 09."""

    id: str
    fold: str
    start: int  # where its heading begins in the file
    end: int | None  # just past its closing marker; None: cut short (an interrupted write)
    messages: list[BaseMessage] = field(default_factory=list, repr=False)


_OPEN = re.compile(r'^<section id="([^"\n]+)" fold="([0-9a-f]+)" nonce="([0-9a-f]{16})">$', re.M)


def read_archive(archive: str) -> list[Section]:
    """Every section of an archive, in order, with its messages exactly as they were folded.

    Read from the top: a section ends only at the closing marker with its own nonce, so text
    inside a message — a pasted archive, forged tags — is never taken for a boundary. Notebook 09."""
    sections, pos = [], 0
    while (m := _OPEN.search(archive, pos)) is not None:
        section, fold, nonce = m.groups()
        heading = archive.rfind("\n", 0, max(m.start() - 1, 0)) + 1
        start = heading if archive.startswith("## Compaction ", heading) else m.start()
        close = f'</section nonce="{nonce}">\n'
        end = archive.find(close, m.end())
        if end < 0:  # cut short: keep looking after its tag
            sections.append(Section(section, fold, start, None))
            pos = m.end()
            continue
        pos = end + len(close)
        sections.append(Section(section, fold, start, pos + archive.startswith("\n", pos),
                                _messages(archive[m.end():end], nonce)))
    return sections


def _messages(body: str, nonce: str) -> list[BaseMessage]:
    opening, closing = f'<message nonce="{nonce}">\n', f'</message nonce="{nonce}">\n'
    raw_open, raw_close = f'<raw nonce="{nonce}">\n', f'\n</raw nonce="{nonce}">\n'
    found, pos = [], body.find(opening)
    while pos >= 0:
        head_end = body.index("\n", pos + len(opening))
        head, raws, at = body[pos + len(opening):head_end], [], head_end + 1
        while body.startswith(raw_open, at):
            stop = body.index(raw_close, at + len(raw_open))
            raws.append(body[at + len(raw_open):stop])
            at = stop + len(raw_close)
        found.append(messages_from_dict([_drop(json.loads(head), raws, f"{RAW} {nonce}")])[0])
        pos = body.find(opening, body.index(closing, at) + len(closing))
    return found


def with_section(archive: str, section: str, text: str, fold: str | None = None,
                 sections: Sequence[Section] | None = None) -> str | None:
    """``archive`` with ``text`` in place of section ``section`` when that section holds the same
    ``fold`` (a redo), or appended when there is none; ``None`` when another fold holds the id (a
    fork, or a conversation id reused). Nothing else in the file is touched. ``sections``: the
    archive already read (:func:`read_archive`), or read here. Notebook 09."""
    for found in read_archive(archive) if sections is None else sections:
        if found.id != section or found.end is None:
            continue  # a section cut short is kept as it is, and its redo appended
        if fold is not None and found.fold != fold:
            return None
        return archive[:found.start] + text + archive[found.end:]
    return archive + text


TAKEN = "taken"
""":func:`write_section`'s answer when another fold holds the section id: draw a new conversation."""
def write_section(backend: Any, path: str, section: str, text: str, fold: str | None = None,
                  restore: Callable[[set[str]], str] | None = None) -> Any:
    """Put ``text`` in the archive at ``path`` as section ``section``: ``None``, the error,
    or :data:`TAKEN`. An archive that cannot be read is never overwritten; writers of one file
    never interleave their read and write — in this process whatever backend object they hold,
    and across processes on a ``FilesystemBackend``; a write another writer undid is reported
    (re-read after writing). ``restore`` is given the ids of the sections the file holds and
    returns any to add back first. Notebook 09."""
    try:
        with _locked(backend, path):
            return _write_section(backend, path, section, text, fold, restore)
    except OSError as e:  # the folder cannot be made or locked (a file in its place, read-only)
        return e


def _write_section(backend: Any, path: str, section: str, text: str, fold: str | None,
                   restore: Callable[[set[str]], str] | None) -> Any:
    try:
        found = backend.download_files([path])[0]
        if found.error not in (None, "file_not_found"):
            return found.error
        old = found.content.decode("utf-8") if found.content else ""
        sections = read_archive(old)  # read once: what restore appends moves none of them
        if restore is not None:
            old += restore({s.id for s in sections})
        new = with_section(old, section, text, fold, sections)
        if new is None:
            return TAKEN
        error = getattr(backend.write(path, new), "error", None)
        if error:
            return error
        check = backend.download_files([path])[0]
        if check.content is not None and text not in check.content.decode("utf-8"):
            return "the section was overwritten by another writer right after it was written"
        return None
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
