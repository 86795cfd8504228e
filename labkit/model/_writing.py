"""Used by: ``labkit.model.behaviour``; ``labkit.model`` re-exports :func:`lab_summary` (``labkit.replay``
uses it).

What the lab model writes, each text built from the context alone (a ``View``), so what is
missing from the context is missing from the text: :func:`lab_summary`, its extractive
four-section summary (notebooks 07-11); the drafts of the running example's write steps
(notebook 01: the weekly report — in a skill's format, with the memory's preferences, notebook
13 — the risks note, the briefings); a subagent's reply (notebook 12: a short report, the raw
dump, or the path of the notes it saved); the arguments of a forced or literal tool call.

What it leaves out: choosing when to write any of it — that is ``behaviour.act``.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

from labkit import scenario as sc
from labkit.model._context import KPI, PATHS, View, plain
from labkit.model._skills import skill_format, with_preferences

__all__ = ["Facts", "draft_file", "lab_summary", "literal_args", "merge", "noted_figure", "notes_to_write",
           "placeholder", "research_reply", "summary_facts", "write_summary"]

# -- the summary --------------------------------------------------------------------------------


def lab_summary(text: str, keep_figures: bool = False) -> str:
    """The lab model's extractive four-section summary of a rendered history.

    It quotes the evidence of every step it finds (so the work is not redone), lists file paths,
    and keeps each KPI's name — but drops its value unless ``keep_figures``. Notebook 07;
    ``labkit.replay`` re-simulates a run's summaries with it. (Not to be confused with the
    ``labkit.summarize`` module, the middleware that asks for a summary.)
    """
    return write_summary(summary_facts(text), keep_figures)


@dataclass(frozen=True)
class Facts:
    """What a summary is made of, read from a text: each task's marker and where it first occurs,
    the steps whose evidence occurs, the KPIs and the paths in order (the text's length places the
    next text's markers after them). :func:`merge` joins the facts of texts joined by newlines."""

    markers: tuple[tuple[int, str], ...]  # (first position, task key), in task order
    evidence: frozenset[str]
    kpis: tuple[tuple[str, str, str], ...]
    paths: tuple[str, ...]
    length: int


def summary_facts(text: str) -> Facts:
    """The facts of one text (a whole history, or one message of it)."""
    return Facts(markers=tuple((text.find(t.marker), t.key) for t in sc.tasks() if t.marker in text),
                 evidence=frozenset(s.key for t in sc.tasks() for s in t.steps if s.evidence in text),
                 kpis=tuple(dict.fromkeys(KPI.findall(text))),
                 paths=tuple(dict.fromkeys(p.rstrip(".:") for p in PATHS.findall(text))), length=len(text))


def merge(parts: list[Facts]) -> Facts:
    """The facts of ``"\\n".join`` of the texts ``parts`` came from: no marker, evidence, KPI or
    path holds a newline, so none spans two texts (``tests/test_replay.py`` checks it)."""
    markers, offset = {}, 0
    for part in parts:
        for at, key in part.markers:
            markers.setdefault(key, at + offset)
        offset += part.length + 1
    order = {t.key: i for i, t in enumerate(sc.tasks())}
    return Facts(markers=tuple(sorted(((at, key) for key, at in markers.items()), key=lambda m: order[m[1]])),
                 evidence=frozenset().union(*(p.evidence for p in parts)),
                 kpis=tuple(dict.fromkeys(k for p in parts for k in p.kpis)),
                 paths=tuple(dict.fromkeys(q for p in parts for q in p.paths)), length=max(offset - 1, 0))


def write_summary(facts: Facts, keep_figures: bool = False) -> str:
    """The four sections, written from ``facts``."""
    tasks = {t.key: t for t in sc.tasks()}
    found = sorted((at, order, tasks[key]) for order, (at, key) in enumerate(facts.markers))
    intent = "\n".join(f"- {t.request}" for _, _, t in found) or "None"
    steps = {s.key: s for t in sc.tasks() for s in t.steps}
    done = [s for s in steps.values() if s.key in facts.evidence]
    lines = [f"- {s.evidence}: done ({s.tool})." for s in done]
    for ticker, kpi, value in facts.kpis:
        lines.append(f"- kpi,{ticker},{kpi},{value}" if keep_figures
                     else f"- {ticker} {kpi}: reported (exact figure not kept)")
    last = found[-1][2] if found else None
    todo = [s for s in (last.steps if last else ()) if s.key not in facts.evidence]
    next_steps = "\n".join(f"- {s.tool}({json.dumps(s.args)})" for s in todo) or "None"
    return (
        f"## SESSION INTENT\n{intent}\n\n## SUMMARY\n{chr(10).join(lines) or 'None'}\n\n"
        f"## ARTIFACTS\n{chr(10).join(f'- {p}' for p in facts.paths) or 'None'}\n\n"
        f"## NEXT STEPS\n{next_steps}"
    )


# -- the drafts ---------------------------------------------------------------------------------


def draft_file(task: sc.Task, step: sc.Step, view: View) -> str:
    """The file a write step produces, built from what is visible. Notebook 01."""
    if task.key == "report":
        skill = skill_format(view)
        draft = _draft_formatted(view.text, *skill) if skill else _draft_report(view.text)
        return with_preferences(draft, view)
    if task.key == "risks":
        return _draft_risks(view.text)
    ticker = step.args["file_path"].rsplit("/", 1)[-1].removesuffix(".md")
    c = next(c for c in sc.companies() if c["ticker"] == ticker)
    digest = next((r for call, r in view.answered.values() if call["name"] == "search_news"
                   and f"News digest — {c['name']} ({ticker})" in r), None)
    quoted = digest if digest else "(the news digest is no longer in my context)"
    return f"# Briefing — {c['name']} ({ticker})\n\n## This week's news, in full\n\n{quoted}\n"


def _draft_report(text: str) -> str:
    out = [f"# Weekly competitor report — {sc.meta()['week']}",
           "_Built from the fictional labkit data set._", ""]
    for c in sc.companies():
        out.append(f"## {c['name']} ({c['ticker']})")
        exported = f"Market data export — {c['name']} ({c['ticker']})" in text
        out.append("- Market data: export reviewed." if exported else "- Market data: not reviewed.")
        news = _headline(c["name"], text)
        out.append(f"- News: {news}" if news else "- News: see the research notes.")
        out.append("")
    return "\n".join(out)


def _draft_formatted(text: str, title: str | None, headings: list[str]) -> str:
    week = sc.meta()["week"]
    out = [(title or "# Competitor report — <week>").replace("<week>", week),
           "_Built from the fictional labkit data set, in the format its skill asks for._", ""]
    companies = sc.companies()
    for heading in headings:
        out.append(heading)
        h = heading.lower()
        if "summary" in h:
            seen = sum(f"Market data export — {c['name']} ({c['ticker']})" in text for c in companies)
            out.append(f"- {seen} of {len(companies)} competitors' market data reviewed this week.")
        elif "scorecard" in h or "competitor" in h:
            for c in companies:
                seen = f"Market data export — {c['name']} ({c['ticker']})" in text
                out.append(f"- {c['name']} ({c['ticker']}): market data "
                           f"{'reviewed' if seen else 'not reviewed'}; news: "
                           f"{_headline(c['name'], text) or 'see the research notes'}")
        elif "risk" in h:
            out.extend(_draft_risks(text).splitlines()[2:])
        else:
            out.append("- (nothing in my context for this section)")
        out.append("")
    return "\n".join(out)


def _draft_risks(text: str) -> str:
    out = ["# Risks", ""]
    for c in sc.companies():
        news = _headline(c["name"], text)
        out.append(f"- {c['name']}: watch how '{news}' plays out." if news
                   else f"- {c['name']}: pricing pressure in {c['sector']}.")
    return "\n".join(out) + "\n"


def _headline(name: str, text: str) -> str | None:
    m = re.search(rf"## (\d{{4}}-\d\d-\d\d): {re.escape(name)} ([^\n]+)", text)
    if m:
        return f"{m.group(2)} ({m.group(1)})"
    noted = re.search(rf"News digest — {re.escape(name)} \([A-Z]+\): (.+ \(\d{{4}}-\d\d-\d\d\))$",
                      text, re.M)  # a subagent's research notes
    return noted.group(1) if noted else None


# -- a researcher's reply (notebook 12) ---------------------------------------------------------


def _research_report(ticker: str, text: str) -> str:
    c = next(c for c in sc.companies() if c["ticker"] == ticker)
    kpis = [f"{k}={v}" for t, k, v in dict.fromkeys(KPI.findall(text)) if t == ticker]
    news = _headline(c["name"], text)
    return (f"{c['name']} ({ticker}) — research notes\n"
            f"- Market data export — {c['name']} ({ticker}): KPIs {', '.join(kpis) or 'not found'}\n"
            f"- News digest — {c['name']} ({ticker}): {news or 'no headline found'}")


def _raw_results(view: View) -> str:
    return "\n\n".join(r for c, r in view.answered.values()
                       if c["name"] in ("fetch_market_data", "search_news"))


def _notes_path(ticker: str, view: View) -> str | None:
    """Where a researcher was asked to save its raw notes: its company's file, the one file all
    researchers share, or nowhere."""
    if sc.SHARED_NOTES_INSTRUCTION in view.text:
        return sc.SHARED_NOTES_PATH
    return sc.notes_path(ticker) if sc.NOTES_INSTRUCTION in view.text else None


def notes_to_write(task: sc.Task, view: View, names: list[str]) -> dict | None:
    """A researcher asked for raw notes in a file writes them once, after its research steps.
    Notebook 12."""
    if not task.key.startswith("research:") or "write_file" not in names:
        return None
    path = _notes_path(task.key.split(":")[1], view)
    if path is None or f"Updated file {path}" in view.text:
        return None
    return {"file_path": path, "content": _raw_results(view)}


def research_reply(ticker: str, view: View, raw: bool) -> str:
    """What a researcher returns: the short report, or the raw dump; with notes saved, the path.
    Notebook 12."""
    path = _notes_path(ticker, view) or sc.notes_path(ticker)
    saved = f"Updated file {path}" in view.text
    if saved and raw:
        c = next(c for c in sc.companies() if c["ticker"] == ticker)
        return (f"{c['name']} ({ticker}) — raw notes saved to {path}\n"
                f"- Market data export — {c['name']} ({ticker}): in full in {path}\n"
                f"- News digest — {c['name']} ({ticker}): in full in {path}")
    if raw:
        return _raw_results(view)
    report = _research_report(ticker, view.text)
    return f"{report}\n- Raw notes: {path}" if saved else report


def noted_figure(n: sc.Needle, text: str) -> str | None:
    """The needle's value as a subagent's research notes quote it (``kpi=value``). Notebook 12."""
    m = re.search(rf"\({n.ticker}\): KPIs [^\n]*\b{n.kpi}=(\d+(?:\.\d+)?%)", text)
    return m.group(1) if m else None


# -- the arguments of a forced or literal call --------------------------------------------------


def literal_args(schema: dict, view: View) -> dict:
    """Arguments for a forced or literal call: those written as ``name(...)`` in the last human
    message, else the schema's defaults or visible placeholders. Notebook 01."""
    fn = schema["function"]
    props = fn.get("parameters", {}).get("properties", {})
    order = list(props)
    humans = [plain(m) for m in view.messages if m.type == "human"]
    args: dict[str, Any] = {}
    m = re.search(rf"\b{re.escape(fn['name'])}\s*\(([^()]*)\)", humans[-1] if humans else "")
    if m:
        try:
            call = ast.parse(f"f({m.group(1)})", mode="eval").body
            args = {order[i]: ast.literal_eval(a) for i, a in enumerate(call.args) if i < len(order)}
            args.update({k.arg: ast.literal_eval(k.value) for k in call.keywords})
        except (SyntaxError, ValueError):
            args = {}
    for name in fn.get("parameters", {}).get("required", []):
        if name not in args:
            args[name] = placeholder(name, props.get(name, {}))
    return args


def placeholder(name: str, prop: dict) -> Any:
    """A value that fits the schema and shows it was not understood: ``"<name>"`` for text.
    Notebook 01."""
    if "default" in prop:
        return prop["default"]
    if prop.get("enum"):
        return prop["enum"][0]
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    return {"integer": 0, "number": 0.0, "boolean": False, "array": [], "object": {}}.get(
        kind, f"<{name}>")
