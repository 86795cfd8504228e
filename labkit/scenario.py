"""The running example: a weekly competitor report, researched by an agent.

Notebook 01 introduces it; every later notebook reuses it.

Every Monday the agent researches five (fictional) competitors. For each it pulls a market-data
export — some are tens of thousands of tokens — and a news digest, writes the report to
``/reports/weekly.md``, takes feedback (a risks note in ``/reports/risks.md``), and finally answers
a question that needs one exact figure buried in the first export: the *needle*.

This module holds the scenario as data — the tools, the goal, the tasks and their steps, the
needle — plus :func:`run`, which drives an agent through the three user turns, and :func:`score`,
which reads a finished run. The data lives in ``data/`` and is made by ``scripts/make_data.py``.

What it leaves out: the decision of *what to do next*. That belongs to the model — the lab model
(`labkit.model`) reads the tasks and steps defined here and acts on whatever evidence is in its
context; a real model reads the same tools and prompts and decides for itself.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

__all__ = [
    "FEEDBACK",
    "NEEDLE_QUESTION",
    "NOTES_INSTRUCTION",
    "SHARED_NOTES_INSTRUCTION",
    "SHARED_NOTES_PATH",
    "REQUEST",
    "BRIEFINGS",
    "FANOUT",
    "FANOUT_TURNS",
    "TURNS",
    "Run",
    "Score",
    "Step",
    "Task",
    "companies",
    "data_dir",
    "needle",
    "export_text",
    "news_text",
    "notes_path",
    "research_request",
    "researcher",
    "run",
    "score",
    "tasks",
    "tools",
    "transcript_text",
    "with_transcript",
    # notebook 13: skills and memory
    "MEMORY_NAMESPACE",
    "MEMORY_PATH",
    "PREFERENCE_TURN",
    "QBR_REQUEST",
    "QBR_SKILL_PATH",
    "SKILLS_SOURCE",
    "memory_files",
    "memory_store",
    "memory_text",
    "skill_files",
    "skill_text",
]

REPORT_PATH = "/reports/weekly.md"
RISKS_PATH = "/reports/risks.md"

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
BRIEFINGS_DIR = "/reports/briefings"
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
RESEARCHER_PROMPT = (
    "You research one competitor for the weekly competitor report. Pull its market-data export and "
    "its news digest, then reply with a short report: each KPI with its exact figure, and the "
    "week's headline. The caller sees only your final reply, never your tool results."
)


def transcript_text() -> str:
    """The fictional transcript of a long meeting (about 60,000 tokens): the pasted human
    message of notebook 05."""
    return (data_dir() / "transcripts" / "weekly-sync.md").read_text(encoding="utf-8")


def with_transcript(request: str = REQUEST) -> str:
    """A user message that pastes the whole meeting transcript after ``request``."""
    return f"{request}\n\n{TRANSCRIPT_NOTE}\n\n{transcript_text()}"


def data_dir() -> Path:
    """Where the data set lives: ``$LABKIT_DATA`` or the repository's ``data/``."""
    path = Path(os.environ.get("LABKIT_DATA") or Path(__file__).resolve().parent.parent / "data")
    if not (path / "companies.json").is_file():
        raise FileNotFoundError(
            f"labkit's data set is missing: no companies.json in {path}. Run "
            "`python scripts/make_data.py` in the repository, or set LABKIT_DATA to its data/ folder."
        )
    return path


@cache
def _meta() -> dict[str, Any]:
    return json.loads((data_dir() / "companies.json").read_text(encoding="utf-8"))


def companies() -> list[dict[str, str]]:
    """The five fictional competitors: ``name``, ``ticker``, ``sector``."""
    return list(_meta()["companies"])


@dataclass(frozen=True)
class Needle:
    ticker: str
    kpi: str
    answer: str
    question: str = NEEDLE_QUESTION

    @property
    def pattern(self) -> str:
        """The literal text a search for the fact should look for."""
        return self.kpi

    def find(self, text: str) -> str | None:
        """The value recorded next to the KPI in ``text``, if the full line is there."""
        m = re.search(rf"kpi,{self.ticker},{self.kpi},(\d+(?:\.\d+)?%)", text)
        return m.group(1) if m else None


