"""Exercises for notebook 04 · Offloading tool results.

q1 is a configuration: an ``OffloadMiddleware`` for a different data mix (the exports at half
size, on a 16,000-token window). The checker runs the scenario with it and judges what the run
did — inside the window, no step repeated, the needle answered, every latest headline in the
report, every file byte for byte — so any setting that does all of it passes, and a failure
names the results, the stubs or the preview that caused it.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from typing import Any

from deepagents.middleware.filesystem import FilesystemMiddleware
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage

from labkit import LabModel, scenario
from labkit.exercises.core import Exercise
from labkit.offload import OFFLOADED, OffloadMiddleware, unwrap
from labkit.tokens import count_tokens

__all__ = ["SCALE", "WINDOW", "latest_headline", "mix", "q1"]

WINDOW = 16_000
SCALE = 0.5
_FETCHED = ("fetch_market_data", "search_news")


def mix() -> dict[str, str]:
    """The ten results of the new mix, by name: each export at SCALE, each news digest."""
    out = {}
    for c in scenario.companies():
        out[f"{c['ticker']} export"] = scenario.export_text(c["ticker"], SCALE)
        out[f"{c['ticker']} news"] = scenario.news_text(c["ticker"])
    return out


def latest_headline(company: dict) -> tuple[str, int]:
    """A competitor's latest headline as the report quotes it, and its line number in the digest."""
    lines = scenario.news_text(company["ticker"]).splitlines()
    at = next(i for i, line in enumerate(lines) if re.match(rf"## \S+: {re.escape(company['name'])} ", line))
    m = re.match(rf"## (\S+): {re.escape(company['name'])} (.+)$", lines[at])
    return f"{m.group(2)} ({m.group(1)})", at + 1


def _stack(answer: Any) -> list | str:
    """The middleware list to run, or why the answer is not one."""
    stack = list(answer) if isinstance(answer, Sequence) and not isinstance(answer, str) else [answer]
    if not stack or not all(isinstance(m, AgentMiddleware) for m in stack):
        return (f"answer with a configured middleware, such as OffloadMiddleware(tool_limit=..., "
                f"head_lines=..., tail_lines=...), not {answer!r}")
    if any(isinstance(m, FilesystemMiddleware) for m in stack):
        return ("the scenario's agent already has deepagents' FilesystemMiddleware (its read_file and "
                "grep, with eviction off): answer with labkit's OffloadMiddleware, which counts tokens")
    if not any(isinstance(m, OffloadMiddleware) for m in stack):
        return "nothing in your answer offloads: it needs an OffloadMiddleware"
    return stack


def _name(run, message: ToolMessage) -> str:
    call = next(tc for tc in run.tool_calls() if tc["id"] == message.tool_call_id)
    return f"{call['args'].get('ticker', '?')} {'export' if call['name'] == 'fetch_market_data' else 'news'}"


def _overflow(run, offload: OffloadMiddleware) -> str:
    refused = next(r for r in run.records if r.error)
    fetched = [m for m in run.messages if isinstance(m, ToolMessage) and m.name in _FETCHED]
    whole = [m for m in fetched if not m.additional_kwargs.get(OFFLOADED)]
    stubs = sum(count_tokens(m.content) for m in fetched if m.additional_kwargs.get(OFFLOADED))
    kept = ", ".join(f"{_name(run, m)} ({count_tokens(m.content):,} tokens)" for m in whole) or "nothing"
    why = (f"a request of {refused.seen:,} tokens was refused by the {WINDOW:,}-token window. Kept whole "
           f"in the context: {kept}")
    if stubs > sum(count_tokens(m.content) for m in fetched) / 2:
        return (f"{why}; the stubs of the offloaded results add {stubs:,} tokens: a preview of "
                f"head_lines={offload.head_lines} + tail_lines={offload.tail_lines} lines shows too much "
                f"of each file")
    if offload.tool_limit is None:
        return f"{why} — tool_limit=None evicts no result at all"
    exempt = sorted({m.name for m in whole if m.name in offload.exempt_tools})
    if exempt:
        return (f"{why} — {', '.join(exempt)} is in exempt_tools, so its results are never evicted, "
                f"whatever their size")
    return f"{why} — a result at or under tool_limit={offload.tool_limit:,} tokens stays in the context whole"


def _check_q1(answer: Any) -> str | None:
    stack = _stack(answer)
    if isinstance(stack, str):
        return stack
    offload = next(m for m in stack if isinstance(m, OffloadMiddleware))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = scenario.run(LabModel(window=WINDOW), middleware=stack, export_scale=SCALE)
    score = run.score
    if score.steps_repeated:
        return (f"the model fetched the same thing again ({score.steps_repeated} repeated steps"
                f"{', then ' + type(run.error).__name__ if run.error else ''}): it recognises a result by "
                f"its first line, the title ('Market data export — …', '# News digest — …'), and a stub "
                f"with head_lines={offload.head_lines} does not show it")
    if run.error is not None:
        if any(r.error for r in run.records):
            return _overflow(run, offload)
        return f"the run stopped with {type(run.error).__name__}: {run.error}"
    if not score.needle_correct:
        reads = [tc for tc in run.tool_calls() if tc["name"] in ("grep", "read_file")]
        return (f"the needle ({scenario.needle().ticker}'s exact {scenario.needle().kpi}) was not answered; "
                f"the model made {len(reads)} read-back calls: it reads a file back only when its full "
                f"path is in view")
    report = run.files.get(scenario.REPORT_PATH, "")
    missing = [(c, *latest_headline(c)) for c in scenario.companies() if latest_headline(c)[0] not in report]
    if missing:
        line = missing[0][2]
        tickers = ", ".join(c["ticker"] for c, *_ in missing)
        return (f"the report misses the latest headline of {tickers}: the lab model drafts from its "
                f"context, the digests went to files (over tool_limit="
                f"{offload.tool_limit}), and a preview of the first {offload.head_lines} lines stops "
                f"before line {line}, the latest headline")
    originals = mix()
    for m in run.messages:
        path = m.additional_kwargs.get(OFFLOADED) if isinstance(m, ToolMessage) else None
        if path and unwrap(run.files.get(path, "")) != originals.get(_name(run, m)):
            return f"{path} does not hold the {_name(run, m)} byte for byte: something was lost"
    return None


def _names() -> dict:
    """The names notebook 04 has imported by its exercise."""

    return {"OffloadMiddleware": OffloadMiddleware, "scenario": scenario, "LabModel": LabModel}


q1 = Exercise(
    prompt=f"Configure an OffloadMiddleware for the exports at export_scale={SCALE} on a "
           f"{WINDOW:,}-token window: the run must finish with no step repeated, answer the needle, "
           f"quote every competitor's latest headline in the report and lose nothing.",
    checker=_check_q1,
    hints=[
        "Two decisions. Which results go to files: at half size the exports are smaller than the "
        "default tool_limit, and those under it stay in the context whole. And what a stub "
        "previews: the lab model drafts the report from its context, so a news digest sent to a "
        "file must keep its latest headline in the preview — or stay in the context.",
        "Print nb04.mix()'s sizes and lines. A tool_limit between the largest news digest and the "
        "smallest export keeps the digests whole; a lower one needs head_lines that reach the "
        "headline's line (line 1 is the title, which the model needs to recognise each result).",
    ],
    solution_text=(
        "# exports to files, news digests kept whole: any limit between the two sizes works\n"
        "answer = OffloadMiddleware(tool_limit=2_000)"
    ),
    given=_names,
)
