"""The one validator of knob shapes: sizes, whole-number counts and fractions.

Used by: labkit.offload, labkit.summarize, labkit.isolate, labkit.replay, labkit.evals,
labkit.diagnose and labkit._synthetic. A size is ``("fraction", f)``, ``("tokens", n)`` or
``("messages", n)``, the forms langchain and deepagents use for a trigger or a keep. Every knob is
checked when its object is built, so a bad one fails at once with a message that starts with the
knob's name.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SIZE_FORMS", "check_count", "check_fraction", "check_limit", "check_size", "size_threshold"]

SIZE_FORMS = ("fraction", "tokens", "messages")


def check_count(knob: str, value: Any, unit: str = "tokens", *, least: int = 1, most: int | None = None,
                allow_none: bool = False) -> int | None:
    """``value`` if it is a whole number from ``least`` to ``most`` (``None`` when allowed), else
    a ``ValueError`` naming the knob, the unit and the range."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < least or (
            most is not None and value > most):
        if most is not None:
            allowed = f"a whole number of {unit} from {least} to {most}"
        elif least == 1:
            allowed = f"a positive whole number of {unit}"
        else:
            allowed = f"a whole number of {unit}, {least} or more"
        raise ValueError(f"{knob} must be {allowed}{', or None to switch it off' if allow_none else ''}, "
                         f"got {value!r}")
    return value


def check_limit(knob: str, value: Any, *, allow_none: bool = True) -> int | None:
    """A token limit: a positive whole number, or ``None`` (off) when allowed."""
    return check_count(knob, value, "tokens", allow_none=allow_none)


def check_fraction(knob: str, value: Any, of: str = "") -> float:
    """``value`` if it is a number in (0, 1], else a ``ValueError`` naming the knob (``of``: what
    it is a fraction of, for the message)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ValueError(f"{knob} must be a fraction{f' of {of}' if of else ''} in (0, 1], got {value!r}")
    return value


def check_size(knob: str, value: Any, forms: tuple[str, ...] = SIZE_FORMS) -> tuple[str, float | int]:
    """Validate a size knob — one of ``forms`` — and return it as a tuple."""
    if not (isinstance(value, (tuple, list)) and len(value) == 2 and value[0] in forms):
        allowed = " or ".join(f"({k!r}, {'f' if k == 'fraction' else 'n'})" for k in forms)
        raise ValueError(f"{knob} must be {allowed}, got {value!r}")
    kind, n = value
    if kind == "fraction":
        return kind, check_fraction(knob, n)
    return kind, check_count(knob, n, kind)


def size_threshold(size: tuple[str, float | int], window: int | None) -> int | None:
    """The token count a ``fraction`` or ``tokens`` size stands for (``None`` for a fraction
    when the window is unknown, or for a ``messages`` size)."""
    kind, n = size
    if kind == "tokens":
        return int(n)
    if kind == "fraction":
        return None if window is None else max(1, int(window * n))
    return None
