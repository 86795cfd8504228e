"""Writing an offloaded file so that nothing is ever lost: never over other content, never blind.

Used by: labkit.offload (``OffloadMiddleware`` writes every evicted result and human message
through :func:`write_free`). A stub in the context points at a path; if that path were later
overwritten, or written where the backend could not say what was there, the stub would point at
the wrong text. So a taken path gets a free sibling (``<path>.2``, ``.3`` …), and any doubt keeps
the content in the context, with a warning. Each name's check and write hold its file's lock
(``labkit._file_lock``): two runs offloading to one folder at once — threads, or processes on a
``FilesystemBackend`` — never pick the same free name.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Any

from labkit._file_lock import locked

__all__ = ["write_free"]


def write_free(backend: Any, path: str, text: str) -> tuple[str | None, bool]:
    """Write ``text`` at ``path`` (or a free variant of it) through a deepagents backend.

    Returns ``(path written, newly written)``: a file already holding the same text is reused
    (``False``); ``(None, False)`` after a warning when the backend failed, could not say
    whether a file exists, or no free name was left.
    """
    for candidate in itertools.chain([path], (f"{path}.{k}" for k in range(2, 100))):  # made as needed
        try:
            with locked(backend, candidate):
                written = _try(backend, candidate, text)
        except OSError as e:  # the folder cannot be made or locked
            written = e
        if written is not _TAKEN:
            if isinstance(written, Exception):
                why = (f"could not check whether {candidate} exists ({written.args[0]})" if isinstance(
                    written, LookupError) else f"could not write {candidate} ({written})")
                warnings.warn(f"labkit offload: {why}; the content stays in the context, nothing is lost",
                              stacklevel=4)
                return None, False
            return written
    warnings.warn(f"labkit offload: no free file name next to {path}; content kept in context",
                  stacklevel=4)
    return None, False


_TAKEN = object()  # another text holds the name


def _try(backend: Any, candidate: str, text: str) -> Any:
    """``(candidate, new)`` when ``text`` is there now, :data:`_TAKEN`, or the error to warn of."""
    try:
        existing = backend.download_files([candidate])[0]
        if existing.error == "is_directory":
            return _TAKEN
        unknown = existing.error if existing.error not in (None, "file_not_found") else None
    except Exception as e:
        existing, unknown = None, e
    if unknown:  # never write blind: an earlier stub may still point there
        return LookupError(unknown)
    if existing.error is None and existing.content is not None:
        return (candidate, False) if existing.content.decode("utf-8", "replace") == text else _TAKEN
    try:
        result = backend.write(candidate, text)
    except Exception as e:
        result = e
    error = result if isinstance(result, Exception) else getattr(result, "error", None)
    return RuntimeError(str(error)) if error else (candidate, True)
