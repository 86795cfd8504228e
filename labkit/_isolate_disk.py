"""Children that write through a backend outside state (a folder on disk, a store).

Used by: labkit.isolate (notebook 12).

With ``StateBackend`` a child's writes come back as a ``files`` update, and ``_isolate_files``
settles two children that changed one path differently. A ``FilesystemBackend`` or a store takes
each write at once: the last child to write wins, and every child hears "Updated file". Here each
child writes through its own copy of the backend — the same class, so deepagents' checks still
see a ``FilesystemBackend`` — that notes the text of each file it wrote; the parent then settles
those notes as it settles state files, and puts the first child's version back where a later one
overwrote it, the later version at its saved path.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from deepagents.backends import StateBackend
from deepagents.backends.utils import create_file_data

__all__ = ["recording", "restore_claims"]


def _through_state(backend: Any) -> bool:
    """Whether all of a backend's writes come back through state (or it is a factory deepagents
    calls); a ``CompositeBackend`` with a folder routed to a disk or a store is recorded, that
    folder's writes noted (:func:`_outside`)."""
    return backend is None or isinstance(backend, StateBackend) or callable(backend) or (
        hasattr(backend, "default") and hasattr(backend, "routes")
        and all(_through_state(b) for b in [backend.default, *backend.routes.values()]))


def _outside(backend: Any, path: str) -> bool:
    """Whether a write to ``path`` goes outside state (a composite's route to a disk or a store)."""
    route = getattr(backend, "_get_backend_and_key", None)
    try:
        return not callable(route) or not _through_state(route(path)[0])
    except Exception:  # noqa: BLE001 - a path it refuses is refused by the write too
        return True


def recording(backend: Any) -> tuple[Any, dict[str, str] | None]:
    """A copy of ``backend`` that notes the text of every file written or edited through it, and
    those notes (``path -> text``); ``(backend, None)`` for a backend whose writes go to state."""
    if _through_state(backend):
        return backend, None
    wrote: dict[str, str] = {}
    cls = type(backend)

    def note(self: Any, path: str, result: Any, text: str | None = None) -> Any:
        if getattr(result, "error", None) is None and _outside(self, path):
            if text is None:  # an edit: read back what the file holds now
                found = cls.download_files(self, [path])[0]
                text = None if found.content is None else found.content.decode("utf-8", "replace")
            if text is not None:
                wrote[path] = text
        return result

    def write(self, path, content):
        return note(self, path, cls.write(self, path, content), content)

    async def awrite(self, path, content):
        return note(self, path, await cls.awrite(self, path, content), content)

    def edit(self, path, *args, **kwargs):
        return note(self, path, cls.edit(self, path, *args, **kwargs))

    async def aedit(self, path, *args, **kwargs):
        return note(self, path, await cls.aedit(self, path, *args, **kwargs))

    def gone(self: Any, path: str, result: Any) -> Any:  # a deletion is a change too (None: deleted)
        if getattr(result, "error", None) is None and _outside(self, path):
            wrote[path] = None
        return result

    def delete(self, path):
        return gone(self, path, cls.delete(self, path))

    async def adelete(self, path):
        return gone(self, path, await cls.adelete(self, path))

    mine = copy.copy(backend)
    mine.__class__ = type(f"Recording{cls.__name__}", (cls,), {
        "write": write, "awrite": awrite, "edit": edit, "aedit": aedit, "delete": delete, "adelete": adelete})
    return mine, wrote


def as_files(wrote: Mapping[str, str]) -> dict[str, Any]:
    """The notes as deepagents file data, to settle like files in state (``None``: deleted)."""
    return {path: None if text is None else create_file_data(text) for path, text in wrote.items()}


def restore_claims(backend: Any, conflicts: list, texts: Mapping[str, str], update: dict[str, Any],
                   wrote: Mapping[str, str]) -> None:
    """On the backend, the first child's version back at each contested path (a later child may
    have overwritten it) and the later version at its saved path; those paths leave ``update``
    (they are not files in state). ``texts``: digest -> text of every version noted in the block."""
    for conflict in conflicts:
        if conflict.path not in wrote:
            continue
        first = texts.get(conflict.first.digest)
        if first is not None:
            backend.write(conflict.path, first)
        elif conflict.first.digest is None and conflict.first.tool == "task":  # a child deleted it first
            backend.delete(conflict.path)
        if conflict.saved is not None:
            backend.write(conflict.saved, wrote[conflict.path])
            update.pop(conflict.saved, None)
    for path in wrote:
        update.pop(path, None)
