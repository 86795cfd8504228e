"""Exercises for notebook 10 · The summary itself.

q1 puts the learner where the agent is after four compactions: with only what the model sees on
its last call (the summary and the kept messages) and the files (the archive among them), asked
for an exact figure. The run is notebook 10's 60,000-token chained run, on *this week's* exports:
Emberline's Q3 logo churn changed since the data set on disk was written (a small tool middleware
rewrites that one line as the export arrives), so the figure is in no file of the data set, in no
summary and in no kept message — only in the archive the summary names. The checker knows it
because it made it; for a wrong figure it says whose figure that is (last week's, or another KPI).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import BaseMessage

from labkit import LabModel, scenario
from labkit.exercises.core import Exercise
from labkit.summarize import SummarizeMiddleware

__all__ = ["KPI", "THIS_WEEK", "TICKER", "WINDOW", "AgentSees", "q1", "this_week"]

WINDOW = 60_000
TICKER, KPI = "EMBR", "logo_churn_q3"
THIS_WEEK = "36.8%"  # this week's figure; the data set on disk holds last week's


@dataclass(frozen=True)
class AgentSees:
    """What the agent has at its last model call: the view it is sent, and the files."""

    view: tuple[BaseMessage, ...]
    files: dict[str, str]


class _ThisWeek(AgentMiddleware):
    """Rewrites one KPI line of one export as it arrives: this week's figure, not the file's."""

    def wrap_tool_call(self, request, handler):
        result = handler(request)
        if request.tool_call["name"] == "fetch_market_data":
            old, new = (f"kpi,{TICKER},{KPI},{value}" for value in (_figures()[(TICKER, KPI)], THIS_WEEK))
            result = result.model_copy(update={"content": result.content.replace(old, new)})
        return result


@cache
def _figures() -> dict[tuple[str, str], str]:
    """Every KPI of every export on disk: (ticker, kpi) -> the figure as written, e.g. '39.1%'."""

    found = {}
    for c in scenario.companies():
        for kpi, value in re.findall(rf"^kpi,{c['ticker']},(\w+),(\S+)$", scenario.export_text(c["ticker"]),
                                     re.M):
            found[(c["ticker"], kpi)] = value
    return found


@cache
def _run():
    """The run and its lab model: notebook 10's chained run, on this week's exports."""

    model = LabModel(window=WINDOW)
    return scenario.run(model, middleware=[_ThisWeek(), SummarizeMiddleware(model)]), model


def this_week() -> AgentSees:
    """What the agent had at its last call of this week's run (notebook 10's exercise)."""

    run, model = _run()
    last = [c for c in model.calls if c.kind == "agent"][-1]
    return AgentSees(view=tuple(last.messages), files=dict(run.files))


def _names() -> dict:
    """The names notebook 10 has defined by its exercise."""

    return {"week": this_week(), "re": re}


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
    if got == _normal(THIS_WEEK):
        return None
    if got == _normal(_figures()[(TICKER, KPI)]):
        return (f"{answer!r} is last week's figure, the one in data/exports/{TICKER}.csv; this week's export "
                "said something else, and after four compactions only the archive still holds it — read "
                "the file the summary names")
    owners = [f"{t}'s {k}" for (t, k), v in _figures().items() if _normal(v) == got]
    if owners:
        return (f"{answer!r} is {' and '.join(owners)}, not {TICKER}'s {KPI}: search the archive for the "
                f"whole line kpi,{TICKER},{KPI},...")
    return (f"{answer!r} is in no KPI line of this week's archive: the summary does not hold the figure, "
            "so it cannot be read there — read it from the archive file")


q1 = Exercise(
    prompt=f"You are the agent at its last call of this week's {WINDOW:,}-token run: week.view is what "
           f"you are sent, week.files the files. Give {TICKER}'s {KPI} (Emberline's Q3 logo churn) "
           "exactly as this week's export wrote it (e.g. '12.3%').",
    checker=_check_q1,
    hints=[
        "It is not in the view: look at week.view[0], the summary message — it names the file where the "
        "folded messages were archived.",
        f"Each folded tool result is in that file word for word; the line you want starts with "
        f"'kpi,{TICKER},{KPI},'.",
        "path = re.search(r'word for word, in (\\S+)', week.view[0].content).group(1); then look at "
        "the lines of week.files[path] that start with that prefix.",
    ],
    solution_text="path = re.search(r'word for word, in (\\S+)', week.view[0].content).group(1)\n"
                  f"line = next(l for l in week.files[path].splitlines()\n"
                  f"            if l.startswith('kpi,{TICKER},{KPI},'))\n"
                  "answer = line.split(',')[-1]",
    given=_names,
)
