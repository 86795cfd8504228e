"""deepagents' ``mode="fork"`` on the lab fan-out (notebook 12, section 9): the same run with the
researcher isolated and forked, only the mode changed. A forked child starts from the parent's
effective conversation (the pending ``task`` call dropped) and a preamble before its task; an
isolated one from its task alone. The lab model, scripted, does the same work either way.

Worked example (``test_worked_example_every_forked_call_pays_the_same_extra``): at the fan-out the
parent's conversation is one message, the user's request, so every call of a forked child carries
that message, the preamble glued to its task, and the parent's ``task`` tool schema on top of
what its isolated twin sends: the same difference on each of its calls (652 tokens on the tested
versions), paid 15 times (five children, three calls each).
"""

from __future__ import annotations

import warnings

import pytest
from deepagents.middleware.subagents import _FORK_TASK_PREAMBLE
from langchain_core.messages import HumanMessage, ToolMessage

from labkit import LabModel, scenario
from labkit.isolate import calls_by_context

COMPANIES = {c["name"]: c["ticker"] for c in scenario.companies()}


def by_child(model: LabModel) -> dict[str, list]:
    """The run's calls per context, as notebook 12 splits them: a child's last human message ends
    with its task description; every other call is the parent's."""
    groups: dict[str, list] = {}
    for call in model.calls:
        last = [m.text for m in call.messages if isinstance(m, HumanMessage)][-1]
        name = next((n for n, t in COMPANIES.items()
                     if last.endswith(scenario.research_request(t))), "parent")
        groups.setdefault(name, []).append(call)
    return groups


@pytest.fixture(scope="module")
def runs():
    """``{mode: (model, run, calls per context)}`` for the deep-harness fan-out in both modes."""
    out = {}
    for mode in ("isolated", "fork"):
        model = LabModel(window=200_000, delegate_research=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deepagents marks forked subagents beta
            run = scenario.run(model, harness="deep", turns=scenario.FANOUT_TURNS,
                               subagents=[{**scenario.researcher(), "mode": mode}])
        out[mode] = (model, run, by_child(model))
    return out


@pytest.mark.parametrize("mode", ["isolated", "fork"])
def test_both_modes_finish_the_job(runs, mode):
    _, run, groups = runs[mode]
    assert run.error is None
    assert run.score.goal_completed and run.score.needle_correct
    assert set(groups) == {"parent", *COMPANIES}
    assert all(len(groups[name]) == 3 for name in COMPANIES)


@pytest.mark.parametrize("name", list(COMPANIES))
def test_a_forked_child_inherits_the_parents_conversation_an_isolated_one_does_not(runs, name):
    fork_first = runs["fork"][2][name][0].messages
    iso_first = runs["isolated"][2][name][0].messages
    assert [m.type for m in iso_first] == ["system", "human"]
    assert iso_first[-1].text == scenario.research_request(COMPANIES[name])
    assert [m.type for m in fork_first] == ["system", "human", "human"]  # the pending task call dropped
    assert fork_first[1].text == scenario.FANOUT
    assert fork_first[-1].text == _FORK_TASK_PREAMBLE + scenario.research_request(COMPANIES[name])
    assert not any(scenario.FANOUT in m.text for c in runs["isolated"][2][name] for m in c.messages)


def test_calls_by_context_sees_every_fork_as_the_parent(runs):
    assert len(calls_by_context(runs["isolated"][0].calls)) == 6
    assert len(calls_by_context(runs["fork"][0].calls)) == 1


def test_worked_example_every_forked_call_pays_the_same_extra(runs):
    iso, fork = runs["isolated"][2], runs["fork"][2]
    extra = {b.input_tokens - a.input_tokens for n in COMPANIES for a, b in zip(iso[n], fork[n], strict=True)}
    assert extra == {652}
    children = sum(c.input_tokens for n in COMPANIES for c in fork[n]) - \
        sum(c.input_tokens for n in COMPANIES for c in iso[n])
    assert children == 652 * 15
    assert set(fork["Brightloom"][0].tools) - set(iso["Brightloom"][0].tools) == {"task"}


def test_the_same_replies_and_report_and_the_recorder_rides_into_forks(runs):
    def replies(run):
        return [m.content for m in run.messages if isinstance(m, ToolMessage) and m.name == "task"]
    (_, iso_run, iso_groups), (fork_model, fork_run, _) = runs["isolated"], runs["fork"]
    assert replies(fork_run) == replies(iso_run)
    assert fork_run.files[scenario.REPORT_PATH] == iso_run.files[scenario.REPORT_PATH]
    assert len(iso_run.records) == len(iso_groups["parent"])
    assert len(fork_run.records) == len(fork_model.calls)  # deepagents gives a fork the parent's middleware
