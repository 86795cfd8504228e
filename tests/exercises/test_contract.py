"""What every question of every notebook promises, checked once for all of them.

Each ``Exercise`` found in ``labkit.exercises.nbNN``: its hints unlock in order (1/n, 2/n … n/n,
then stay at n/n), the placeholder ``None`` is "not attempted", and its solution text runs — with
the names the notebook has defined by then (``Exercise.given``) — to an answer the checker
passes. ``check`` never raises: a wrong answer is a "Not yet"
message, not a traceback. Right and wrong answers, which differ per question, are in ``test_nbNN.py``.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import labkit.exercises
from labkit.exercises.core import Exercise

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
MODULES = sorted(m.name for m in pkgutil.iter_modules(labkit.exercises.__path__)
                 if re.fullmatch(r"nb\d\d", m.name))


def _questions() -> dict[str, Exercise]:
    found = {}
    for name in MODULES:
        module = importlib.import_module(f"labkit.exercises.{name}")
        found |= {f"{name}.{q}": ex for q, ex in vars(module).items() if isinstance(ex, Exercise)}
    return found


QUESTIONS = _questions()


def test_every_notebook_has_an_exercise_module_with_a_question():
    numbers = sorted(p.name[:2] for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    assert [m[2:] for m in MODULES] == numbers
    assert {q.split(".")[0] for q in QUESTIONS} == set(MODULES)


@pytest.mark.parametrize("name", QUESTIONS)
def test_hints_unlock_in_order_then_stay(name):
    ex = dataclasses.replace(QUESTIONS[name])  # a fresh copy: no hint shown yet
    n = len(ex.hints)
    assert n >= 1, f"{name} has no hint"
    shown = [ex.hint() for _ in range(n + 1)]
    assert shown == [f"Hint {i}/{n}: {text}" for i, text in enumerate(ex.hints, 1)] + [shown[-2]]


@pytest.mark.parametrize("name", QUESTIONS)
def test_the_placeholder_none_is_not_attempted(name):
    verdict = QUESTIONS[name].check(None)
    assert re.match("^Not attempted yet: .*None", verdict), "check says it, without raising"
    with pytest.raises(AssertionError, match="^Not attempted yet: .*None"):
        QUESTIONS[name].require(None)


@pytest.mark.parametrize("name", QUESTIONS)
def test_a_wrong_answer_is_said_not_raised(name):
    ex = QUESTIONS[name]
    wrong = object()  # no checker accepts it: each says what kind of answer it wants
    verdict = ex.check(wrong)
    assert verdict.startswith("Not yet: ") and ".solution()" in verdict, verdict
    assert repr(verdict) == str(verdict), "shown as plain text, without quotes"


@pytest.mark.parametrize("name", QUESTIONS)
def test_the_solution_runs_and_its_answer_passes(name):
    ex = QUESTIONS[name]
    assert ex.solution() == ex.solution_text and ex.solution_text
    assert ex.check(ex.solve()) == "Correct!"