def _needle() -> Needle:
    n = _meta()["needle"]
    return Needle(n["ticker"], n["kpi"], n["value"])


def _ticker(value: str) -> str:
    v = value.strip()
    for c in companies():
        if v.upper() == c["ticker"] or v.lower() == c["name"].lower():
            return c["ticker"]
    allowed = ", ".join(f"{c['ticker']} ({c['name']})" for c in companies())
    raise ValueError(f"unknown competitor {value!r}; choose one of {allowed}")


def export_text(ticker: str, scale: float = 1.0) -> str:
    """The market-data export of one competitor, as the tool returns it.

    ``scale`` resizes it for the size slider: the header and the KPI block (the needle) always
    stay; the daily rows are cut to that fraction, or repeated past 1.0, up to 4.0.
    """
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 0 < scale <= 4:
        raise ValueError(f"scale must be a number in (0, 4], got {scale!r}")
    text = (data_dir() / "exports" / f"{_ticker(ticker)}.csv").read_text(encoding="utf-8")
    if scale == 1:
        return text
    lines = text.rstrip("\n").split("\n")
    head, body, tail = lines[:4], lines[4:-1], lines[-1:]
    start = next(i for i, line in enumerate(body) if line.startswith("# KPI block"))
    end = start + 1 + sum(1 for line in body[start + 1:] if line.startswith("kpi,"))
    kpis, rows = body[start:end], body[:start] + body[end:]
    n = max(2, round(len(rows) * scale))
    rows = (rows * (n // len(rows) + 1))[:n]
    return "\n".join(head + rows[: n // 2] + kpis + rows[n // 2:] + tail) + "\n"


def news_text(ticker: str, language: str = "en") -> str:
    """The news digest of one competitor, in English (``en``) or Chinese (``zh``)."""
    folder = {"en": "news", "zh": "news_zh"}.get(language)
    if folder is None:
        raise ValueError(f"language must be 'en' or 'zh', not {language!r}")
    return (data_dir() / folder / f"{_ticker(ticker)}.md").read_text(encoding="utf-8")


def tools(news_language: str = "en", export_scale: float = 1.0) -> list:
    """The scenario's two data tools, backed by ``data/``. An unknown ticker gets an answer
    listing the allowed ones, never an exception the agent loop would choke on.
    ``export_scale`` resizes every export (see :func:`export_text`)."""
    if news_language not in ("en", "zh"):
        raise ValueError(f"news_language must be 'en' or 'zh', not {news_language!r}")
    export_text("BRLM", export_scale)  # validates the scale now, not on the first call

    @tool
    def fetch_market_data(ticker: str) -> str:
        """Fetch this week's market-data export for one competitor: a large CSV of daily rows with
        a block of quarterly KPIs. `ticker` is one of BRLM, CRVD, DRFT, EMBR, FERN."""
        try:
            return export_text(ticker, export_scale)
        except ValueError as e:
            return f"Error: {e}"

    @tool
    def search_news(ticker: str) -> str:
        """Return this week's news digest for one competitor. `ticker` is one of BRLM, CRVD,
        DRFT, EMBR, FERN."""
        try:
            return news_text(ticker, news_language)
        except ValueError as e:
            return f"Error: {e}"

    return [fetch_market_data, search_news]


# ---------------------------------------------------------------------------------------------
# Tasks and steps: what "done" looks like, as evidence a reader of the context can check.


@dataclass(frozen=True)
class Step:
    """One unit of work. It is done when its ``evidence`` text is visible in the context: the
    tool result's own header, or a summary or progress-file line that quotes it."""

    key: str
    tool: str
    args: dict[str, Any]
    evidence: str


@dataclass(frozen=True)
class Task:
    """What one user message asks for: recognized by ``marker``, finished by its ``steps``."""

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
    """The task description a parent gives a researcher subagent for one competitor."""
    c = next(c for c in companies() if c["ticker"] == _ticker(ticker))
    return (
        f"Research {c['name']} ({c['ticker']}) for the weekly competitor report: pull its "
        "market-data export and its news digest, then reply with a short report."
    )


def notes_path(ticker: str) -> str:
    """Where a researcher asked for raw notes (``NOTES_INSTRUCTION``) saves them."""
    return f"{NOTES_DIR}/{_ticker(ticker)}.md"


def researcher(notes: bool | str = False, **tool_options: Any) -> dict[str, Any]:
    """The fan-out's researcher subagent as a spec dict: ``name``, ``description``,
    ``system_prompt``, ``tools`` (the two data tools; ``tool_options`` go to :func:`tools`).

    deepagents takes it as a ``SubAgent`` (``create_deep_agent(subagents=[researcher()])``) and
    ``labkit.isolate.SubagentSpec(**researcher())`` takes the same keys. ``notes=True`` adds
    ``NOTES_INSTRUCTION`` to the prompt: raw data goes to a file, not into the reply (one file per
    company); ``notes="shared"`` asks every researcher for the same file, ``SHARED_NOTES_PATH``
    (notebook 12: parallel children writing one file).
    """
    if not (notes is False or notes is True or notes == "shared"):
        raise ValueError(f"notes must be False, True or 'shared', got {notes!r}")
    instruction = SHARED_NOTES_INSTRUCTION if notes == "shared" else NOTES_INSTRUCTION
    prompt = f"{RESEARCHER_PROMPT} {instruction}" if notes else RESEARCHER_PROMPT
    return {"name": "researcher", "description": RESEARCHER_DESCRIPTION, "system_prompt": prompt,
            "tools": tools(**tool_options)}


@cache
def tasks() -> tuple[Task, ...]:
    """The scenario's tasks, most specific first (a reader matches the first marker it sees)."""
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


def needle() -> Needle:
    """The needle: one exact KPI from the first export, and the question that needs it."""
    return _needle()


# ---------------------------------------------------------------------------------------------
# Skills and memory (notebook 13): a QBR-format skill read on demand, and the user's preferences
# in an AGENTS.md memory. The texts live in data/ (made by scripts/make_data.py); these helpers
# put them where deepagents' SkillsMiddleware and MemoryMiddleware look for them.

SKILLS_SOURCE = "/skills/"  # create_deep_agent(skills=[SKILLS_SOURCE])
QBR_SKILL_PATH = f"{SKILLS_SOURCE}qbr-report/SKILL.md"
MEMORY_PATH = "/memories/AGENTS.md"  # create_deep_agent(memory=[MEMORY_PATH])
MEMORY_NAMESPACE = ("labkit", "memories")  # where memory_store() keeps it in a langgraph store
QBR_REQUEST = (
    "Prepare this week's competitor report, in our QBR format. For each of our five competitors "
    "(Brightloom, Corvid Systems, Driftwood Data, Emberline, Fernhollow Labs) pull its market-data "
    f"export and its news digest, then write the report to {REPORT_PATH}."
)
# A user turn that states a lasting preference (the lab model records it in its memory file).
PREFERENCE_TURN = "From now on, always end reports with a 'Sources' line."


def skill_text() -> str:
    """The QBR-format skill: a SKILL.md with YAML front matter (name, description, allowed-tools)."""
    return (data_dir() / "skills" / "qbr-report" / "SKILL.md").read_text(encoding="utf-8")


def memory_text() -> str:
    """The user's preferences as an AGENTS.md memory file."""
    return (data_dir() / "memory" / "AGENTS.md").read_text(encoding="utf-8")


def _file_data(text: str) -> dict[str, Any]:
    from deepagents.backends.utils import create_file_data

    return create_file_data(text)


def skill_files() -> dict[str, dict[str, Any]]:
    """The skill as deepagents file data, to seed a thread's state: ``run(..., files=...)``."""
    return {QBR_SKILL_PATH: _file_data(skill_text())}


def memory_files(path: str = MEMORY_PATH) -> dict[str, dict[str, Any]]:
    """The memory as deepagents file data in the thread's state — it dies with the thread."""
    return {path: _file_data(memory_text())}


def memory_store(store=None, key: str = "/AGENTS.md"):
    """A langgraph store (a new ``InMemoryStore`` unless given) holding the memory file under
    ``MEMORY_NAMESPACE``. Route the memory folder to it with ``CompositeBackend(default=
    StateBackend(), routes={"/memories/": StoreBackend(namespace=lambda rt: MEMORY_NAMESPACE,
    store=store)})``: the route's prefix is cut off, so ``/memories/AGENTS.md`` is ``key``."""
    if store is None:
        from langgraph.store.memory import InMemoryStore

        store = InMemoryStore()
    if not key.startswith("/"):
        raise ValueError(f"key must be an absolute path inside the routed folder, like "
                         f"'/AGENTS.md', not {key!r}")
    store.put(MEMORY_NAMESPACE, key, {"content": memory_text(), "encoding": "utf-8"})
    return store


# ---------------------------------------------------------------------------------------------
# Running and scoring


@dataclass
class Run:
    """A finished (or failed) run of the scenario."""

    messages: list[BaseMessage]
    files: dict[str, str]
    records: list = field(default_factory=list)  # labkit.trace.CallRecord, one per model call
    error: BaseException | None = None
    turns_completed: int = 0
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def score(self) -> "Score":
        return score(self)


@dataclass(frozen=True)
class Score:
    goal_completed: bool
    steps_repeated: int
    needle_correct: bool
    goal_lost: int = 0
    repeated: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    error: str | None = None

    def __str__(self) -> str:
        parts = [
            f"goal completed: {'yes' if self.goal_completed else 'no'}",
            f"steps repeated: {self.steps_repeated}",
            f"needle answered correctly: {'yes' if self.needle_correct else 'no'}",
        ]
        if self.goal_lost:
            parts.append(f"lost the goal: {self.goal_lost}x")
        if self.error:
            parts.append(f"error: {self.error}")
        return " | ".join(parts)


def _text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else message.text


def score(result: Run) -> Score:
    """Read a finished run: was the goal completed, how many steps were repeated, and was the
    needle answered with the exact figure? Works on any model's run, not only the lab model's."""
    calls = Counter()
    for m in result.messages:
        if isinstance(m, AIMessage):
            for tc in m.tool_calls:
                if tc["name"] in ("fetch_market_data", "search_news"):
                    try:
                        calls[f"{tc['name']}:{_ticker(str(tc['args'].get('ticker', '')))}"] += 1
                    except ValueError:
                        pass
    repeated = tuple(sorted(k for k, n in calls.items() if n > 1))
    missing = []
    report = result.files.get(REPORT_PATH, "")
    for c in companies():
        if c["name"] not in report:
            missing.append(f"{REPORT_PATH} does not cover {c['name']}")
    if RISKS_PATH not in result.files:
        missing.append(f"{RISKS_PATH} was not written")
    from labkit.prompts import GOAL_LOST

    answers = [m for m in result.messages if isinstance(m, AIMessage) and not m.tool_calls]
    last_answer = _text(answers[-1]) if answers else ""
    asked = any(isinstance(m, HumanMessage) and _text(m) == NEEDLE_QUESTION for m in result.messages)
    return Score(
        goal_completed=not missing and result.error is None,
        steps_repeated=sum(n - 1 for n in calls.values() if n > 1),
        needle_correct=asked and needle().answer in last_answer,
        goal_lost=sum(_text(m) == GOAL_LOST for m in answers),
        repeated=repeated,
        missing=tuple(missing),
        error=None if result.error is None else f"{type(result.error).__name__}: {result.error}",
    )


def _file_text(data: Any) -> str:
    if isinstance(data, dict):
        content = data.get("content", "")
        return "\n".join(content) if isinstance(content, list) else str(content)
    return str(data)


def _seed_files(files: dict[str, Any] | None) -> dict[str, Any]:
    """``run(files=...)`` as deepagents file data; a path must be absolute, a value text or
    file data (a dict with ``content``)."""
    seed = {}
    for path, data in (files or {}).items():
        if not isinstance(path, str) or not path.startswith("/"):
            raise ValueError(f"files: {path!r} is not an absolute path such as '/skills/x/SKILL.md'")
        if isinstance(data, str):
            data = _file_data(data)
        if not (isinstance(data, dict) and "content" in data):
            raise ValueError(f"files[{path!r}] must be text or deepagents file data (a dict with "
                             f"'content'), not {type(data).__name__}")
        seed[path] = data
    return seed


def run(
    model=None,
    *,
    middleware=(),
    harness: str = "agent",
    turns=TURNS,
    news_language: str = "en",
    export_scale: float = 1.0,
    recorder=None,
    recursion_limit: int = 200,
    files: dict[str, Any] | None = None,
    thread_id: str = "lab",
    **agent_kwargs,
) -> Run:
    """Drive an agent through the scenario's user turns on one thread and return the :class:`Run`.

    ``harness="agent"`` builds langchain's ``create_agent`` with deepagents' file tools
    (``FilesystemMiddleware`` with its eviction switched off, so nothing is offloaded unless you
    add a middleware that does it). ``harness="deep"`` builds ``deepagents.create_deep_agent``
    with its whole default stack. A recording middleware (``labkit.trace.Recorder``) is placed
    after your ``middleware``, so each record is what the model saw once they had edited the
    request. Under ``create_agent`` that is the innermost layer. Under ``create_deep_agent`` a few
    deepagents layers still come after it (prompt caching, unsupported-content notices, and the
    tool exclusion of a harness profile): with ``excluded_tools`` the record overcounts the tool
    schemas, and the model's ``reported_input`` is the true count.

    A model error — a context overflow above all — ends the run; it is kept in ``Run.error``.

    ``files`` seeds the thread's state files on the first turn (``{path: text or deepagents file
    data}``, e.g. :func:`skill_files`); ``thread_id`` names the thread. Each run has its own
    checkpointer, so two runs never share a thread: what outlives one must live in a store
    (``store=`` goes to the agent with the other ``agent_kwargs``).
    """
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from labkit.model import get_model
    from labkit.trace import Recorder

    if harness not in ("agent", "deep"):
        raise ValueError(f"harness must be 'agent' or 'deep', not {harness!r}")
    model = get_model() if model is None else model
    recorder = Recorder() if recorder is None else recorder
    stack = [*middleware, recorder]
    if harness == "agent":
        from deepagents.middleware.filesystem import FilesystemMiddleware

        fs = FilesystemMiddleware(tool_token_limit_before_evict=None,
                                  human_message_token_limit_before_evict=None)
        agent = create_agent(model, tools=tools(news_language, export_scale), middleware=[fs, *stack],
                             checkpointer=InMemorySaver(), **agent_kwargs)
    else:
        from deepagents import create_deep_agent

        agent = create_deep_agent(model, tools=tools(news_language, export_scale), middleware=stack,
                                  checkpointer=InMemorySaver(), **agent_kwargs)
    config = {"configurable": {"thread_id": thread_id}, "recursion_limit": recursion_limit}
    seed = _seed_files(files)
    error = None
    done = 0
    for text in turns:
        recorder.start_turn(text)
        update = {"messages": [HumanMessage(text)]}
        if seed and done == 0:
            update["files"] = seed
        try:
            agent.invoke(update, config=config)
            done += 1
        except Exception as e:  # the run ends; what happened is kept for the learner
            error = e
            break
    state = dict(agent.get_state(config).values)
    files = {path: _file_text(data) for path, data in (state.get("files") or {}).items()}
    return Run(messages=list(state.get("messages", [])), files=files, records=recorder.records,
               error=error, turns_completed=done, state=state)
