"""The checker of notebook 01's exercise runs the learner's diagnose on seven runs: right ways to
tell the three deaths apart pass, and each wrong one fails naming the run it got wrong and why."""

import pytest
from langchain_core.exceptions import ContextOverflowError

from labkit.exercises import nb01


def solution(run, budget):
    if run.error is not None:
        return "overflow"
    if not run.score.goal_completed:
        return "amnesia"
    return "cost" if sum(r.cost for r in run.records) > budget else "fine"


def by_symptoms(run, budget):  # also right: the error's type, a lost goal, spelled in capitals
    if isinstance(run.error, ContextOverflowError):
        return "OVERFLOW"
    if run.score.goal_lost or not run.score.needle_correct:
        return "Amnesia"
    paid = sum(r.cost for r in run.records)
    return "cost " if paid > budget else "fine"


def always_overflow(run, budget):
    return "overflow"


def error_only(run, budget):  # wrong: a run with no error can still have forgotten its goal
    if run.error is not None:
        return "overflow"
    return "cost" if sum(r.cost for r in run.records) > budget else "fine"


def any_summary_is_amnesia(run, budget):  # wrong: a compacted run may still do all its work
    if run.error is not None:
        return "overflow"
    if any(r.by_kind["summary"] for r in run.records):
        return "amnesia"
    return "cost" if sum(r.cost for r in run.records) > budget else "fine"


def last_call_cost(run, budget):  # wrong: the run pays for every call, not only the last
    if run.error is not None:
        return "overflow"
    if not run.score.goal_completed:
        return "amnesia"
    return "cost" if run.records[-1].cost > budget else "fine"


def unfinished_first(run, budget):  # wrong: an overflowed run is unfinished too
    if not run.score.goal_completed:
        return "amnesia"
    if run.error is not None:
        return "overflow"
    return "cost" if sum(r.cost for r in run.records) > budget else "fine"


def crashes(run, budget):
    return run.summary


@pytest.mark.parametrize("right", [solution, by_symptoms])
def test_right_diagnoses_pass(right):
    assert nb01.q1.check(right) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    (always_overflow, "said 'overflow' for the naive run on a 1M-token model, budget \\$5, but it is 'fine'"),
    (error_only, "said 'fine' for the 128k run with SummarizationMiddleware .* 'amnesia': no error, "
                 "but the work was never done"),
    (any_summary_is_amnesia, "said 'amnesia' for a 100k run under create_deep_agent .* 'fine': it was "
                             "compacted, yet it did all its work"),
    (last_call_cost, "said 'fine' for the naive run on a 1M-token model, budget \\$1, but it is 'cost': "
                     "it did all its work, but its calls cost \\$1.46 in all"),
    (unfinished_first, "said 'amnesia' for the naive run on a 128k model, .* 'overflow': it ended with "
                       "ContextOverflowError"),
    (crashes, "diagnose raised AttributeError"),
    (lambda run, budget: "dead", "returned 'dead' .* return one of 'overflow', 'amnesia', 'cost', 'fine'"),
    ("overflow", "give the function itself"),
])
def test_wrong_diagnoses_fail_naming_the_run_and_why(wrong, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb01.q1.require(wrong)


def test_every_case_died_the_death_it_is_labelled_with():
    """The seven runs are what the checker says they are: the solution agrees on each."""
    for i, case in enumerate(nb01.CASES):
        assert solution(nb01._run(i), case.budget) == case.death, case.what
