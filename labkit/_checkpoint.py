"""A checkpointer whose cost per step does not grow with the thread: the harness's ``SharedSaver``.

Used by: ``labkit.scenario.harness`` (every agent ``scenario.agent`` builds). langgraph's
``InMemorySaver`` keeps every version of every channel, serialized: each step stores the whole
message list again (memory grows with the square of a run's length: ~450 MB at 200 model calls)
and each load deserializes it again, so every message is a new object and every identity cache
downstream misses. This one keeps every version too — ``get_state_history``, replay and forks
answer as ``InMemorySaver``'s do — but as the objects the graph produced (a caller gets its own
list or dict of them; a message changed in place changes every checkpoint that holds it, so nothing
may do that): a list that extends the one before shares one list with it (a *spine*), each version
reading its prefix. A delta channel's history (deepagents' ``files``) is answered from each
checkpoint's answer.
"""

from __future__ import annotations

from operator import is_
from typing import Any

from langgraph.checkpoint.base import get_checkpoint_id, get_checkpoint_metadata
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.types import _DeltaSnapshot

__all__ = ["SharedSaver"]

LIVE = "labkit.live"  # a blob holding the value itself, not its bytes
PREFIX = "labkit.prefix"  # a blob holding (spine, n): the first n items of the spine's list


class _Spine:
    """The newest list of a run of versions each extending the one before (a message list)."""

    __slots__ = ("items",)

    def __init__(self, items: list) -> None:
        self.items = items


