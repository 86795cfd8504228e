"""The files of isolated children: what one child changed, and who changed a path first.

Used by: labkit.isolate (notebook 12).

Children of one parallel block (the ``task`` calls of one parent AI message) each start from the
same copy of the parent's files. deepagents' files reducer would merge their changes with the last
one winning; here the first child to finish claims each path it changed, and a later child with a
different version of a claimed path gets that version saved at a fresh sibling path instead.
Content decides: the same text written twice is no change, and no conflict.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from labkit.prompts import CONFLICT_DELETED, CONFLICT_REPLY, CONFLICT_SAVED, FILE_CONFLICT

__all__ = ["Claim", "Conflict", "conflict_reply", "digest", "file_updates", "fresh_path", "locate",
           "own_claims", "settle"]
FILE_TOOLS = ("write_file", "edit_file", "delete")  # deepagents' tools that change a file


@dataclass(frozen=True)
class Claim:
    """Which call of a block changed a path first, and to what (``None``: it deleted it): a
    ``task`` child, or one of the parent's own tools (``tool``, e.g. ``write_file``)."""

    tool_call_id: str
    subagent_type: str | None
    digest: str | None
    tool: str = "task"

    @property
    def who(self) -> str:
        if self.tool == "task":
            return f"The {self.subagent_type!r} subagent (task call {self.tool_call_id})"
        return f"The parent's own {self.tool} call ({self.tool_call_id})"


@dataclass(frozen=True)
class Conflict:
    """A path a later child changed differently: ``first`` keeps it; this child's version went to
    ``saved`` (``None`` when this child deleted the path: the deletion is not applied)."""

    path: str
    first: Claim
    saved: str | None


def locate(messages: Sequence[BaseMessage], tool_call_id: str) -> tuple[tuple[int, int], tuple]:
    """Where a task call sits: its order (parent message index, position among its tool calls)
    and its parallel block — the AI message that made it, by id and tool call ids."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, AIMessage):
            for j, tc in enumerate(m.tool_calls):
                if tc["id"] == tool_call_id:
                    return (i, j), (m.id, tuple(t["id"] for t in m.tool_calls))
    return (len(messages), 0), (None, (tool_call_id,))


def own_claims(messages: Sequence[BaseMessage], tool_call_id: str) -> dict[str, Claim]:
    """The paths the parent's own file tools change in the block of ``tool_call_id``, claimed
    before any child finishes: deepagents' state backend applies those writes by itself, so a
    child that changes the same path differently is the later one, whatever the timing. (The
    text a ``write_file`` writes is known; an edit's or a deletion's outcome is compared as is.)"""
    ai = next((m for m in reversed(messages) if isinstance(m, AIMessage)
               and any(tc["id"] == tool_call_id for tc in m.tool_calls)), None)
    claims = {}
    for tc in ai.tool_calls if ai is not None else ():
        path = (tc.get("args") or {}).get("file_path")
        if tc["name"] not in FILE_TOOLS or not isinstance(path, str):
            continue
        made = (digest({"content": tc["args"].get("content"), "encoding": "utf-8"})
                if tc["name"] == "write_file" else None if tc["name"] == "delete" else f"edit:{tc['id']}")
        claims.setdefault(path, Claim(tc["id"], None, made, tc["name"]))
    return claims


def _content(data: Any) -> Any:
    """What a file holds, without its timestamps (deepagents' ``FileData``; legacy list content
    is joined as deepagents joins it)."""
    if not isinstance(data, Mapping):
        return data
    content = data.get("content")
    if isinstance(content, list):
        content = "\n".join(map(str, content))
    return content, data.get("encoding", "utf-8")


def digest(data: Any) -> str | None:
    """A file's content, hashed (``None`` for a deletion): what "the same version" means."""
    if data is None:
        return None
    return hashlib.sha256(repr(_content(data)).encode("utf-8", "surrogatepass")).hexdigest()


def file_updates(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """What the child changed in the files: new entries, entries whose content changed (a rewrite
    with the same text is not a change), and ``None`` for a deletion (deepagents' files reducer
    reads ``None`` as "delete")."""
    changed = {p: d for p, d in after.items()
               if p not in before or (before[p] != d and _content(before[p]) != _content(d))}
    changed.update({p: None for p in before if p not in after})
    return changed


def fresh_path(path: str, tool_call_id: str, taken: Iterable[str]) -> str:
    """A sibling of ``path`` named after the tool call, ``/a.md.<id>``, that is not in ``taken``
    (``/a.md.<id>.2``, ``.3``… otherwise)."""
    taken = set(taken)
    base = f"{path}.{re.sub(r'[^A-Za-z0-9_-]+', '_', tool_call_id).strip('_')[:64] or 'task'}"
    candidate, k = base, 1
    while candidate in taken:
        k += 1
        candidate = f"{base}.{k}"
    return candidate


def settle(claims: MutableMapping[str, Claim], changed: Mapping[str, Any], tool_call_id: str,
           subagent_type: str | None, existing: Iterable[str],
           tool: str = "task") -> tuple[dict[str, Any], list[Conflict]]:
    """Fold one finished child's ``changed`` files into its block's ``claims`` (updated in place:
    the caller holds the lock) and return the ``files`` update for the parent and the conflicts.

    A path nobody in the block claimed, or claimed with the same content, is this child's. A path
    another child claimed with other content stays theirs: this child's version is saved at a
    :func:`fresh_path` — never one in ``existing`` (the parent's files), claimed, or changed — and
    claimed in its turn. A child that runs again under the same tool call id (a resumed run)
    replaces its own earlier claims instead of conflicting with them.
    """
    for path in [p for p, c in claims.items() if c.tool_call_id == tool_call_id]:
        del claims[path]
    existing = set(existing)
    update: dict[str, Any] = {}
    later: list[tuple[str, Claim, Any]] = []
    for path, data in changed.items():
        mine, first = Claim(tool_call_id, subagent_type, digest(data), tool), claims.get(path)
        if first is None or first.digest == mine.digest:
            claims.setdefault(path, mine)
            update[path] = data
        else:
            later.append((path, first, data))
    conflicts = []
    for path, first, data in later:
        saved = None
        if data is not None:
            saved = fresh_path(path, tool_call_id, {*existing, *claims, *changed})
            claims[saved] = Claim(tool_call_id, subagent_type, digest(data), tool)
            update[saved] = data
        conflicts.append(Conflict(path, first, saved))
    return update, conflicts


def conflict_reply(reply: str, conflicts: Sequence[Conflict], this: Claim) -> str:
    """The later call's answer: one ``FILE_CONFLICT`` note per path, then its whole reply."""
    notes = "\n".join(FILE_CONFLICT.format(
        path=c.path, first=c.first.who, this=this.who,
        outcome=CONFLICT_SAVED.format(saved=c.saved) if c.saved else CONFLICT_DELETED)
        for c in conflicts)
    return CONFLICT_REPLY.format(conflicts=notes, who=this.who, reply=reply)
