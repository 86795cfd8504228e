"""Context sizes as knobs: ``("fraction", f)``, ``("tokens", n)``, ``("messages", n)``.

The same three forms langchain and deepagents use for a trigger or a keep. Shared by
``labkit.offload`` and ``labkit.summarize``; checked when a middleware is built, so a bad knob
fails at once with a message naming it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["check_limit", "check_size", "size_threshold"]

KINDS = ("fraction", "tokens", "messages")


def check_size(knob: str, value: Any, kinds: tuple[str, ...] = KINDS) -> tuple[str, float | int]:
    """Validate a size knob and return it as a tuple, or raise ``ValueError`` naming the knob."""
    forms = " or ".join(f"({k!r}, {'f' if k == 'fraction' else 'n'})" for k in kinds)
    if not (isinstance(value, (tuple, list)) and len(value) == 2 and value[0] in kinds):
        raise ValueError(f"{knob} must be {forms}, got {value!r}")
    kind, n = value
    if isinstance(n, bool) or not isinstance(n, (int, float)):
        raise ValueError(f"{knob}: the {kind} value must be a number, got {n!r}")
    if kind == "fraction" and not 0 < n <= 1:
        raise ValueError(f"{knob}: a fraction must be in (0, 1], got {n!r}")
    if kind != "fraction" and (not isinstance(n, int) or n <= 0):
        raise ValueError(f"{knob}: a {kind} count must be a whole number > 0, got {n!r}")
    return kind, n


def check_limit(knob: str, value: Any, *, allow_none: bool = True) -> int | None:
    """Validate a token limit: a whole number > 0, or ``None`` (off) when allowed."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        allowed = "a whole number of tokens > 0" + (", or None to switch it off" if allow_none else "")
        raise ValueError(f"{knob} must be {allowed}, got {value!r}")
    return value


def size_threshold(size: tuple[str, float | int], window: int | None) -> int | None:
    """The token count a ``fraction`` or ``tokens`` size stands for (``None`` for a fraction
    when the window is unknown, or for a ``messages`` size)."""
    kind, n = size
    if kind == "tokens":
        return int(n)
    if kind == "fraction":
        return None if window is None else max(1, int(window * n))
    return None
