"""The lab's fictional data set and the two tools that serve it to an agent.

Notebook 01 introduces it: five competitors, a market-data export each (some tens of thousands of
tokens) with one exact KPI buried in the first — the *needle* — and a news digest each, in English
or Chinese; notebook 05 adds a meeting transcript, notebook 13 a skill and a memory file. The
files live in the repository's ``data/`` (or ``$LABKIT_DATA``), made by ``scripts/make_data.py``; the
wheel carries the same files as ``labkit/_data``.

What it leaves out: what the agent is asked (``texts``), what counts as done (``steps``) and
running an agent (``harness``).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from deepagents.backends.utils import create_file_data
from langchain_core.tools import tool
from langgraph.store.memory import InMemoryStore

from labkit.scenario.texts import (
    MEMORY_NAMESPACE,
    MEMORY_PATH,
    NEEDLE_QUESTION,
    QBR_SKILL_PATH,
    REQUEST,
    TRANSCRIPT_NOTE,
)

__all__ = [
    "Needle",
    "companies",
    "data_dir",
    "export_text",
    "memory_files",
    "memory_store",
    "memory_text",
    "needle",
    "news_text",
    "skill_files",
    "skill_text",
    "state_dir",
    "tools",
    "transcript_text",
    "with_transcript",
]


PACKAGED_DATA = Path(__file__).resolve().parents[1] / "_data"  # in an installed wheel only
CHECKOUT_DATA = Path(__file__).resolve().parents[2] / "data"  # labkit/scenario/data.py -> the repository


def data_dir() -> Path:
    """Where the data set lives: ``$LABKIT_DATA``, else the copy inside an installed wheel
    (``labkit/_data``), else the repository's ``data/``. Notebook 01."""
    if os.environ.get("LABKIT_DATA"):
        path = Path(os.environ["LABKIT_DATA"])
    elif (PACKAGED_DATA / "companies.json").is_file():
        path = PACKAGED_DATA
    else:
        path = CHECKOUT_DATA
    if not (path / "companies.json").is_file():
        raise FileNotFoundError(
            f"labkit's data set is missing: no companies.json in {path}. In a checkout, run "
            "`python scripts/make_data.py`; an installed labkit-context wheel carries it in "
            "labkit/_data (reinstall it); or set LABKIT_DATA to a data/ folder."
        )
    return path


@cache
def meta() -> dict[str, Any]:
    """The data set's header: the week, the companies and the needle (data/companies.json). Notebook 01."""
    return json.loads((data_dir() / "companies.json").read_text(encoding="utf-8"))


def companies() -> list[dict[str, str]]:
    """The five fictional competitors: ``name``, ``ticker``, ``sector``. Notebook 01."""
    return list(meta()["companies"])


def _ticker(value: str) -> str:
    """The ticker of a competitor named by ticker or name, any case; else a ValueError listing them."""
    v = value.strip()
    for c in companies():
        if v.upper() == c["ticker"] or v.lower() == c["name"].lower():
            return c["ticker"]
    allowed = ", ".join(f"{c['ticker']} ({c['name']})" for c in companies())
    raise ValueError(f"unknown competitor {value!r}; choose one of {allowed}")


@dataclass(frozen=True)
class Needle:
    """One exact KPI in an export, and the question that needs it. Notebook 01."""

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


def needle() -> Needle:
    """The needle: one exact KPI from the first export, and the question that needs it. Notebook 01."""
    n = meta()["needle"]
    return Needle(n["ticker"], n["kpi"], n["value"])


def export_text(ticker: str, scale: float = 1.0) -> str:
    """The market-data export of one competitor, as the tool returns it. Notebook 01.

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
    """The news digest of one competitor, in English (``en``) or Chinese (``zh``). Notebook 01."""
    folder = {"en": "news", "zh": "news_zh"}.get(language)
    if folder is None:
        raise ValueError(f"language must be 'en' or 'zh', not {language!r}")
    return (data_dir() / folder / f"{_ticker(ticker)}.md").read_text(encoding="utf-8")


def transcript_text() -> str:
    """The fictional transcript of a long meeting (about 60,000 tokens): the pasted human
    message of notebook 05."""
    return (data_dir() / "transcripts" / "weekly-sync.md").read_text(encoding="utf-8")


def with_transcript(request: str = REQUEST) -> str:
    """A user message that pastes the whole meeting transcript after ``request``. Notebook 05."""
    return f"{request}\n\n{TRANSCRIPT_NOTE}\n\n{transcript_text()}"


def skill_text() -> str:
    """The QBR-format skill: a SKILL.md with YAML front matter (name, description, allowed-tools).
    Notebook 13."""
    return (data_dir() / "skills" / "qbr-report" / "SKILL.md").read_text(encoding="utf-8")


def memory_text() -> str:
    """The user's preferences as an AGENTS.md memory file. Notebook 13."""
    return (data_dir() / "memory" / "AGENTS.md").read_text(encoding="utf-8")


def skill_files() -> dict[str, dict[str, Any]]:
    """The skill as deepagents file data, to seed a thread's state: ``run(..., files=...)``.
    Notebook 13."""
    return {QBR_SKILL_PATH: create_file_data(skill_text())}


def memory_files(path: str = MEMORY_PATH) -> dict[str, dict[str, Any]]:
    """The memory as deepagents file data in the thread's state — it dies with the thread.
    Notebook 13."""
    return {path: create_file_data(memory_text())}


def state_dir() -> Path:
    """Where what outlives the kernel goes (notebook 13: the memory store and the threads, in
    SQLite files): ``$LABKIT_STATE``; else, in a checkout, ``data/state/`` (ignored by git; ``make
    reset`` moves it to ``.reset-backup/``); else ``labkit-state/`` in the working folder (an
    installed wheel's data folder may not be writable). Made if missing. Notebook 13."""
    if os.environ.get("LABKIT_STATE"):
        path = Path(os.environ["LABKIT_STATE"])
    elif data_dir() == CHECKOUT_DATA:
        path = CHECKOUT_DATA / "state"
    else:
        path = Path.cwd() / "labkit-state"
    path.mkdir(parents=True, exist_ok=True)
    return path


def memory_store(store=None, key: str = "/AGENTS.md"):
    """A langgraph store (a new ``InMemoryStore`` unless given: notebook 13 gives a ``SqliteStore``)
    holding the data set's memory file under ``MEMORY_NAMESPACE`` — put again, as the course starts,
    over an edit an earlier run made. Notebook 13.

    Route the memory folder to it with ``CompositeBackend(default=StateBackend(),
    routes={"/memories/": StoreBackend(namespace=lambda rt: MEMORY_NAMESPACE, store=store)})``:
    the route's prefix is cut off, so ``/memories/AGENTS.md`` is ``key``.
    """
    if store is None:
        store = InMemoryStore()
    if not key.startswith("/"):
        raise ValueError(f"key must be an absolute path inside the routed folder, like "
                         f"'/AGENTS.md', not {key!r}")
    store.put(MEMORY_NAMESPACE, key, {"content": memory_text(), "encoding": "utf-8"})
    return store


def tools(news_language: str = "en", export_scale: float = 1.0) -> list:
    """The scenario's two data tools, backed by ``data/``. Notebook 01 (notebook 02 reads their
    schemas).

    An unknown ticker gets an answer listing the allowed ones, never an exception the agent loop
    would choke on. ``export_scale`` resizes every export (see :func:`export_text`).
    """
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
