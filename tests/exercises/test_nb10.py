"""The checker of notebook 10's exercise accepts the right answer and rejects wrong ones.

The premise is pinned too: on the 60k run under SummarizeMiddleware the last summary no longer names
Emberline's Q3 logo churn, while the archive holds the figure, word for word, exactly once.
"""

import pytest

from labkit.exercises import nb10
from labkit.summarize import events_of

RIGHT = "39.1%"  # kpi,EMBR,logo_churn_q3 in data/exports/EMBR.csv


def test_the_figure_is_in_the_archive_and_not_in_the_last_summary():
    run = nb10._chained()
    last = events_of(run.state)[-1]
    line = f"kpi,{nb10.TICKER},{nb10.KPI},{RIGHT}"
    assert run.files[last.archive].count(line) == 1
    assert f"{nb10.TICKER} {nb10.KPI}" not in last.summary and RIGHT not in last.summary
    assert nb10._figures()[(nb10.TICKER, nb10.KPI)] == RIGHT


@pytest.mark.parametrize("right", [RIGHT, " 39.1% ", "39.1", 39.1])
def test_right_answers_pass(right):
    assert nb10.q1.check(right) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    (True, "a string such as"),
    ("thirty-nine", "a string such as"),
    ("73.5%", "EMBR's gross_margin_q3, not EMBR's logo_churn_q3"),
    ("19.3%", "BRLM's logo_churn_q3"),
    ("117.4%", "BRLM's net_revenue_retention_q3"),
    ("411", "BRLM's sales_cycle_days_q3 and EMBR's sales_cycle_days_q3"),
    ("12.3%", "no figure of any export"),
])
def test_wrong_answers_fail_with_a_reason(wrong, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb10.q1.require(wrong)
