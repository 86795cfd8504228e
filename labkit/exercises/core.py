"""What every notebook's exercises share: the Exercise, and the checker builders nbNN modules use.

An Exercise checks an answer, unlocks hints one at a time, shows its solution and can run it.
The placeholder ``answer = None`` always means "not attempted", whatever the question. The
builders turn the shapes the checkers repeat into one line each: a whole number (``155000.0``
and numpy integers count), a number to two decimals, the smallest or largest value that still
holds. They leave out what is notebook-specific: ranges, and why a value fails.
Introduced in notebook 01; tested once for every question in ``tests/exercises/test_contract.py``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import wraps
from typing import Any

from labkit.exercises.progress import CORRECT, TRIED, UNTRIED, record

__all__ = ["Exercise", "as_whole", "largest_that_holds", "smallest_that_holds", "two_decimals",
           "whole_number"]

Checker = Callable[[Any], "str | None"]


class Say(str):
    """A string that a notebook shows as plain text, without quotes."""

    def __repr__(self) -> str:
        return str(self)


@dataclass
class Exercise:
    """One exercise: a prompt, a checker, hints that unlock one at a time, a solution.

    ``checker(answer)`` returns ``None`` when the answer is right, or a string saying what is
    wrong. ``check`` shows the verdict as text and never raises, so Run All goes through an
    unanswered or wrong exercise with the checker's message and no traceback; ``require`` raises
    ``AssertionError`` instead, for tests. ``None`` is the placeholder every notebook starts from:
    it is "not attempted" before any checker runs.

    ``solve()`` runs ``solution_text`` with the names the notebook has defined by then
    (``given()`` returns them, built only when asked) and returns the variable ``answer_name``.

    Example (notebook 01)::

        nb01.q1.check(None)   # Not attempted yet: ...
        nb01.q1.hint()        # Hint 1/3: ...
        nb01.q1.check(nb01.q1.solve())   # Correct!
    """

    prompt: str
    checker: Checker
    hints: list[str] = field(default_factory=list)
    solution_text: str = ""
    given: Callable[[], dict] = dict
    answer_name: str = "answer"
    _hints_shown: int = field(default=0, init=False, repr=False)

    def check(self, answer: Any) -> str:
        """Say whether ``answer`` is right: "Correct!", "Not yet: ..." or "Not attempted yet: ...";
        the verdict is kept on this machine for ``labkit.progress()`` (``exercises.progress``)."""
        if answer is None:
            verdict, status = self.problem(answer), UNTRIED
        else:
            problem = self.checker(answer)
            verdict, status = ((f"Not yet: {problem}  (call .hint() for a hint, .solution() to see one)",
                                TRIED) if problem else ("Correct!", CORRECT))
        trouble = record(self, status)
        return Say(verdict if trouble is None else f"{verdict}\n({trouble})")

    def problem(self, answer: Any) -> str | None:
        """What is wrong with ``answer``, or ``None`` when it is right (the placeholder is wrong)."""
        if answer is None:
            return ("Not attempted yet: the answer is still the placeholder None. "
                    "Replace it with yours (call .hint() for a hint)")
        return self.checker(answer)

    def require(self, answer: Any) -> str:
        """``check`` for tests: "Correct!", or an ``AssertionError`` with the same message."""
        verdict = self.check(answer)
        if verdict != "Correct!":
            raise AssertionError(verdict)
        return verdict

    def hint(self) -> str:
        if not self.hints:
            return Say("No hints for this one.")
        text = self.hints[min(self._hints_shown, len(self.hints) - 1)]
        self._hints_shown = min(self._hints_shown + 1, len(self.hints))
        return Say(f"Hint {self._hints_shown}/{len(self.hints)}: {text}")

    def solution(self) -> str:
        return Say(self.solution_text)

    def solve(self) -> Any:
        """Run the solution text where the notebook's names are defined; return its answer."""
        names = dict(self.given())
        exec(self.solution_text, names)  # noqa: S102 — the course's own solution text, never input
        return names[self.answer_name]

    def __repr__(self) -> str:
        return f"Exercise: {self.prompt}"


