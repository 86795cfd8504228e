"""The checker of notebook 12's design task passes specs that keep the parent small and refuses
the rest with the reason: no delegation (a vague description), a parent that grew (no limit on the
reply), or a needle lost. Each answer is run by the checker itself — behaviour, not text."""

import pytest

from labkit import scenario
from labkit.exercises import nb12
from labkit.isolate import SubagentSpec


@pytest.mark.parametrize("answer", [
    scenario.researcher(),
    scenario.researcher(notes=True),
    SubagentSpec(**scenario.researcher()),
], ids=["the researcher", "with notes in files", "as a SubagentSpec"])
def test_q1_accepts_specs_that_keep_the_parent_small(answer):
    assert nb12.q1.check(answer) == "Correct!"


def test_q1_solution_passes():
    assert nb12.q1.check(nb12.q1.solve()) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    (nb12.draft(), "made no task\\(\\) call"),
    ({**nb12.draft(), "description": scenario.RESEARCHER_DESCRIPTION}, "largest request was"),
    ({**scenario.researcher(), "description": "Helps the main agent with tasks."}, "made no task\\(\\) call"),
    ({**scenario.researcher(), "tools": "fetch"}, "does not build"),
    ("researcher", "a spec dict"),
], ids=["the draft", "description only", "prompt only", "bad tools", "a name"])
def test_q1_refuses_with_the_reason(wrong, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb12.q1.require(wrong)


@pytest.mark.parametrize("description", [
    "Researches one competitor: its market-data export and its news, as a short report.",
    "Looks into a single rival company and reports back.",
    "Analyzes one firm's market data.",
    "Reads a business's weekly news and export, then summarizes it.",
    "Does the research for one ticker.",
], ids=["competitor", "rival company", "firm's market data", "business news", "ticker research"])
def test_q1_reads_the_description_broadly_enough_for_careful_wordings(description):
    """The lab parent delegates to a description that says who the work is about or what it is —
    the rule the notebook writes out — not only to one that says 'competitor'."""
    assert nb12.q1.check({**scenario.researcher(), "description": description}) == "Correct!"


@pytest.mark.parametrize("description", ["Helps the main agent with tasks.", "A general helper.",
                                         "Writes short poems on request."])
def test_q1_still_refuses_a_description_that_names_no_job(description):
    with pytest.raises(AssertionError, match=r"Not yet: .*made no task\(\) call"):
        nb12.q1.require({**scenario.researcher(), "description": description})
