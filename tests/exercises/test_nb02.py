"""The checkers of notebook 02's exercises accept the right answers and reject wrong ones helpfully."""

from __future__ import annotations

import numpy as np
import pytest
from deepagents.middleware.filesystem import NUM_CHARS_PER_TOKEN

from labkit import scenario
from labkit.exercises import nb02
from labkit.tokens import approx_tokens, count_tokens


def _fern_zh():
    text = scenario.news_text("FERN", "zh")
    return count_tokens(text), approx_tokens(text)


def _exports():
    return {c["ticker"]: scenario.export_text(c["ticker"]) for c in scenario.companies()}


@pytest.mark.parametrize("kind", [int, float, np.int64])
def test_q1_accepts_the_gap(kind):
    real, guess = _fern_zh()
    assert nb02.q1.check(kind(real - guess)) == "Correct!"


@pytest.mark.parametrize("wrong, says", [
    (282.5, "whole number"),
    (True, "whole number"),
    ("282", "whole number"),
    ("neg", "wrong sign"),
    ("real", "real BPE count"),
    ("guess", "chars/4 estimate"),
    ("cl100k", "cl100k_base"),
    (7, "not the gap"),
])
def test_q1_rejects_wrong_answers_with_a_reason(wrong, says):
    real, guess = _fern_zh()
    cl100k = count_tokens(scenario.news_text("FERN", "zh"), "cl100k_base") - guess
    wrong = {"neg": guess - real, "real": real, "guess": guess, "cl100k": cl100k}.get(wrong, wrong)
    with pytest.raises(AssertionError, match=says):
        nb02.q1.require(wrong)


def test_q2_solution_and_the_whole_range_are_accepted():
    """Measured: the exports over 20,000 BPE tokens are BRLM (51,183 chars), DRFT and FERN; the
    largest under it is EMBR (26,828 chars). Any limit L with 4L < 51,183 and 4L >= 26,828 works:
    6,707 <= L <= 12,795."""
    exports = _exports()
    big = [t for t in exports if count_tokens(exports[t]) > 20_000]
    small = [t for t in exports if t not in big]
    hi = (min(len(exports[t]) for t in big) - 1) // NUM_CHARS_PER_TOKEN
    lo = -(-max(len(exports[t]) for t in small) // NUM_CHARS_PER_TOKEN)
    assert lo <= hi
    for answer in (lo, (lo + hi) // 2, hi, 12_000.0, np.int32(12_000)):
        assert nb02.q2.check(answer) == "Correct!"
    with pytest.raises(AssertionError, match="lower the limit"):
        nb02.q2.require(hi + 1)
    with pytest.raises(AssertionError, match="raise the limit"):
        nb02.q2.require(lo - 1)


@pytest.mark.parametrize("wrong, says", [
    (20_000, r"keeps BRLM \(51,183 chars, 30,689 tokens\), DRFT .* lower the limit"),
    (1_000, r"also evicts CRVD .*EMBR .* raise the limit"),
    (0, "switches eviction off"),
    (-5, "switches eviction off"),
    (12_000.5, "whole number"),
])
def test_q2_rejects_wrong_answers_with_a_reason(wrong, says):
    with pytest.raises(AssertionError, match=says):
        nb02.q2.require(wrong)
