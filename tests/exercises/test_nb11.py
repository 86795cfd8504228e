"""The checker of notebook 11's exercise runs the learner's stack on the variant with every wall
at once (no profile, a 30,000-token window, the transcript pasted, Driftwood's export over the
window): stacks that compact in time pass; one the overflow fallback rescued, one that died on
the big result, and one in the wrong order each fail with that reason."""

from __future__ import annotations

import pytest

from labkit import LabModel, count_tokens, scenario
from labkit.exercises import nb11
from labkit.offload import OffloadMiddleware
from labkit.summarize import SummarizeMiddleware


def test_the_variant_has_a_result_bigger_than_the_window_and_a_transcript_bigger_still():
    assert count_tokens(scenario.export_text("DRFT")) > nb11.WINDOW, "Driftwood's export is over the window"
    assert count_tokens(nb11.turns()[0]) > nb11.WINDOW, "the pasted first request is over the window"
    assert LabModel(window=nb11.WINDOW, profile=None).profile is None, "the model has no profile"


def _tuned(model):
    return [OffloadMiddleware(), SummarizeMiddleware(model, trigger=("tokens", 24_000))]


def _small_keep(model):
    summarize = SummarizeMiddleware(model, trigger=("tokens", 18_000), keep=("tokens", 3_000))
    return (OffloadMiddleware(), summarize)  # a tuple is a stack too


def _window_given(model):
    return [OffloadMiddleware(), SummarizeMiddleware(model, window=nb11.WINDOW, trigger=("fraction", 0.8),
                                                     keep=("fraction", 0.1))]


def _offload_more(model):
    return [OffloadMiddleware(tool_limit=5_000)]  # nothing left to compact: also in time


@pytest.mark.parametrize("right", [_tuned, _small_keep, _window_given, _offload_more])
def test_q1_stacks_that_compact_in_time_pass(right):
    assert nb11.q1.check(right) == "Correct!"


@pytest.mark.parametrize("wrong, says", [
    (lambda model: [OffloadMiddleware(), SummarizeMiddleware(model)],
     r"rescued, not compacted in time.*\['overflow'\].*170,000 tokens, above the 30,000-token window"),
    (lambda model: [SummarizeMiddleware(model, trigger=("tokens", 24_000))],
     r"nothing is left to compact.*Driftwood's export, 41,348 tokens.*offload it"),
    (lambda model: [SummarizeMiddleware(model, trigger=("tokens", 24_000)), OffloadMiddleware()],
     r"summary prompt of .* tokens was refused.*SummarizeMiddleware → OffloadMiddleware.*transcript whole"),
    (lambda model: [OffloadMiddleware()], "nothing compacts: the results you kept"),
    (lambda model: [OffloadMiddleware(), SummarizeMiddleware(model, trigger=("fraction", 0.8))],
     "building your stack raised ValueError: .*no profile"),
    (lambda model: OffloadMiddleware(), "should return a list of middleware"),
    ([OffloadMiddleware()], "answer with a function that takes the model"),
], ids=["rescued", "no-offload", "summarize-first", "no-summarizer", "fraction-no-window", "not-a-list",
        "a-list"])
def test_q1_wrong_stacks_fail_with_the_reason(wrong, says):
    with pytest.raises(AssertionError, match=f"Not yet: .*{says}"):
        nb11.q1.require(wrong)
