"""The checker of notebook 12's exercise accepts the right answer and rejects wrong ones.

The right answer is derived here from the uncapped run (the fewest leading BPE tokens of
Brightloom's reply that hold the needle's figure), not typed in, so it follows the scenario.
"""

import numpy as np
import pytest

from labkit import scenario
from labkit.exercises import nb12
from labkit.tokens import encoding


def _right() -> int:
    run, children = nb12._fanout(10_000)  # a cap no reply reaches
    assert run.score.needle_correct and not any(c.capped for c in children)
    enc = encoding()
    ids = enc.encode(children[0].reply)
    return next(n for n in range(1, len(ids) + 1) if scenario.needle().answer in enc.decode(ids[:n]))


def test_the_right_cap_answers_and_one_token_less_does_not():
    cap = _right()
    assert nb12._answers(cap) and not nb12._answers(cap - 1)


@pytest.mark.parametrize("kind", [int, float, np.int64])
def test_q1_right_answer_passes(kind):
    assert nb12.q1.check(kind(_right())) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    ("71", "whole number"),
    (True, "whole number"),
    (70.5, "whole number"),
    (0, "positive"),
    (30, "cut before the figure"),
    (400, "find the smallest"),
])
def test_q1_wrong_answers_fail_with_a_reason(wrong, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb12.q1.require(wrong)


def test_one_token_less_or_more_than_the_right_answer_is_refused():
    with pytest.raises(AssertionError, match="cut before the figure"):
        nb12.q1.require(_right() - 1)
    with pytest.raises(AssertionError, match="find the smallest"):
        nb12.q1.require(_right() + 1)


def test_the_solution_computes_the_same_answer():
    assert nb12.q1.solve() == _right()
