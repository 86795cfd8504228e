"""What a run of the scenario leaves behind, and how it is read: :class:`Run` and :func:`score`.

Notebook 01 introduces both. A :class:`Run` holds the thread's final state (messages, files), one
``labkit.trace.CallRecord`` per model call, and the error that ended it, if any. :func:`score`
reads the outcome — goal completed, steps repeated, needle answered exactly — from the messages
and files alone, so it works on any model's run, not only the lab model's.

What it leaves out: how the run was made (``harness``), and judging wording — a lost goal is
counted only when the model says ``labkit.prompts.GOAL_LOST`` word for word (``labkit.evals``
reads more).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from labkit.prompts import GOAL_LOST
from labkit.scenario.data import _ticker, companies, needle
from labkit.scenario.texts import NEEDLE_QUESTION, REPORT_PATH, RISKS_PATH
from labkit.tokens import message_text

__all__ = ["Run", "Score", "score"]


@dataclass(frozen=True)
class Score:
    """The outcome of one run, as :func:`score` reads it. Notebook 01."""

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


def score(result: Run) -> Score:
    """Read a finished run: was the goal completed, how many steps were repeated, and was the
    needle answered with the exact figure? Works on any model's run. Notebook 01."""
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
    answers = [message_text(m, text_only=True) for m in result.messages
               if isinstance(m, AIMessage) and not m.tool_calls]
    last_answer = answers[-1] if answers else ""
    asked = any(isinstance(m, HumanMessage) and message_text(m, text_only=True) == NEEDLE_QUESTION
                for m in result.messages)
    return Score(
        goal_completed=not missing and result.error is None,
        steps_repeated=sum(n - 1 for n in calls.values() if n > 1),
        needle_correct=asked and needle().answer in last_answer,
        goal_lost=sum(text == GOAL_LOST for text in answers),
        repeated=repeated,
        missing=tuple(missing),
        error=None if result.error is None else f"{type(result.error).__name__}: {result.error}",
    )


@dataclass
class Run:
    """A finished (or failed) run of the scenario: what ``run()`` returns. Notebook 01.

    ``messages`` and ``files`` are the thread's final state (``files`` as text), ``records`` one
    ``labkit.trace.CallRecord`` per model call, ``error`` what ended the run early (a context
    overflow above all), ``state`` the whole final state.
    """

    messages: list[BaseMessage]
    files: dict[str, str]
    records: list = field(default_factory=list)  # labkit.trace.CallRecord, one per model call
    error: BaseException | None = None
    turns_completed: int = 0
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def score(self) -> Score:
        """:func:`score` of this run. Notebook 01."""
        return score(self)

    @property
    def peak(self) -> int:
        """The largest request the model was sent in one call, in tokens (``CallRecord.seen``);
        0 when the run made no model call. Notebook 01.

        A refused call counts: a request over the window was still sent, and its size is the one
        to hold against the window (``run.peak > window`` when a run overflowed). The largest
        request the model *accepted* is ``max(r.seen for r in run.records if not r.error)``.
        """
        return max((r.seen for r in self.records), default=0)

    def tool_calls(self, name: str | None = None) -> list[dict[str, Any]]:
        """The tool calls the agent made, in order — each the dict langchain stores on the
        ``AIMessage`` (``name``, ``args``, ``id``) — or only those of the tool ``name``.
        Notebook 04: ``run.tool_calls("grep")[-1]`` is how the needle was read back.

        Read from the thread's stored ``messages``, so only this agent's calls: a subagent's own
        calls stay in its thread (the parent has its ``task`` call).
        """
        calls = [tc for m in self.messages if isinstance(m, AIMessage) for tc in m.tool_calls]
        return calls if name is None else [tc for tc in calls if tc["name"] == name]
