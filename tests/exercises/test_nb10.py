"""The checker of notebook 10's exercise accepts the right answer and rejects wrong ones.

The premise is pinned too: on the 60k run under SummarizeMiddleware the last summary no longer names
Emberline's Q3 logo churn, while the archive holds the figure, word for word, exactly once.
"""

from functools import cache

import pytest

from labkit import LabModel, scenario
from labkit.exercises import nb10
from labkit.summarize import SummarizeMiddleware, events_of

RIGHT = "39.1%"  # kpi,EMBR,logo_churn_q3 in data/exports/EMBR.csv


@cache
def _chained():
    model = LabModel(window=nb10.WINDOW)
    return scenario.run(model, middleware=[SummarizeMiddleware(model)])


def test_the_figure_is_in_the_archive_and_not_in_the_last_summary():
    run = _chained()
    last = events_of(run.state)[-1]
    line = f"kpi,{nb10.TICKER},{nb10.KPI},{RIGHT}"
    assert run.files[last.archive].count(line) == 1
    assert f"{nb10.TICKER} {nb10.KPI}" not in last.summary and RIGHT not in last.summary
    assert nb10._figures()[(nb10.TICKER, nb10.KPI)] == RIGHT


@pytest.mark.parametrize("right", [RIGHT, " 39.1% ", "39.1", 39.1])
def test_right_answers_pass(right):
    assert nb10.q1.check(right) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    (None, "a string such as"),
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
        nb10.q1.check(wrong)


def test_the_solution_reads_the_figure_from_the_archive():
    namespace = {"chained": _chained(), "events_of": events_of}
    exec(nb10.q1.solution(), namespace)
    assert nb10.q1.check(namespace["answer"]) == "Correct!"


def test_hints_unlock_one_at_a_time():
    ex = nb10.q1
    ex._hints_shown = 0
    assert ex.hint().startswith("Hint 1/3") and ex.hint().startswith("Hint 2/3")
    assert ex.hint().startswith("Hint 3/3") and ex.hint().startswith("Hint 3/3")
