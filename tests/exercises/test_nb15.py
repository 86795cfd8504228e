"""The checker of notebook 15's exercise accepts the right answer and rejects wrong ones.

The right answer is found here by running the recommended setting at each trigger from the
peak's fraction down, not typed in, so it follows the scenario and the lab model.
"""

import pytest

from labkit.exercises import nb15


def _right() -> float:
    """The largest trigger (two decimals) at which the recommended stack compacts often enough."""
    return next(f / 100 for f in range(30, 5, -1) if nb15._compactions(f / 100) >= nb15.MIN_COMPACTIONS)


def test_the_right_trigger_compacts_often_enough_and_the_next_one_up_does_not():
    f = _right()
    assert nb15._compactions(f) >= nb15.MIN_COMPACTIONS > nb15._compactions(round(f + 0.01, 2))
    assert nb15._compactions(0.30) == 0, "at 30% of the window the recommended setting never compacts"


def test_q1_right_answer_passes():
    assert nb15.q1.check(_right()) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    ("0.11", "fraction of the window"),
    (True, "fraction of the window"),
    (0.05, "above keep"),
    (1, "below 1"),
    (0.115, "two decimal places"),
    (0.85, "trigger lower"),
])
def test_q1_wrong_answers_fail_with_a_reason(wrong, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb15.q1.require(wrong)


def test_one_hundredth_above_the_right_answer_compacts_too_rarely():
    with pytest.raises(AssertionError, match="trigger lower"):
        nb15.q1.require(round(_right() + 0.01, 2))


def test_one_hundredth_below_the_right_answer_is_not_the_largest():
    with pytest.raises(AssertionError, match="find the largest"):
        nb15.q1.require(round(_right() - 0.01, 2))


def test_the_solutions_comparison_with_summarize_alone_holds(recorded):
    """The solution says SummarizeMiddleware alone compacts 8 times at the same trigger (replay)."""
    from labkit import replay

    alone = replay.replay(recorded, trigger=("fraction", _right()), keep=nb15.KEEP, window=nb15.WINDOW)
    assert len(alone.events) == 8 and "compacts 8 times" in nb15.q1.solution()
