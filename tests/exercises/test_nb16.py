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
    assert not all(nb16.eval_grid(run, model).values())
    assert [f.key for f in diagnose.diagnose(run, model)] == ["hard_overflow"]


@pytest.mark.parametrize("config", [
    {"offload": 8_000},
    {"offload": 8_000, "trigger": ("fraction", 0.85), "keep": ("fraction", 0.1)},
    {"offload": 20_000, "trigger": ("tokens", 60_000), "keep": ("messages", 10)},
], ids=["offload every export", "with summarization", "another limit and trigger"])
def test_q2_accepts_configs_that_pass_the_grid_and_diagnose_clean(config):
    assert nb16.q2.check(config) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    (nb16.START, r"eval\(s\) failing: no call refused.*diagnose\(\) finds hard_overflow"),
    ({"offload": 40_000}, r"eval\(s\) failing: within 100,000 tokens \(it sent 621,416 tokens\)"),
    ({"offload": 8_000, "anchor": "todo"}, r"within 100,000 tokens \(it sent 265,997"),
    ({"offload": 8_000, "subagents": True}, r"within 100,000 tokens \(it sent 650,756"),
    ({"trigger": ("fraction", 0.6), "keep": ("messages", 6)}, "finds hard_overflow"),
    ({"trigger": ("fraction", 0.6)}, "set trigger and keep together"),
    ({"offload": 8_000, "anchor": "sticky note"}, "anchor must be one of"),
    ({"offlaod": 8_000}, "unknown knob"),
    ("offload", "a dict of knobs"),
], ids=["all off", "the big exports let through", "a todo list's cost", "five children's cost",
        "summarize only", "trigger alone", "bad anchor", "typo", "not a dict"])
def test_q2_says_which_eval_fails_and_what_diagnose_found(wrong, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb16.q2.require(wrong)


def test_q2_solution_passes():
    assert nb16.q2.check(nb16.q2.solve()) == "Correct!"


def test_the_capstones_official_answer_sends_no_more_than_the_recommended_setting():
    """Issue 21: the capstone's answer is a cheap one — no more input tokens than the course's
    recommended setting (offloading at 8,000, then summarization) on the same variant."""
    from labkit import evals

    model, run = nb16.capstone(nb16.q2.solve())
    recommended, _ = nb16.capstone({"offload": evals.RECOMMENDED_TOOL_LIMIT, "trigger": ("fraction", 0.85),
                                    "keep": ("fraction", 0.1)})
    assert run.score.goal_completed and nb16.sent(model) <= nb16.sent(recommended) <= nb16.BUDGET


def test_a_part_of_the_variant_can_be_put_back_and_an_unknown_part_is_refused():
    model, run = nb16.capstone(nb16.START, window=1_000_000)
    assert not any(r.error for r in run.records), "a window nothing reaches refuses no call"
    with pytest.raises(TypeError, match="unknown part"):
        nb16.capstone(nb16.START, language="zh")


def test_what_matters_puts_back_one_part_at_a_time():
    rows = nb16.what_matters({**nb16.START, "offload": 8_000})
    assert [r["variant"] for r in rows][1:] == [f"{k}={v!r}" for k, v in nb16.PLAIN.items()], "one row a part"
    assert all(r["evals failing"] == "none" for r in rows), "the official answer passes, part by part"
