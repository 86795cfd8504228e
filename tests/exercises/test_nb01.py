"""The checker of notebook 01's exercise accepts the right answer and rejects wrong ones."""

import numpy as np
import pytest

from labkit.exercises import nb01


def _right() -> int:
    peak = nb01._peak()
    return -(-peak // 1000) * 1000


@pytest.mark.parametrize("kind", [int, float, np.int64])
def test_right_answer_passes(kind):
    """155000.0 (from a float division) and numpy's integers are whole numbers too."""
    assert nb01.q1.check(kind(_right())) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    ("128000", "whole number"),
    (True, "whole number"),
    (154_000.5, "whole number"),
    (1_000_000, "so does a 999,000-token window: find the smallest"),
    (128_000, "too small"),
    (154_500, "multiple of 1,000"),
])
def test_wrong_answers_fail_with_a_reason(wrong, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb01.q1.require(wrong)


def test_one_window_less_is_too_small():
    with pytest.raises(AssertionError, match="too small"):
        nb01.q1.require(_right() - 1000)
