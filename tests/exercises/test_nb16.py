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


# -- q2, the capstone -------------------------------------------------------------------------


def test_the_capstone_starts_sick():
    model, run = nb16.capstone(nb16.START)
    assert not all(nb16.eval_grid(run).values())
    assert [f.key for f in diagnose.diagnose(run, model)] == ["hard_overflow"]


@pytest.mark.parametrize("config", [
    {"offload": 40_000},
    {"offload": 40_000, "anchor": "todo"},
    {"offload": 40_000, "subagents": True},
], ids=["offload the big exports", "with a todo list", "with subagents"])
def test_q2_accepts_configs_that_pass_the_grid_and_diagnose_clean(config):
    assert nb16.q2.check(config) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    (nb16.START, r"eval\(s\) failing: no call refused.*diagnose\(\) finds hard_overflow"),
    ({"offload": 20_000}, r"every eval passes; diagnose\(\) finds tool_tax"),
    ({"trigger": ("fraction", 0.6), "keep": ("messages", 6)}, "finds hard_overflow"),
    ({"trigger": ("fraction", 0.6)}, "set trigger and keep together"),
    ({"offload": 40_000, "anchor": "sticky note"}, "anchor must be one of"),
    ({"offlaod": 40_000}, "unknown knob"),
    ("offload", "a dict of knobs"),
], ids=["all off", "offload everything", "summarize only", "trigger alone", "bad anchor", "typo",
        "not a dict"])
def test_q2_says_which_eval_fails_and_what_diagnose_found(wrong, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb16.q2.require(wrong)


def test_q2_solution_passes():
    assert nb16.q2.check(nb16.q2.solve()) == "Correct!"
