"""Exercises for notebook 10 · The summary itself.

q1 asks the learner to do what the lab model does for the needle: read an exact figure back from
the archive. At a 60,000-token window labkit's ``SummarizeMiddleware`` compacts four times, and
each chained summary names only the KPIs of the export it has just folded — by the fourth,
Emberline's are gone from the summary, but every folded message is still in the archive. The
checker knows the figure from the data set (``scenario.export_text``), so it needs no run; for a
wrong figure it says whose figure it is, if it is anyone's.
"""

from __future__ import annotations

import re
from functools import cache

from labkit import LabModel, scenario
from labkit.exercises.core import Exercise
from labkit.summarize import SummarizeMiddleware, events_of

__all__ = ["KPI", "TICKER", "WINDOW", "q1"]

WINDOW = 60_000
TICKER, KPI = "EMBR", "logo_churn_q3"


@cache
def _figures() -> dict[tuple[str, str], str]:
    """Every KPI of every export: (ticker, kpi) -> the figure as written, e.g. '39.1%'."""

    found = {}
    for c in scenario.companies():
        for kpi, value in re.findall(rf"^kpi,{c['ticker']},(\w+),(\S+)$", scenario.export_text(c["ticker"]),
                                     re.M):
            found[(c["ticker"], kpi)] = value
    return found


@cache
def _chained():
    """Notebook 10's ``chained``: the run at WINDOW under SummarizeMiddleware, four compactions."""

    model = LabModel(window=WINDOW)
    return scenario.run(model, middleware=[SummarizeMiddleware(model)])


def _names() -> dict:
    """The names notebook 10 has defined by its exercise."""

    return {"chained": _chained(), "events_of": events_of}


def _normal(value) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    text = str(value).strip().removesuffix("%").strip()
    try:
        return f"{float(text):g}"
    except ValueError:
        return None


def _check_q1(answer) -> str | None:
    got = _normal(answer)
    if got is None:
        return ("answer with the figure as it is written in the archive, a string such as '12.3%' "
                f"(not {answer!r})")
    right = _figures()[(TICKER, KPI)]
    if got == _normal(right):
        return None
    owners = [f"{t}'s {k}" for (t, k), v in _figures().items() if _normal(v) == got]
    if owners:
        return (f"{answer!r} is {' and '.join(owners)}, not {TICKER}'s {KPI}: search the archive for the "
                f"whole line kpi,{TICKER},{KPI},...")
    return (f"{answer!r} is no figure of any export: the summary does not hold it, so it cannot be read "
            "there — read it from the archive file")


q1 = Exercise(
    prompt=f"On the {WINDOW:,}-token run of section 5, the last summary no longer names any of "
           f"Emberline's KPIs. Read Emberline's Q3 logo churn ({TICKER}'s {KPI}) back from the "
           "archive and give the exact figure, as written there (e.g. '12.3%').",
    checker=_check_q1,
    hints=[
        "The archive's path is in every event (events_of(chained.state)[-1].archive), and the file's "
        "text is in chained.files under that path.",
        f"Each folded tool result is there word for word; the line you want starts with "
        f"'kpi,{TICKER},{KPI},'.",
        "archive = chained.files[events_of(chained.state)[-1].archive]; then look at the lines of "
        "archive.splitlines() that contain that prefix.",
    ],
    solution_text="archive = chained.files[events_of(chained.state)[-1].archive]\n"
                  f"line = next(l for l in archive.splitlines() if l.startswith('kpi,{TICKER},{KPI},'))\n"
                  "answer = line.split(',')[-1]",
    given=_names,
)