class SharedSaver(InMemorySaver):
    """``InMemorySaver`` that keeps every version of each plain channel as the very object stored,
    a list sharing the newer list it is a prefix of; a step's cost is what is new in it, not the
    thread's length, and its memory grows with what is new too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._spines: dict[tuple, _Spine] = {}  # (thread, ns, channel) -> the channel's newest run
        self._history: dict[tuple, tuple] = {}  # (thread, ns, checkpoint, channel) -> see below
        self._newest: dict[tuple, tuple[str, int]] = {}  # (thread, ns) -> (newest id, checkpoints then)

    def put(self, config, checkpoint, metadata, new_versions) -> Any:
        thread, ns = config["configurable"]["thread_id"], config["configurable"]["checkpoint_ns"]
        values = checkpoint["channel_values"]
        for channel, version in new_versions.items():
            value = values.get(channel, None)
            if channel not in values:
                self.blobs[(thread, ns, channel, version)] = ("empty", b"")
            elif isinstance(value, _DeltaSnapshot):  # a delta channel's snapshot: as langgraph stores it
                self.blobs[(thread, ns, channel, version)] = self.serde.dumps_typed(value)
            elif type(value) is list:
                spine = self._spine(thread, ns, channel, value)
                self.blobs[(thread, ns, channel, version)] = (PREFIX, (spine, len(value)))
            else:
                self.blobs[(thread, ns, channel, version)] = (LIVE, value)
        stored = {k: v for k, v in checkpoint.items() if k != "channel_values"}
        checkpoints, newest = self.storage[thread][ns], self._newest_id(thread, ns)
        checkpoints[checkpoint["id"]] = (
            self.serde.dumps_typed(stored), self.serde.dumps_typed(get_checkpoint_metadata(config, metadata)),
            config["configurable"].get("checkpoint_id"))
        self._newest[(thread, ns)] = (max(newest or "", checkpoint["id"]), len(checkpoints))
        return {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}

    def _newest_id(self, thread: str, ns: str) -> str | None:
        """The thread's newest checkpoint id (the greatest, as ``InMemorySaver`` finds it with
        ``max`` over every checkpoint on each load), remembered from :meth:`put`: looked for again
        only when the thread's checkpoints changed otherwise (their number, or the id gone)."""
        checkpoints = self.storage.get(thread, {}).get(ns)
        if not checkpoints:
            return None
        newest, size = self._newest.get((thread, ns), (None, -1))
        if size != len(checkpoints) or newest not in checkpoints:
            newest = max(checkpoints)
            self._newest[(thread, ns)] = (newest, len(checkpoints))
        return newest

    def get_tuple(self, config):
        """``InMemorySaver``'s answer; the newest checkpoint, when none is named, found without
        looking at every checkpoint of the thread."""
        if get_checkpoint_id(config):
            return super().get_tuple(config)
        thread = config["configurable"]["thread_id"]
        ns = config["configurable"].get("checkpoint_ns", "")
        newest = self._newest_id(thread, ns)
        return None if newest is None else super().get_tuple(
            {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": newest}})

    def _spine(self, thread: str, ns: str, channel: str, value: list) -> _Spine:
        """The spine ``value`` extends (it becomes its list), or a new one."""
        spine = self._spines.get((thread, ns, channel))
        if spine is not None and len(value) >= len(spine.items) and all(map(is_, value, spine.items)):
            spine.items = value
        else:
            spine = self._spines[(thread, ns, channel)] = _Spine(value)
        return spine

    def _value(self, blob: tuple) -> Any:
        """A stored version's value: the object itself (a list, dict or set copied: a caller that
        inserts or pops must not rewrite the thread), a copy of its spine's prefix, or deserialized."""
        if blob[0] == LIVE:
            value = blob[1]
            return value.copy() if isinstance(value, (list, dict, set)) else value
        if blob[0] == PREFIX:
            spine, n = blob[1]
            return spine.items[:n]
        return self.serde.loads_typed(blob)

    def _load_blobs(self, thread_id: str, checkpoint_ns: str, versions) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for channel, version in versions.items():
            blob = self.blobs.get((thread_id, checkpoint_ns, channel, version))
            if blob is None or blob[0] == "empty":
                continue
            result[channel] = self._value(blob)
        return result

    def get_delta_channel_history(self, *, config, channels):
        """langgraph's answer — the nearest ancestor's snapshot of each delta channel and the
        writes since — from each checkpoint's answer remembered, so a step reads only its parent."""
        thread = config["configurable"]["thread_id"]
        ns = config["configurable"].get("checkpoint_ns", "")
        stored = self.storage.get(thread, {}).get(ns, {})
        target = get_checkpoint_id(config) or self._newest_id(thread, ns) or ""
        result = {}
        for channel in channels:
            seed, writes = self._history_of(thread, ns, stored, target, channel)
            result[channel] = {"writes": list(writes), **({} if seed is _NONE else {"seed": seed})}
        return result

    def _history_of(self, thread: str, ns: str, stored: dict, checkpoint: str, channel: str) -> tuple:
        """``(seed, writes)`` for the state at ``checkpoint``: walks up only to the nearest
        ancestor already answered, then answers each checkpoint on the way down."""
        path, current = [], checkpoint
        while current in stored and (thread, ns, current, channel) not in self._history:
            path.append(current)
            current = stored[current][2]
        answer = self._history.get((thread, ns, current, channel), (_NONE, ()))
        for cp in reversed(path):
            parent = stored[cp][2]
            if parent is None or parent not in stored:
                answer = (_NONE, ())
            else:
                answer = self._step(thread, ns, stored, parent, channel, answer)
            self._history[(thread, ns, cp, channel)] = answer
        return answer

    def _step(self, thread, ns, stored, parent, channel, above) -> tuple:
        """The answer for a child of ``parent``, given ``parent``'s own answer (``above``)."""
        version = self.serde.loads_typed(stored[parent][0]).get("channel_versions", {}).get(channel)
        blob = self.blobs.get((thread, ns, channel, version)) if version is not None else None
        writes = tuple((tid, ch, self.serde.loads_typed(value)) for tid, ch, value, _
                       in self._ordered_writes(thread, ns, parent) if ch == channel)
        if blob is not None and blob[0] != "empty":
            return self._value(blob), writes
        return above[0], above[1] + writes

    def delete_thread(self, thread_id: str) -> None:
        super().delete_thread(thread_id)
        for memo in (self._spines, self._history, self._newest):
            for key in [k for k in memo if k[0] == thread_id]:
                del memo[key]


_NONE = object()  # no snapshot found up the chain
