"""The checker of notebook 08's exercise accepts the right answer and rejects wrong ones.

The history is the 128k run under SummarizeMiddleware; its shape (H human, C an AI message with a
tool call, A an AI answer, T a tool result) is pinned here so the expected cuts can be read off it:
for keep=("messages", k) the naive cut is 32 - k, moved back by one when it lands on a T.
"""

import numpy as np
import pytest

from labkit.exercises import nb08

SHAPE = "HCTCTCTCTCTCTCTCTCTCTCTAHCTAHCTA"
RIGHT = {9: 23, 10: 21, 13: 19, 14: 17, 20: 11, 25: 7}


def _letter(m):
    if m.type == "ai":
        return "C" if m.tool_calls else "A"
    return {"human": "H", "tool": "T"}[m.type]


def test_the_history_has_the_shape_the_answers_are_read_from():
    assert "".join(_letter(m) for m in nb08.history()) == SHAPE


def test_expected_cuts_follow_the_pair_rule():
    for k, cut in RIGHT.items():
        naive = len(SHAPE) - k
        assert cut == (naive - 1 if SHAPE[naive] == "T" else naive)
        assert nb08._right(k) == cut


@pytest.mark.parametrize("kind", [int, float, np.int64])
def test_right_answer_passes(kind):
    """Cuts computed with numpy or a float division are whole numbers too."""
    assert nb08.q1.check({k: kind(v) for k, v in RIGHT.items()}) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    ([23, 21, 19, 17, 11, 7], "a dict"),
    ({**RIGHT, 9: 23.5}, "whole numbers"),
    ({**RIGHT, 9: True}, "whole numbers"),
    ({k: v for k, v in RIGHT.items() if k != 25}, r"missing \[25\]"),
    ({**RIGHT, 6: 25}, r"not asked: \[6\]"),
    ({k: 32 - k for k in RIGHT},
     r"k=10: 22 is the naive cut .* a tool result \(the answer to call_e3b0_002\)"),
    ({**RIGHT, 14: 19}, "k=14: a cut at 19 keeps only 13 messages, fewer than k"),
    ({**RIGHT, 9: 22}, r"k=9: history\[22\] is a tool result .* moved further back"),
    ({**RIGHT, 20: 9}, r"k=20: history\[9\] is the AI message that calls fetch_market_data .* further back"),
    ({**RIGHT, 25: 40}, "k=25: 40 is not a position"),
])
def test_wrong_answers_fail_with_a_reason(wrong, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb08.q1.require(wrong)
