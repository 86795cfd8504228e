"""The checker of notebook 07's exercise accepts the right answer and rejects wrong ones helpfully."""

from __future__ import annotations

import pytest

from labkit import LabModel, scenario
from labkit.exercises import nb07


def test_q1_accepts_the_size_of_the_first_request_over_the_window():
    """Measured: the naive run's requests on a 128k window are 2,213 ... 102,474 tokens, then
    153,383 (call 9, refused). With a ('tokens', n) trigger above every earlier request, nothing
    compacts before call 9, so call 9 is saved exactly when 153,383 >= n. After that compaction
    (keep: the fallback's 6 messages) every request is small. So the answer is 153,383 — found here
    by running, as the solution does."""
    namespace = {"scenario": scenario, "LabModel": LabModel}
    exec(nb07.q1.solution(), namespace)
    answer = namespace["answer"]
    assert answer == 153_383
    assert nb07.refused(answer) is None and nb07.refused(answer + 1) == (9, 153_383)
    assert nb07.q1.check(answer) == "Correct!"


@pytest.mark.parametrize("wrong, says", [
    (153_384, r"call 9 is refused: its 153,383-token request is over the 128,000-token window"),
    (170_000, r"with the fallback itself call 9 is refused"),
    (128_000, r"trigger=\('tokens', 128,001\) works too \(a trigger above the window still saves"),
    (100_000, r"trigger=\('tokens', 100,001\) works too: the largest"),
    (None, "whole number n"),
    (("tokens", 153_383), "n alone"),
    (153_383.0, "whole number of tokens"),
    ("153383", "whole number of tokens"),
    (True, "whole number of tokens"),
    (0, "n > 0"),
    (-5, "n > 0"),
])
def test_q1_rejects_wrong_answers_with_a_reason(wrong, says):
    with pytest.raises(AssertionError, match=f"Not yet: .*{says}"):
        nb07.q1.check(wrong)


def test_hints_unlock_one_at_a_time():
    q = nb07.q1
    q._hints_shown = 0
    first, second, third, again = q.hint(), q.hint(), q.hint(), q.hint()
    assert first.startswith("Hint 1/3") and second.startswith("Hint 2/3")
    assert third.startswith("Hint 3/3") and again == third
