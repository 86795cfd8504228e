"""A message's content, hashed once per message object. Used by: labkit.caching (a prompt cache's
blocks) and labkit.summarize.policy (a compaction's boundary and fold, found by identity)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

_KNOWN: dict[int, tuple[Any, str]] = {}  # id(message) -> (message, digest): a sent message is not edited


def message_digest(message: Any) -> str:
    """Sixteen hex characters for everything a provider would render of ``message``: its type,
    content, tool calls (names, arguments, ids), tool_call_id and name. The same object asked
    again (every call re-sends the same messages) is not hashed again."""
    known = _KNOWN.get(id(message))
    if known is not None and known[0] is message:
        return known[1]
    body = json.dumps([getattr(message, "type", None), getattr(message, "content", None),
                       [[c.get("name"), c.get("args"), c.get("id")]
                        for c in getattr(message, "tool_calls", None) or ()],
                       getattr(message, "tool_call_id", None), getattr(message, "name", None)],
                      sort_keys=True, default=repr, ensure_ascii=False)
    digest = hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    if len(_KNOWN) > 8192:  # a long session: start again rather than grow without end
        _KNOWN.clear()
    _KNOWN[id(message)] = (message, digest)
    return digest
