"""What a run of the scenario leaves behind, and how it is read: :class:`Run` and :func:`score`.

Notebook 01 introduces both. A :class:`Run` holds the thread's final state (messages, files), one
``labkit.trace.CallRecord`` per model call, and the error that ended it, if any. :func:`score`
reads the outcome — goal completed, steps repeated, needle answered exactly — from the messages
and files alone, so it works on any model's run, not only the lab model's.

:meth:`Run.save` and :func:`load_run` keep a run in a JSON file: bring your own agent's run.
What it leaves out: how the run was made (``harness``), and judging wording — ``goal_lost`` is the
lab model's ``prompts.GOAL_LOST`` word for word; any model's sign is ``asked_user``, an answer
ending in a question in a turn that did no work.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from langchain_core.exceptions import ContextOverflowError
from langchain_core.load import dumpd
from langchain_core.load.serializable import Serializable, to_json_not_implemented
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, messages_from_dict, messages_to_dict

from labkit.errors import is_overflow
from labkit.prompts import GOAL_LOST
from labkit.scenario.data import _ticker, companies, needle
from labkit.scenario.texts import NEEDLE_QUESTION, REPORT_PATH, RISKS_PATH
from labkit.tokens import message_text
from labkit.trace import CallRecord

__all__ = ["Run", "Score", "hands_back", "load_run", "score"]


@dataclass(frozen=True)
class Score:
    """The outcome of one run, as :func:`score` reads it. Notebook 01.

    ``goal_lost`` counts the lab model's ``prompts.GOAL_LOST`` reply only. The signs any model
    leaves: ``asked_user`` (answers that ask the user what to do: ``GOAL_LOST``, or an answer ending
    in a question in a turn with no tool call), ``identical_calls`` (tool calls repeating an
    earlier one, same name and arguments) and ``no_report`` (the run ended without an error and
    without ``REPORT_PATH``).
    """

    goal_completed: bool
    steps_repeated: int
    needle_correct: bool
    goal_lost: int = 0
    repeated: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    error: str | None = None
    asked_user: int = 0
    identical_calls: int = 0
    no_report: bool = False

    def __str__(self) -> str:
        parts = [
            f"goal completed: {'yes' if self.goal_completed else 'no'}",
            f"steps repeated: {self.steps_repeated}",
            f"needle answered correctly: {'yes' if self.needle_correct else 'no'}",
        ]
        if self.goal_lost:
            parts.append(f"lost the goal: {self.goal_lost}x")
        if self.asked_user > self.goal_lost:  # a real model's sign; the lab model's is goal_lost
            parts.append(f"asked the user what to do: {self.asked_user}x")
        if self.error:
            parts.append(f"error: {self.error}")
        return " | ".join(parts)


def hands_back(answer: str, worked: bool) -> bool:
    """Does this answer hand the task back to the user? The lab model's ``prompts.GOAL_LOST``, or
    any model's answer ending in a question in a turn where it called no tool (``worked=False``).
    ``score`` counts them as ``asked_user``; ``evals.reminded`` re-sends the turn. Notebook 14."""
    answer = answer.rstrip()
    return answer == GOAL_LOST or (not worked and answer.endswith(("?", "？")))


def _asked_user(messages: list[BaseMessage]) -> int:
    """How many answers in ``messages`` hand the task back (:func:`hands_back`)."""
    asked, worked = 0, False
    for m in messages:
        if isinstance(m, HumanMessage):
            worked = False
        elif isinstance(m, AIMessage) and m.tool_calls:
            worked = True
        elif isinstance(m, AIMessage):
            asked += hands_back(message_text(m, text_only=True), worked)
    return asked


def _identical_calls(messages: list[BaseMessage]) -> int:
    """Tool calls that repeat an earlier one exactly (same tool, same arguments)."""
    seen = Counter(f"{tc['name']}:{json.dumps(tc['args'], sort_keys=True, default=str)}"
                   for m in messages if isinstance(m, AIMessage) for tc in m.tool_calls)
    return sum(n - 1 for n in seen.values())


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
        asked_user=_asked_user(result.messages),
        identical_calls=_identical_calls(result.messages),
        no_report=result.error is None and REPORT_PATH not in result.files,
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

    def save(self, path: str | Path) -> Path:
        """Write the run to a JSON file that :func:`load_run` reads back: messages, files, records
        (without their requests), turns completed and the error as text (its type's name and
        message). The whole ``state`` is not saved. A value JSON cannot hold — a tool's artifact
        such as retrieved ``Document`` s with dates — is kept in langchain's own serialized form
        (``dumpd``; a date as its type and repr), read back as that form. Notebook 16.

        Example:
            >>> # run.save("my_run.json"); diagnose.diagnose(scenario.load_run("my_run.json"))
        """
        path = Path(path)
        records = [{f.name: getattr(r, f.name) for f in fields(r) if f.name != "request"}
                   for r in self.records]
        error = None if self.error is None else {"type": type(self.error).__name__,
                                                 "message": str(self.error),
                                                 "overflow": is_overflow(self.error)}
        data = {"format": _FORMAT, "messages": messages_to_dict(self.messages), "files": self.files,
                "records": records, "turns_completed": self.turns_completed, "error": error}
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=_langchain_form)
        path.write_text(text, encoding="utf-8")
        return path


_FORMAT = "labkit.run/1"


def _langchain_form(value: Any) -> Any:
    return dumpd(value) if isinstance(value, Serializable) else to_json_not_implemented(value)


def _error(saved: dict | None) -> BaseException | None:
    """The saved error as an exception of the same name (``ContextOverflowError`` itself, so the
    clinic recognizes an overflow; any other type is a stand-in that only carries its name — a
    ``ContextOverflowError`` too when the save recognised it as one, e.g. OpenAI's 400)."""
    if saved is None:
        return None
    if saved["type"] == ContextOverflowError.__name__:
        return ContextOverflowError(saved["message"])
    base = ContextOverflowError if saved.get("overflow") else Exception
    return type(saved["type"], (base,), {"__module__": "labkit.scenario.saved"})(saved["message"])


def load_run(path: str | Path) -> Run:
    """A :class:`Run` read back from :meth:`Run.save`'s JSON file — any model's run, made by any
    agent that recorded it with ``labkit.trace.Recorder`` — for ``score``, ``replay``,
    ``widgets.knobs`` and ``diagnose``. Records come back without requests, ``state`` holds only
    ``messages``. Notebook 16.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        raise ValueError(f"{path} is not a run saved by Run.save (format {_FORMAT!r})")
    messages = messages_from_dict(data["messages"])
    records = [CallRecord(**r) for r in data["records"]]
    return Run(messages=messages, files=dict(data["files"]), records=records, error=_error(data["error"]),
               turns_completed=data["turns_completed"], state={"messages": messages})
