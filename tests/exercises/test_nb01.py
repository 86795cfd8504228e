"""The checker of notebook 01's exercise accepts the right answer and rejects wrong ones."""

import pytest

from labkit.exercises import nb01


def test_right_answer_passes():
    peak = nb01._peak()
    assert nb01.q1.check(-(-peak // 1000) * 1000) == "Correct!"


@pytest.mark.parametrize("wrong", [None, "128000", 128_000.0, True, 1_000_000, 128_000, 154_500])
def test_wrong_answers_fail_with_a_reason(wrong):
    with pytest.raises(AssertionError, match="Not yet"):
        nb01.q1.check(wrong)


def test_hints_unlock_one_at_a_time():
    ex = nb01.q1
    ex._hints_shown = 0
    assert ex.hint().startswith("Hint 1/3") and ex.hint().startswith("Hint 2/3")
    assert ex.hint().startswith("Hint 3/3") and ex.hint().startswith("Hint 3/3")
