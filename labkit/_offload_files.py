"""Writing an offloaded file so that nothing is ever lost: never over other content, never blind.

Used by: labkit.offload (``OffloadMiddleware`` writes every evicted result and human message
through :func:`write_free`). A stub in the context points at a path; if that path were later
overwritten, or written where the backend could not say what was there, the stub would point at
the wrong text. So a taken path gets a free sibling (``<path>.2``, ``.3`` …), and any doubt keeps
the content in the context, with a warning.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Any

__all__ = ["write_free"]


def write_free(backend: Any, path: str, text: str) -> tuple[str | None, bool]:
    """Write ``text`` at ``path`` (or a free variant of it) through a deepagents backend.

    Returns ``(path written, newly written)``: a file already holding the same text is reused
    (``False``); ``(None, False)`` after a warning when the backend failed, could not say
    whether a file exists, or no free name was left.
    """
    for candidate in itertools.chain([path], (f"{path}.{k}" for k in range(2, 100))):  # made as needed
        try:
            existing = backend.download_files([candidate])[0]
            if existing.error == "is_directory":
                continue
            unknown = existing.error if existing.error not in (None, "file_not_found") else None
        except Exception as e:
            existing, unknown = None, e
        if unknown:  # never write blind: an earlier stub may still point there
            warnings.warn(f"labkit offload: could not check whether {candidate} exists "
                          f"({unknown}); the content stays in the context, nothing is lost",
                          stacklevel=4)
            return None, False
        if existing.error is None and existing.content is not None:
            if existing.content.decode("utf-8", "replace") == text:
                return candidate, False  # already there, same bytes
            continue
        try:
            result = backend.write(candidate, text)
        except Exception as e:
            result = e
        error = result if isinstance(result, Exception) else getattr(result, "error", None)
        if error:
            warnings.warn(f"labkit offload: could not write {candidate} ({error}); the content "
                          "stays in the context, nothing is lost", stacklevel=4)
            return None, False
        return candidate, True
    warnings.warn(f"labkit offload: no free file name next to {path}; content kept in context",
                  stacklevel=4)
    return None, False
