"""The checker of notebook 07's exercise accepts knobs that keep the trigger under the window and
rejects the others with the reason, in the learner's words."""

from __future__ import annotations

import pytest

from labkit.exercises import nb07


def test_q1_accepts_the_solution():
    """The solution's trigger, 100,000 tokens, is under the 128,000-token window: every request the
    middleware sends uncompacted is under 100,000, so none can be refused (measured: two
    compactions, both by the trigger, no refused call)."""
    answer = nb07.q1.solve()
    assert nb07.q1.require(answer) == "Correct!"
    said = nb07.outcome(tuple(sorted(answer.items())))
    assert said["refused"] == []
    assert set(said["reasons"]) == {"trigger"}


@pytest.mark.parametrize("right", [
    {"trigger": ("tokens", 100_000)},
    {"trigger": ("tokens", 128_000)},
    {"trigger": ("tokens", 60_000), "keep": ("tokens", 10_000)},
    {"window": 128_000, "trigger": ("fraction", 0.85), "keep": ("fraction", 0.10)},
])
def test_q1_accepts_any_trigger_at_or_below_the_window(right):
    assert nb07.q1.require(right) == "Correct!"


@pytest.mark.parametrize("wrong, says", [
    # the old accepted answer: the run survives, but only by the luck of this trajectory
    ({"trigger": ("tokens", 153_383)}, r"your trigger fires at 153,383 tokens, above the model's "
                                      r"128,000-token window: this run slipped through only because"),
    ({}, r"the fallback trigger fires at 170,000 tokens.*call 9 asked for 153,383 tokens.*overflow fallback"),
    ({"trigger": ("tokens", 170_000)},
     r"call 9 asked for 153,383 tokens — over the window, under the trigger"),
    ({"window": 200_000, "trigger": ("fraction", 0.85)}, r"you told the middleware window=200,000"),
    ({"trigger": ("messages", 12)}, r"counts messages, not tokens"),
    ({"trigger": ("fraction", 0.85)}, r"labkit refuses to build.*no profile"),
    ({"trigger": ("tokens", 100_000), "keep": ("tokens", 100_000)}, r"labkit refuses to build.*keep"),
    ({"trigger": ("tokens", 100_000), "model": "x"}, r"'model' is not one"),
    (("tokens", 100_000), r"dict of knobs, such as \{'trigger': \('tokens', 100000\)\}"),
    (100_000, r"answer with a dict of knobs"),
])
def test_q1_rejects_wrong_answers_with_a_reason(wrong, says):
    with pytest.raises(AssertionError, match=f"Not yet: .*{says}"):
        nb07.q1.require(wrong)