# -- the kind of answer --------------------------------------------------------------------------


def as_whole(value: Any) -> int | None:
    """``value`` as an int if it is a whole number, else ``None`` (every notebook's checkers, 01–16).

    ``155000``, ``155000.0`` and ``numpy.int64(155000)`` all count: learners compute answers with
    ``/``, ``math.ceil`` and numpy. ``True``, ``"155000"`` and ``155000.5`` do not.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    number = float(value)
    return int(number) if number.is_integer() else None


def whole_number(what: str) -> Callable[[Checker], Checker]:
    """Decorate a checker that takes an int: other answers are refused with "answer with {what}".

    Example (notebook 14)::

        @whole_number("a whole number of messages, such as 5")
        def check(keep: int) -> str | None: ...
    """
    def decorate(check: Checker) -> Checker:
        @wraps(check)
        def checker(answer: Any) -> str | None:
            number = as_whole(answer)
            if number is None:
                return f"answer with {what}, not {answer!r}"
            return check(number)
        return checker
    return decorate


def two_decimals(what: str) -> Callable[[Checker], Checker]:
    """Decorate a checker that takes a number to two decimals (``0.48``; ``1`` is ``1.0``).

    A number with more decimals (``0.4827``) is refused, so is anything that is not a number.
    Example (notebook 11): ``@two_decimals("the gate, a fraction of the trigger such as 0.45")``.
    """
    def decorate(check: Checker) -> Checker:
        @wraps(check)
        def checker(answer: Any) -> str | None:
            if isinstance(answer, bool) or not isinstance(answer, numbers.Real) \
                    or not math.isfinite(answer):
                return f"answer with {what}, not {answer!r}"
            if abs(round(float(answer), 2) - answer) > 1e-9:
                return f"give it to two decimal places, not {answer!r}"
            return check(round(float(answer), 2))
        return checker
    return decorate


# -- the right answer is an edge -----------------------------------------------------------------


def _edge(find: str, step: float, show: Callable[[Any], str]) -> Callable[[Checker], Checker]:
    def decorate(fails: Checker) -> Checker:
        @wraps(fails)
        def checker(answer: Any) -> str | None:
            if problem := fails(answer):
                return problem
            nxt = answer - step if find == "smallest" else answer + step
            if isinstance(step, float):
                nxt = round(nxt, 10)  # 0.48 + 0.01 is 0.49, not 0.49000000000000005
            if fails(nxt) is None:
                return f"{show(answer)} works, but so does {show(nxt)}: find the {find}"
            return None
        return checker
    return decorate


def smallest_that_holds(step: float = 1, show: Callable[[Any], str] = str) -> Callable[[Checker], Checker]:
    """Decorate ``fails(value)`` — why ``value`` does not hold, or ``None`` — into a checker that
    passes the smallest value that holds: the answer holds, and one ``step`` less does not.

    ``fails`` also refuses values out of range, so the step below the lowest value never counts.
    Example (notebook 14)::

        @whole_number("a whole number of messages, such as 5")
        @smallest_that_holds(show=lambda keep: f"keep={keep}")
        def check(keep: int) -> str | None:
            if not 1 <= keep < TRIGGER:
                return "keep must be at least 1 and below the trigger"
            ...
    """
    return _edge("smallest", step, show)


def largest_that_holds(step: float = 1, show: Callable[[Any], str] = str) -> Callable[[Checker], Checker]:
    """Like :func:`smallest_that_holds`, for the largest value: one ``step`` more does not hold.

    Example (notebook 11): ``@largest_that_holds(step=0.01, show=lambda g: f"gate={g:.2f}")``.
    """
    return _edge("largest", step, show)
