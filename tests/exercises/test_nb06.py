"""The checker of notebook 06's exercise accepts right answers and rejects wrong ones.

Every answer is checked by running the scenario with those tools excluded, so these tests also
pin down deepagents 0.7.32's behaviour: the tools ``create_deep_agent`` binds by default, which
of them the 60k run calls, and what excluding one does.
"""

import pytest

from labkit.exercises import nb06

UNUSED = {"ls", "edit_file", "delete", "glob", "task"}


def test_the_default_run_binds_ten_tools_and_calls_four():
    run, model = nb06._run(frozenset())
    assert model.calls[0].tools == ["ls", "read_file", "write_file", "edit_file", "delete", "glob",
                                    "grep", "task", "fetch_market_data", "search_news"]
    assert set(nb06._called(run)) == {"fetch_market_data", "search_news", "write_file", "grep"}
    assert run.score.goal_completed and run.score.needle_correct


@pytest.mark.parametrize("right", [
    UNUSED,                       # read_file kept as the fallback
    UNUSED | {"read_file"},       # grep alone reads the archive back
    UNUSED | {"grep"},            # read_file pages through it instead
    sorted(UNUSED),               # a list is fine too
    tuple(UNUSED | {"read_file"}),
])
def test_q1_right_answers_pass(right):
    assert nb06.q1.check(right) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    ("ls", "a set of tool names"),
    ({"ls", 3}, "a set of tool names"),
    (set(), r"\['ls', 'edit_file', 'delete', 'glob', 'task'\] are still sent"),
    ({"ls", "glob"}, r"\['edit_file', 'delete', 'task'\] are still sent"),
    (UNUSED | {"Grep"}, r"\['Grep'\] is not the name of a tool"),
    (UNUSED | {"grep", "read_file"}, "without grep or read_file"),
    (UNUSED | {"write_file"}, "did not finish its work: /reports/weekly.md does not cover"),
    (UNUSED | {"search_news"}, "search_news was called 0 times instead of 5"),
    (UNUSED | {"fetch_market_data"}, "fetch_market_data was called 0 times"),
])
def test_q1_wrong_answers_fail_with_a_reason(wrong, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb06.q1.require(wrong)


def test_an_excluded_tool_is_hidden_from_every_call_and_the_tax_drops():
    _, base = nb06._run(frozenset())
    _, lean = nb06._run(frozenset(UNUSED))
    assert all(not UNUSED & set(c.tools) for c in lean.calls)
    assert nb06._tax(lean) < 0.55 * nb06._tax(base)
