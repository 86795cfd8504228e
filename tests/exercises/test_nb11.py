"""The checker of notebook 11's exercise accepts the right answer and rejects wrong ones.

The right answer is derived here from the refusal the default run prints (the view's tokens at
the start of turn 2, over the trigger in tokens), not typed in, so it follows the scenario.
"""

import math
import re

import numpy as np
import pytest

from labkit.exercises import nb11

TRIGGER = int(0.85 * nb11.WINDOW)


def _right() -> float:
    refusal = nb11._turn2_answer(0.5)
    assert refusal.startswith("Not compacted"), "the default gate should refuse at turn 2"
    tokens = int(re.search(r"holds ([\d,]+) tokens", refusal).group(1).replace(",", ""))
    return math.floor(tokens / TRIGGER * 100) / 100


def test_the_right_gate_lets_turn_2_through_and_one_step_higher_does_not():
    g = _right()
    assert nb11._compacts(g) and not nb11._compacts(g + 0.01)


@pytest.mark.parametrize("kind", [float, np.float64])
def test_q1_right_answer_passes(kind):
    assert nb11.q1.check(kind(_right())) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    ("0.48", "answer with a number"),
    (True, "answer with a number"),
    (0, r"in \(0, 1\]"),
    (1.5, r"in \(0, 1\]"),
    (0.4827, "two decimal places"),
    (0.5, "still refused"),
    (0.3, "find the largest"),
])
def test_q1_wrong_answers_fail_with_a_reason(wrong, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb11.q1.require(wrong)


def test_one_step_above_the_right_answer_is_refused():
    with pytest.raises(AssertionError, match="still refused"):
        nb11.q1.require(round(_right() + 0.01, 2))
