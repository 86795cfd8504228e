"""What the scenario's user and parent agent say, and the paths they name: text apart from logic.

Notebook 01 introduces the three user turns (``TURNS``); notebook 05 adds the briefings and the
pasted transcript, notebook 12 the fan-out to researcher subagents and their notes, notebook 13
the QBR skill and the user's memory. Keep them here so a change of wording is one visible diff.

What it leaves out: logic. Nothing here reads ``data/`` or builds a tool (see ``data`` and
``steps`` beside it).
"""

from __future__ import annotations

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
    "TRANSCRIPT_NOTE",
    "TURNS",
    "UNLIMITED_RESEARCHER_PROMPT",
]

# The files the user asks for.
REPORT_PATH = "/reports/weekly.md"
RISKS_PATH = "/reports/risks.md"
BRIEFINGS_DIR = "/reports/briefings"

# The three user turns of every run (notebook 01).
REQUEST = (
    "Prepare this week's competitor report. For each of our five competitors (Brightloom, Corvid "
    "Systems, Driftwood Data, Emberline, Fernhollow Labs) pull its market-data export and its news "
    f"digest, then write the report to {REPORT_PATH}."
)
FEEDBACK = (
    "Thanks. Please add a risks note: one line of risk for each competitor, saved to "
    f"{RISKS_PATH}."
)
NEEDLE_QUESTION = (
    "Before I send it: what exactly was Brightloom's Q3 net revenue retention in its market-data "
    "export?"
)
TURNS = (REQUEST, FEEDBACK, NEEDLE_QUESTION)

# More work in one turn (notebook 05): a briefing per competitor, or a pasted meeting transcript.
BRIEFINGS = (
    "Before the report, write a one-page briefing for each competitor to "
    f"{BRIEFINGS_DIR}/<TICKER>.md, quoting its news digest in full."
)
TRANSCRIPT_NOTE = "Here is the transcript of this morning's sync meeting, for context:"

# The fan-out of notebook 12: the same report, each competitor researched by its own subagent.
FANOUT = (
    f"{REQUEST} Give each competitor to its own researcher subagent — one task call each, all in "
    "one message — and write the report from their replies."
)
FANOUT_TURNS = (FANOUT, FEEDBACK, NEEDLE_QUESTION)
NOTES_DIR = "/research"
NOTES_INSTRUCTION = (
    f"Save your raw notes — the whole export and digest — to {NOTES_DIR}/<TICKER>.md with "
    "write_file, and name that file in your reply."
)
SHARED_NOTES_PATH = f"{NOTES_DIR}/notes.md"  # one file for every researcher: parallel writes collide
SHARED_NOTES_INSTRUCTION = NOTES_INSTRUCTION.replace(f"{NOTES_DIR}/<TICKER>.md", SHARED_NOTES_PATH)
RESEARCHER_DESCRIPTION = (
    "Researches one competitor: pulls its market-data export and news digest and replies with a "
    "short report (every KPI with its exact figure, and the week's headline). One company per call."
)
# The researcher's role, and the limit on its reply (notebook 12): a researcher's system prompt
# without REPORT_LIMIT sets no bound on what it returns, and the lab model then returns its tool
# results whole (labkit.model.behaviour.act). UNLIMITED_RESEARCHER_PROMPT is RESEARCHER_PROMPT
# with the limit taken out, nothing else changed: both are built from the same parts.
RESEARCHER_ROLE = "You research one competitor for the weekly competitor report."
REPORT_LIMIT = "reply with a short report"
_RESEARCHER_JOB = f"{RESEARCHER_ROLE} Pull its market-data export and its news digest, then "
_RESEARCHER_CALLER = " The caller sees only your final reply, never your tool results."
RESEARCHER_PROMPT = (
    f"{_RESEARCHER_JOB}{REPORT_LIMIT}: each KPI with its exact figure, and the week's headline."
    f"{_RESEARCHER_CALLER}"
)
UNLIMITED_RESEARCHER_PROMPT = f"{_RESEARCHER_JOB}reply.{_RESEARCHER_CALLER}"

# Skills and memory (notebook 13): where deepagents' SkillsMiddleware and MemoryMiddleware look.
SKILLS_SOURCE = "/skills/"  # create_deep_agent(skills=[SKILLS_SOURCE])
QBR_SKILL_PATH = f"{SKILLS_SOURCE}qbr-report/SKILL.md"
MEMORY_PATH = "/memories/AGENTS.md"  # create_deep_agent(memory=[MEMORY_PATH])
MEMORY_NAMESPACE = ("labkit", "memories")  # where data.memory_store() keeps it in a langgraph store
QBR_REQUEST = (
    "Prepare this week's competitor report, in our QBR format. For each of our five competitors "
    "(Brightloom, Corvid Systems, Driftwood Data, Emberline, Fernhollow Labs) pull its market-data "
    f"export and its news digest, then write the report to {REPORT_PATH}."
)
# A user turn that states a lasting preference (the lab model records it in its memory file).
PREFERENCE_TURN = "From now on, always end reports with a 'Sources' line."
