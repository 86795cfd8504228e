"""The running example: a weekly competitor report, researched by an agent.

Notebook 01 introduces it; every later notebook reuses it. Every Monday the agent researches five
(fictional) competitors — a market-data export each, some tens of thousands of tokens, and a news
digest — writes ``/reports/weekly.md``, adds a risks note on feedback, and finally answers a
question that needs one exact figure buried in the first export: the *needle*.

Its parts: ``texts`` (what the user says), ``data`` (the data set and its two tools), ``toolbox``
(thirty tools the task never needs), ``steps`` (the tasks the lab model follows), ``harness``
(``agent()``, ``run()``, ``capture()`` / ``acapture()`` for your own agent) and ``results``
(``Run``, ``score()``), every name importable from here. What it leaves out: deciding what to do
next — the model's.
"""

from labkit.scenario.data import (
    Needle,
    companies,
    data_dir,
    export_text,
    memory_files,
    memory_store,
    memory_text,
    meta,
    needle,
    news_text,
    skill_files,
    skill_text,
    state_dir,
    tools,
    transcript_text,
    with_transcript,
)
from labkit.scenario.harness import acapture, agent, capture, run
from labkit.scenario.results import Run, Score, hands_back, load_run, score
from labkit.scenario.steps import Step, Task, notes_path, research_request, researcher, tasks
from labkit.scenario.texts import (
    BRIEFINGS,
    BRIEFINGS_DIR,
    FANOUT,
    FANOUT_TURNS,
    FEEDBACK,
    MEMORY_NAMESPACE,
    MEMORY_PATH,
    NEEDLE_QUESTION,
    NOTES_DIR,
    NOTES_INSTRUCTION,
    PREFERENCE_TURN,
    QBR_REQUEST,
    QBR_SKILL_PATH,
    REPORT_LIMIT,
    REPORT_PATH,
    REQUEST,
    RESEARCHER_DESCRIPTION,
    RESEARCHER_PROMPT,
    RESEARCHER_ROLE,
    RISKS_PATH,
    SHARED_NOTES_INSTRUCTION,
    SHARED_NOTES_PATH,
    SKILLS_SOURCE,
    TRANSCRIPT_NOTE,
    TURNS,
    UNLIMITED_RESEARCHER_PROMPT,
)
from labkit.scenario.toolbox import TOOLBOX, Toolbox, toolbox

__all__ = [
    "BRIEFINGS",
    "BRIEFINGS_DIR",
    "FANOUT",
    "FANOUT_TURNS",
    "FEEDBACK",
    "MEMORY_NAMESPACE",
    "MEMORY_PATH",
    "NEEDLE_QUESTION",
    "NOTES_DIR",
    "NOTES_INSTRUCTION",
    "PREFERENCE_TURN",
    "QBR_REQUEST",
    "QBR_SKILL_PATH",
    "REPORT_LIMIT",
    "REPORT_PATH",
    "REQUEST",
    "RESEARCHER_DESCRIPTION",
    "RESEARCHER_PROMPT",
    "RESEARCHER_ROLE",
    "RISKS_PATH",
    "SHARED_NOTES_INSTRUCTION",
    "SHARED_NOTES_PATH",
    "SKILLS_SOURCE",
    "TOOLBOX",
    "TRANSCRIPT_NOTE",
    "TURNS",
    "UNLIMITED_RESEARCHER_PROMPT",
    "Needle",
    "Run",
    "Score",
    "Step",
    "Task",
    "Toolbox",
    "acapture",
    "agent",
    "capture",
    "companies",
    "data_dir",
    "export_text",
    "hands_back",
    "load_run",
    "memory_files",
    "memory_store",
    "memory_text",
    "meta",
    "needle",
    "news_text",
    "notes_path",
    "research_request",
    "researcher",
    "run",
    "score",
    "skill_files",
    "skill_text",
    "state_dir",
    "tasks",
    "toolbox",
    "tools",
    "transcript_text",
    "with_transcript",
]
