"""A checkpointer that keeps only the latest value of each plain channel, so a long run's memory
stays linear in its length.

Used by: ``labkit.scenario.harness`` (every agent ``scenario.agent`` builds). langgraph's
``InMemorySaver`` keeps every version of every channel: each model call stores the whole
message list again, so memory grows with the square of a run's length (~450 MB at 200 model
calls, ~3.6 GB at 800). A scenario run resumes only from its latest checkpoint, so when a plain
channel (its value stored whole, such as ``messages``) gets a new version, the older ones are
dropped. Checkpoints and pending writes are all kept: delta channels (deepagents' ``files``) are
rebuilt from the writes along the chain of checkpoints, and both grow linearly.

What it leaves out: the older states of ``get_state_history`` (their plain channels are gone).
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

__all__ = ["LatestSaver"]


class LatestSaver(InMemorySaver):
    """``InMemorySaver`` that keeps one version of each plain channel per thread: the latest."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._latest: dict[tuple, Any] = {}  # (thread, ns, channel) -> the version kept

    def put(self, config, checkpoint, metadata, new_versions) -> Any:
        saved = super().put(config, checkpoint, metadata, new_versions)
        thread, ns = saved["configurable"]["thread_id"], saved["configurable"]["checkpoint_ns"]
        for channel, version in new_versions.items():
            if channel in checkpoint["channel_values"]:  # a delta channel's value is not here
                old = self._latest.get((thread, ns, channel))
                if old is not None and old != version:
                    self.blobs.pop((thread, ns, channel, old), None)
                self._latest[(thread, ns, channel)] = version
        return saved
