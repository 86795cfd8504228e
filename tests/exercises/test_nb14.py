"""The checker of notebook 14's exercise accepts the right answer and rejects wrong ones.

The right answer is found here by running every keep below the trigger, not typed in, so it
follows the scenario and the lab model.
"""

import numpy as np
import pytest

from labkit.exercises import nb14


def _right() -> int:
    return next(k for k in range(1, nb14.TRIGGER) if nb14._holds(k))


def test_the_right_keep_holds_and_one_less_does_not():
    k = _right()
    assert k > 1 and nb14._holds(k) and not nb14._holds(k - 1)


@pytest.mark.parametrize("kind", [int, float, np.int64])
def test_q1_right_answer_passes(kind):
    assert nb14.q1.check(kind(_right())) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    ("3", "whole number"),
    (3.5, "whole number"),
    (True, "whole number"),
    (0, "at least 1"),
    (8, "below the trigger"),
])
def test_q1_wrong_answers_fail_with_a_reason(wrong, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb14.q1.require(wrong)


def test_one_less_than_the_right_answer_still_drifts():
    with pytest.raises(AssertionError, match="still drifts"):
        nb14.q1.require(_right() - 1)


def test_one_more_than_the_right_answer_is_not_the_smallest():
    with pytest.raises(AssertionError, match="find the smallest"):
        nb14.q1.require(_right() + 1)
