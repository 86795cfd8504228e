"""The checker of notebook 02's exercise runs the scenario under create_deep_agent on a lab model
that refuses above 60,000 tokens and carries the learner's profile: profiles that let deepagents
compact in time pass, and each wrong one fails saying what the run did."""

from __future__ import annotations

import pytest

from labkit.exercises import nb02


@pytest.mark.parametrize("right", [
    {"max_input_tokens": 40_000},
    {"max_input_tokens": 30_000, "max_output_tokens": 4096},
    {"max_input_tokens": 50_000, "tool_calling": True},
])
def test_profiles_that_compact_in_time_pass(right):
    assert nb02.q1.check(right) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    ({"max_input_tokens": 60_000}, r"call 5 was refused: with max_input_tokens=60,000 deepagents "
                                   r"compacts at 51,000 tokens .* the model counted 85,845, over its "
                                   r"60,000-token window"),
    ({"max_input_tokens": 128_000}, "refused: with max_input_tokens=128,000 .* declare less"),
    ({"max_input_tokens": 10_000}, "compacted at call 1, when the model had seen at most 2,617 tokens, "
                                   "under half .* declare more"),
    ({}, "no 'max_input_tokens': deepagents .* falls back to its 170,000-token trigger"),
    ({"max_output_tokens": 4096}, "no 'max_input_tokens'"),
    ({"max_input_tokens": "40k"}, "positive whole number of tokens, not '40k'"),
    ({"max_input_tokens": 40_000, "max_output_tokens": -1}, r"profile\['max_output_tokens'\] must be"),
    (40_000, "give the profile as a dict"),
])
def test_wrong_profiles_fail_with_what_the_run_did(wrong, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb02.q1.require(wrong)
