"""The checker of notebook 10's exercise accepts the right answer and rejects wrong ones.

The premise is pinned too: in this week's 60k run the figure is in the archive, exactly once, and
nowhere the agent could read it otherwise — not in the view of its last call (summary included),
not in the data set on disk.
"""

import pytest

from labkit import scenario
from labkit.exercises import nb10

RIGHT = nb10.THIS_WEEK
ON_DISK = "39.1%"  # kpi,EMBR,logo_churn_q3 in data/exports/EMBR.csv: last week's


def test_the_figure_is_only_in_the_archive():
    week = nb10.this_week()
    line = f"kpi,{nb10.TICKER},{nb10.KPI},{RIGHT}"
    archives = [t for p, t in week.files.items() if p.startswith("/conversation_history/")]
    assert len(archives) == 1
    assert archives[0].count(line) == 1
    assert not any(RIGHT in str(m.content) for m in week.view)
    assert RIGHT not in scenario.export_text(nb10.TICKER)
    assert nb10._figures()[(nb10.TICKER, nb10.KPI)] == ON_DISK


def test_the_run_still_does_its_work():
    run, _ = nb10._run()
    assert run.score.goal_completed
    assert run.score.needle_correct


@pytest.mark.parametrize("right", [RIGHT, f" {RIGHT} ", "36.8", 36.8])
def test_right_answers_pass(right):
    assert nb10.q1.check(right) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    (True, "a string such as"),
    ("thirty-nine", "a string such as"),
    (ON_DISK, "last week's figure"),
    ("73.5%", "EMBR's gross_margin_q3, not EMBR's logo_churn_q3"),
    ("19.3%", "BRLM's logo_churn_q3"),
    ("411", "BRLM's sales_cycle_days_q3 and EMBR's sales_cycle_days_q3"),
    ("12.3%", "in no KPI line"),
])
def test_wrong_answers_fail_with_a_reason(wrong, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb10.q1.require(wrong)
