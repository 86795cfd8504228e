"""The checker of notebook 04's exercise accepts the right answer and rejects wrong ones helpfully."""

from __future__ import annotations

import numpy as np
import pytest

from labkit import LabModel, scenario
from labkit.exercises import nb04
from labkit.offload import OffloadMiddleware
from labkit.tokens import count_tokens


def _fits(limit: int) -> bool:
    run = scenario.run(LabModel(window=nb04.WINDOW), middleware=[OffloadMiddleware(tool_limit=limit)])
    return run.error is None


def _sizes() -> dict[str, int]:
    return {c["ticker"]: count_tokens(scenario.export_text(c["ticker"])) for c in scenario.companies()}


def test_q1_accepts_the_largest_limit_that_fits():
    """Measured: the exports are CRVD 10,142, EMBR 16,010, BRLM 30,689, DRFT 41,348 and FERN
    50,893 BPE tokens. A limit keeps inline every export of at most that many tokens. With BRLM
    inline too (limit 30,689 .. 41,347) the run peaks under 64,000; with DRFT inline as well it
    overflows. So the answer is 41,348 - 1 = 41,347 — found here by running, not by trusting it."""
    sizes = sorted(_sizes().values())
    answer = next(n - 1 for n in reversed(sizes) if _fits(n - 1))
    assert _fits(answer) and not _fits(answer + 1)
    assert answer == 41_347
    assert nb04.q1.check(answer) == "Correct!"
    assert nb04.q1.check(41_347.0) == nb04.q1.check(np.int64(41_347)) == "Correct!"


@pytest.mark.parametrize("wrong, says", [
    (41_348, r"exactly the size of the DRFT export.*\*over\* the limit"),
    (50_000, "overflows the 64,000-token window: lower it"),
    (20_000, "so does tool_limit=20,001: find the largest"),
    (30_689, "so does tool_limit=30,690"),
    (41_347.5, "whole number"),
    ("41347", "whole number"),
    (True, "whole number"),
    (0, "> 0"),
    (-1, "> 0"),
])
def test_q1_rejects_wrong_answers_with_a_reason(wrong, says):
    with pytest.raises(AssertionError, match=f"Not yet: .*{says}"):
        nb04.q1.require(wrong)
