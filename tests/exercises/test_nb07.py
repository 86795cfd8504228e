"""The checker of notebook 07's exercise accepts the right answer and rejects wrong ones helpfully."""

from __future__ import annotations

import pytest

from labkit.exercises import nb07


def test_q1_accepts_the_size_of_the_first_request_over_the_window():
    """Measured: the naive run's requests on a 128k window are 2,213 ... 102,474 tokens, then
    153,383 (call 9, refused). With a ('tokens', n) trigger above every earlier request, nothing
    compacts before call 9, so call 9 is saved exactly when 153,383 >= n. After that compaction
    (keep: the fallback's 6 messages) every request is small. So the answer is 153,383 — found here
    by running, as the solution does."""
    answer = nb07.q1.solve()
    assert answer == 153_383
    assert nb07.refused(answer) is None and nb07.refused(answer + 1) == (9, 153_383)
    assert nb07.q1.check(answer) == nb07.q1.check(float(answer)) == "Correct!"


@pytest.mark.parametrize("wrong, says", [
    (153_384, r"call 9 is refused: its 153,383-token request is over the 128,000-token window"),
    (170_000, r"with the fallback itself call 9 is refused"),
    (128_000, r"so does trigger=\('tokens', 128,001\): find the largest"),
    (100_000, r"so does trigger=\('tokens', 100,001\)"),
    (("tokens", 153_383), "n alone"),
    (153_383.5, "whole number of tokens"),
    ("153383", "whole number of tokens"),
    (True, "whole number of tokens"),
    (0, "n > 0"),
    (-5, "n > 0"),
])
def test_q1_rejects_wrong_answers_with_a_reason(wrong, says):
    with pytest.raises(AssertionError, match=f"Not yet: .*{says}"):
        nb07.q1.require(wrong)
