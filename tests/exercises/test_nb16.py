"""The checker of notebook 16's exercise passes cures and refuses what leaves the run sick.

Each answer is run by the checker itself (the scenario under create_deep_agent on 60,000
tokens), so these tests check behaviour: a cure has no finding and finishes the job."""

import pytest
from deepagents.backends import StateBackend
from deepagents.middleware.filesystem import FilesystemMiddleware
from deepagents.middleware.summarization import SummarizationMiddleware

from labkit import diagnose
from labkit.exercises import nb16
from labkit.offload import OffloadMiddleware


def test_the_patient_is_sick():
    model, run = nb16.patient()
    assert [f.key for f in diagnose.diagnose(run, model)] == ["overflow_rescued"]


@pytest.mark.parametrize("cure", [
    lambda model: [FilesystemMiddleware(tool_token_limit_before_evict=10_000)],
    lambda model: [OffloadMiddleware()],
    lambda model: (SummarizationMiddleware(model, backend=StateBackend(), trigger=("fraction", 0.5),
                                           keep=("fraction", 0.1), trim_tokens_to_summarize=None),),
], ids=["deepagents eviction", "labkit offload", "a lower trigger"])
def test_q1_accepts_cures(cure):
    assert nb16.q1.check(cure) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    ([FilesystemMiddleware(tool_token_limit_before_evict=10_000)], "answer with a function"),
    (lambda model: FilesystemMiddleware(), "must return a list of middleware"),
    (lambda model: ["FilesystemMiddleware"], "must return a list of middleware"),
    (lambda model: [], "still sick: diagnose\\(\\) finds overflow_rescued"),
    (lambda model: [FilesystemMiddleware()], "still sick: diagnose\\(\\) finds overflow_rescued"),
    (lambda model: [SummarizationMiddleware(model, backend=StateBackend(), trigger=("messages", 8),
                                            keep=("messages", 4))],
     "still sick: diagnose\\(\\) finds goal_lost"),
    (lambda model: 1 / 0, "could not go on with that middleware: ZeroDivisionError"),
], ids=["a list", "one middleware", "a name", "nothing", "the default", "compaction that drops the goal",
        "raises"])
def test_q1_refuses_what_does_not_cure(wrong, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb16.q1.require(wrong)
