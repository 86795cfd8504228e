"""What "done" looks like: the tasks a user message asks for, and the steps that finish them.

Notebook 05 introduces them. A step is done when its ``evidence`` text is visible in the context
(a tool result's own header, or a summary or progress-file line that quotes it): the lab model
takes the first step whose evidence it cannot see, so a summary that drops the evidence makes it
repeat the work. Notebook 12 adds the researcher subagent the fan-out gives each competitor to.

What it leaves out: the decision of *what to do next*. That is the model's — the lab model
(``labkit.model``) reads these tasks; a real model reads the same tools and prompts and decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from labkit.scenario.data import _ticker, companies, tools
from labkit.scenario.texts import (
    BRIEFINGS,
    BRIEFINGS_DIR,
    FEEDBACK,
    NEEDLE_QUESTION,
    NOTES_DIR,
    NOTES_INSTRUCTION,
    REPORT_PATH,
    REQUEST,
    RESEARCHER_DESCRIPTION,
    RESEARCHER_PROMPT,
    RISKS_PATH,
    SHARED_NOTES_INSTRUCTION,
    UNLIMITED_RESEARCHER_PROMPT,
)

__all__ = ["Step", "Task", "notes_path", "research_request", "researcher", "tasks"]


@dataclass(frozen=True)
class Step:
    """One unit of work. Notebook 05. It is done when its ``evidence`` text is visible in the
    context: the tool result's own header, or a summary or progress-file line that quotes it."""

    key: str
    tool: str
    args: dict[str, Any]
    evidence: str


@dataclass(frozen=True)
class Task:
    """What one user message asks for: recognized by ``marker``, finished by its ``steps``.
    Notebook 05."""

    key: str
    request: str
    marker: str
    steps: tuple[Step, ...] = ()
    output: str | None = None  # the file the task must produce, if any


def _research_steps(c: dict[str, str]) -> tuple[Step, Step]:
    t = c["ticker"]
    return (
        Step(f"fetch:{t}", "fetch_market_data", {"ticker": t}, f"Market data export — {c['name']} ({t})"),
        Step(f"news:{t}", "search_news", {"ticker": t}, f"News digest — {c['name']} ({t})"),
    )


def research_request(ticker: str) -> str:
    """The task description a parent gives a researcher subagent for one competitor. Notebook 12."""
    c = next(c for c in companies() if c["ticker"] == _ticker(ticker))
    return (
        f"Research {c['name']} ({c['ticker']}) for the weekly competitor report: pull its "
        "market-data export and its news digest, then reply with a short report."
    )


def notes_path(ticker: str) -> str:
    """Where a researcher asked for raw notes (``NOTES_INSTRUCTION``) saves them. Notebook 12."""
    return f"{NOTES_DIR}/{_ticker(ticker)}.md"


def researcher(notes: bool | str = False, *, limit: bool = True,
               **tool_options: Any) -> dict[str, Any]:
    """The fan-out's researcher subagent as a spec dict: ``name``, ``description``,
    ``system_prompt``, ``tools`` (the two data tools; ``tool_options`` go to ``tools()``).
    Notebook 12.

    deepagents takes it as a ``SubAgent`` (``create_deep_agent(subagents=[researcher()])``) and
    ``labkit.isolate.SubagentSpec(**researcher())`` takes the same keys. ``notes=True`` adds
    ``NOTES_INSTRUCTION`` to the prompt: raw data goes to a file, not into the reply (one file per
    company); ``notes="shared"`` asks every researcher for the same file, ``SHARED_NOTES_PATH``
    (parallel children writing one file). ``limit=False`` takes the limit on the reply
    (``REPORT_LIMIT``) out of the prompt: ``UNLIMITED_RESEARCHER_PROMPT``.
    """
    if not (notes is False or notes is True or notes == "shared"):
        raise ValueError(f"notes must be False, True or 'shared', got {notes!r}")
    instruction = SHARED_NOTES_INSTRUCTION if notes == "shared" else NOTES_INSTRUCTION
    base = RESEARCHER_PROMPT if limit else UNLIMITED_RESEARCHER_PROMPT
    prompt = f"{base} {instruction}" if notes else base
    return {"name": "researcher", "description": RESEARCHER_DESCRIPTION, "system_prompt": prompt,
            "tools": tools(**tool_options)}


@cache
def tasks() -> tuple[Task, ...]:
    """The scenario's tasks, most specific first (a reader matches the first marker it sees).
    Notebook 05."""
    research = []
    for c in companies():
        research.append(Task(
            key=f"research:{c['ticker']}",
            request=research_request(c["ticker"]),
            marker=f"Research {c['name']} ({c['ticker']}) for the weekly competitor report",
            steps=_research_steps(c),
        ))
    report_steps = [s for c in companies() for s in _research_steps(c)]
    report_steps.append(Step("write:report", "write_file", {"file_path": REPORT_PATH},
                             f"Updated file {REPORT_PATH}"))
    briefing_steps = []
    for c in companies():
        briefing_steps.append(_research_steps(c)[1])
        path = f"{BRIEFINGS_DIR}/{c['ticker']}.md"
        briefing_steps.append(Step(f"write:briefing:{c['ticker']}", "write_file", {"file_path": path},
                                   f"Updated file {path}"))
    return (
        *research,
        Task("briefings", BRIEFINGS, "write a one-page briefing for each competitor",
             tuple(briefing_steps), output=BRIEFINGS_DIR),
        Task("needle", NEEDLE_QUESTION, "Q3 net revenue retention in its market-data export"),
        Task("risks", FEEDBACK, "add a risks note",
             (Step("write:risks", "write_file", {"file_path": RISKS_PATH}, f"Updated file {RISKS_PATH}"),),
             output=RISKS_PATH),
        Task("report", REQUEST, "Prepare this week's competitor report", tuple(report_steps),
             output=REPORT_PATH),
    )
