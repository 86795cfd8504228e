"""The detectors: what went wrong in a recorded run, as findings with the run's own numbers.

Notebook 16, section 2. Each symptom is a small pure function of a ``scenario.Run`` (records,
messages, state, files), its score and its model; :func:`detect` runs them all and returns one
:class:`Finding` per symptom seen; :func:`report` shows findings as a table. The thresholds come
in as an argument: ``labkit.diagnose`` holds them, and ``diagnose(run, model)`` passes them.

What it leaves out: judgement. The detectors read numbers and the shape of the replies (a lost
goal: the lab model's ``prompts.GOAL_LOST``, or any model's question in a turn that did no work),
never the meaning of a real model's wording; symptoms with no number are in the table only.
Isolated children are recorded by ``IsolateMiddleware``, not by the run's own recorder, so their
cost is not diagnosed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deepagents.middleware.summarization import compute_summarization_defaults
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from labkit import caching, scenario
from labkit.diagnose.rows import EVIDENCE, LANGUAGES, Row, check_language, row
from labkit.errors import is_overflow, status_of
from labkit.model import InvalidHistoryError
from labkit.tables import Table
from labkit.tokens import count_tokens

__all__ = ["DETECTORS", "Finding", "detect", "report"]

_NONE = {"en": "none", "zh": "无"}


@dataclass(frozen=True)
class Finding:
    """One symptom seen in a run (notebook 16): the row that treats it, and the run's numbers
    that show it."""

    key: str
    numbers: dict[str, Any] = field(default_factory=dict, hash=False)

    @property
    def row(self) -> Row:
        return row(self.key)

    def evidence(self, language: str = "en") -> str:
        """The numbers, as one sentence in English or Chinese."""
        lang = check_language(language)
        shown = {k: (", ".join(map(str, v)) or _NONE[lang]) if isinstance(v, list) else v
                 for k, v in self.numbers.items()}  # lists (paths, steps) are joined
        return EVIDENCE[self.key][LANGUAGES.index(lang)].format(**shown)

    def __str__(self) -> str:
        return f"{self.key}: {self.evidence()}"


def _ok(run) -> list:
    return [r for r in run.records if not r.error]


def _overflowed(record) -> bool:
    """Was this call refused as above the window (a record saved before the flag: by its text)?"""
    return bool(record.error) and (getattr(record, "overflow", False)
                                   or record.error.startswith(ContextOverflowError.__name__))


def _largest_result(messages) -> tuple[int, str]:
    sizes = [(count_tokens(m), m.name or "tool") for m in messages if isinstance(m, ToolMessage)]
    return max(sizes, default=(0, "none"))


# -- one detector per symptom: (run, score, model, limits) -> Finding or None ----------------------


def _hard_overflow(run, score, model, limits) -> Finding | None:
    if run.error is None or not is_overflow(run.error):
        return None
    failed = next((r for r in reversed(run.records) if r.error), None)
    largest, tool = _largest_result(run.messages)
    return Finding("hard_overflow", {"call": failed.index if failed else len(run.records),
                                     "tokens": failed.seen if failed else 0,
                                     "turns": run.turns_completed, "largest": largest, "tool": tool})


def _orphan(run, score, model, limits) -> Finding | None:
    error = run.error
    text = str(error)
    provider_400 = status_of(error) == 400 and "tool" in text.lower() and not is_overflow(error)
    if error is None or not (isinstance(error, InvalidHistoryError) or provider_400):
        return None
    failed = next((r for r in reversed(run.records) if r.error), None)
    return Finding("orphan", {"call": failed.index if failed else len(run.records),
                              "reason": text.split(" (")[0]})


def _overflow_rescued(run, score, model, limits) -> Finding | None:
    if run.error is not None:
        return None
    refused = [r for r in run.records if _overflowed(r)]
    if not refused:
        return None
    first = refused[0]
    retry = next((r for r in run.records if r.index > first.index and not r.error), None)
    if retry is None:
        return None
    return Finding("overflow_rescued", {"refused": len(refused), "call": first.index,
                                        "tokens": first.seen, "retry": retry.index,
                                        "retry_tokens": retry.seen,
                                        "summary": retry.by_kind["summary"]})


def _no_profile(run, score, model, limits) -> Finding | None:
    """Needs the model: only it knows it has no profile."""
    if model is None or getattr(model, "profile", None) is not None:
        return None
    defaults = compute_summarization_defaults(model)
    kind, limit = defaults["trigger"]
    for r in run.records:
        if r.by_kind["summary"]:
            return None  # something compacted before any refusal
        if _overflowed(r):
            if kind == "tokens" and r.seen >= limit:
                return None
            return Finding("no_profile", {"trigger": defaults["trigger"], "keep": defaults["keep"],
                                          "call": r.index, "tokens": r.seen})
    return None


def _raw_dump(run, score, model, limits) -> Finding | None:
    replies = [count_tokens(m) for m in run.messages if isinstance(m, ToolMessage) and m.name == "task"]
    big = [n for n in replies if n > limits["RAW_REPLY_TOKENS"]]
    if not big:
        return None
    return Finding("raw_dump", {"count": len(big), "replies": len(replies),
                                "limit": limits["RAW_REPLY_TOKENS"], "largest": max(big)})


def _goal_lost(run, score, model, limits) -> Finding | None:
    """The lab model says ``GOAL_LOST``; any model hands the task back (``score.asked_user``, which
    counts ``GOAL_LOST`` too, so on a lab run both numbers agree)."""
    count = max(score.goal_lost, score.asked_user)
    if not count:
        return None
    answers = sum(isinstance(m, AIMessage) and not m.tool_calls for m in run.messages)
    return Finding("goal_lost", {"count": count, "answers": answers,
                                 "summarized": sum(r.by_kind["summary"] > 0 for r in run.records),
                                 "calls": len(run.records)})


def _repeated_work(run, score, model, limits) -> Finding | None:
    """The scenario's data tools called again for the same company, or any tool called again
    with the same arguments (any agent's run); a run the token budget stopped after repeating
    work at least twice is named a loop."""
    count = max(score.steps_repeated, score.identical_calls)
    if not count:
        return None
    # stopped by labkit.meter's budget (live or loaded) with the same work done three times or more
    loop = type(run.error).__name__ == "BudgetExceeded" and count >= 2
    return Finding("repeated_work", {"count": count, "steps": list(score.repeated) or ["identical calls"],
                                     "loop": _LOOP[loop][0], "loop_zh": _LOOP[loop][1]})


_LOOP = {False: ("", ""), True: (" It went on until the token budget stopped it: a loop.",
                                 "它一直重复，直到词元预算叫停：这是一个死循环。")}


def _needle_lost(run, score, model, limits) -> Finding | None:
    asked = any(isinstance(m, HumanMessage) and m.text == scenario.NEEDLE_QUESTION for m in run.messages)
    if not asked or score.needle_correct or run.error is not None:
        return None
    needle = scenario.needle()
    paths = sorted(p for p, text in run.files.items() if needle.find(text))
    return Finding("needle_lost", {"figure": needle.answer, "paths": paths})


def _cost_blowup(run, score, model, limits) -> Finding | None:
    ok = _ok(run)
    sent = sum(r.seen for r in ok)
    if not ok or sent < limits["COST_MIN_TOKENS"]:
        return None
    growth = sent / len(ok) / ok[0].seen
    if growth < limits["COST_GROWTH"]:
        return None
    return Finding("cost_blowup", {"calls": len(ok), "sent": sent, "dollars": sum(r.cost for r in ok),
                                   "growth": growth, "first": ok[0].seen})


def _tool_tax(run, score, model, limits) -> Finding | None:
    ok = _ok(run)
    sent, tax = sum(r.seen for r in ok), sum(r.by_kind["tools"] for r in ok)
    if not ok or tax < limits["TAX_MIN_TOKENS"] or tax / sent < limits["TAX_SHARE"]:
        return None
    return Finding("tool_tax", {"share": tax / sent, "per_call": max(r.by_kind["tools"] for r in ok),
                                "calls": len(ok), "tax": tax})


def _cache_thrash(run, score, model, limits) -> Finding | None:
    later = [r for r in _ok(run)[1:] if r.shared_prefix is not None]  # the first call reads nothing
    possible = sum(r.seen for r in later)
    if possible < limits["CACHE_MIN_TOKENS"]:
        return None
    rule = caching.RULES["openai"]
    read = sum(caching.cached_tokens(r.seen, r.shared_prefix, r.whole_prefix, rule)[0] for r in later)
    if read / possible >= limits["CACHE_READ_SHARE"]:
        return None
    head = sum(r.shared_prefix < r.by_kind["system"] + r.by_kind["tools"] for r in later)
    return Finding("cache_thrash", {"share": read / possible, "read": read, "possible": possible,
                                    "calls": len(later), "head": head})


DETECTORS: tuple[Callable, ...] = (_hard_overflow, _orphan, _overflow_rescued, _no_profile, _raw_dump,
                                   _goal_lost, _repeated_work, _needle_lost, _cost_blowup, _tool_tax,
                                   _cache_thrash)
"""The detectors, in the order their findings are listed (notebook 16)."""


def detect(run, model, limits: Mapping[str, float]) -> list[Finding]:
    """Every finding of the :data:`DETECTORS` in ``run``, under the thresholds ``limits`` (a name
    of ``labkit.diagnose.THRESHOLDS`` -> its value). Notebook 16 calls it as ``diagnose(run, model)``,
    which passes labkit.diagnose's thresholds."""
    if not isinstance(run, scenario.Run):
        raise TypeError(f"diagnose() reads a scenario.Run, not {type(run).__name__}")
    score = scenario.score(run)
    return [f for f in (d(run, score, model, limits) for d in DETECTORS) if f is not None]


_REPORT_HEADERS = {"en": ("finding", "evidence", "remedy", "knobs", "notebooks"),
                   "zh": ("症状", "证据", "解法", "旋钮", "笔记本")}
_HEALTHY = {"en": ("no finding", "nothing in this run crosses a threshold"),
            "zh": ("无发现", "这次运行没有任何指标越过阈值")}


def report(findings: Sequence[Finding], language: str = "en") -> Table:
    """Findings as a table: symptom, evidence, remedy, knobs, notebooks (one row if none).
    Notebook 16."""
    lang = check_language(language)
    head = _REPORT_HEADERS[lang]
    if not findings:
        return Table([dict(zip(head, _HEALTHY[lang]))], head)
    rows = []
    for f in findings:
        t = f.row.text(lang)
        rows.append(dict(zip(head, (t.symptom, f.evidence(lang), t.remedy,
                                    f"{f.row.labkit.code} · {f.row.deepagents.code}",
                                    ", ".join(f.row.notebooks)))))
    return Table(rows, head)
