"""The Exercise class every notebook's exercises use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Exercise"]


class Say(str):
    """A string that a notebook shows as plain text, without quotes."""

    def __repr__(self) -> str:
        return str(self)


@dataclass
class Exercise:
    """One exercise: a prompt, a checker, hints that unlock one at a time, a solution.

    ``checker(answer)`` returns ``None`` when the answer is right, or a string saying what is
    wrong. ``check`` turns that into a pass message or an ``AssertionError``, so a notebook cell
    that checks a wrong answer fails under nbval just as a failing assert would.
    """

    prompt: str
    checker: Callable[[Any], str | None]
    hints: list[str] = field(default_factory=list)
    solution_text: str = ""
    _hints_shown: int = 0

    def check(self, answer: Any) -> str:
        problem = self.checker(answer)
        if problem:
            raise AssertionError(f"Not yet: {problem}  (call .hint() for a hint)")
        return Say("Correct!")

    def hint(self) -> str:
        if not self.hints:
            return Say("No hints for this one.")
        text = self.hints[min(self._hints_shown, len(self.hints) - 1)]
        self._hints_shown = min(self._hints_shown + 1, len(self.hints))
        return Say(f"Hint {self._hints_shown}/{len(self.hints)}: {text}")

    def solution(self) -> str:
        return Say(self.solution_text)

    def __repr__(self) -> str:
        return f"Exercise: {self.prompt}"
