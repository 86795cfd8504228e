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
