"""Used by: ``labkit.model.behaviour`` and ``labkit.model._writing``; ``labkit.model`` re-exports
:func:`prompt_sections` (notebook 13 measures each section with it).

What the lab model reads in deepagents' skills and memory sections (notebook 13): the system
prompt split where ``SkillsMiddleware`` and ``MemoryMiddleware`` appended to it; the skill to
read first (its listed description shares an acronym, ``QBR``, with the request) and the format
(title, ``## `` headings) of a ``SKILL.md`` in context; the memory files in ``<agent_memory>``,
the preferences they hold (a TL;DR line, a Sources line), and one the user just stated.

What it leaves out: any other skill or preference — the lab model matches these few patterns,
it does not understand a skill's instructions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage

from labkit import scenario as sc
from labkit.model._context import View, plain

__all__ = ["memory_sources", "prompt_sections", "skill_format", "skill_to_read", "stated_preference",
           "with_preferences"]

_SECTIONS = {"skills": "## Skills System", "memory": "<agent_memory>",
             "memory guidelines": "<memory_guidelines>"}
_SKILL_LISTED = re.compile(r"^- \*\*(?P<name>[a-z0-9-]+)\*\*: (?P<description>[^\n]*)\n"
                           r"(?:  -> Allowed tools: [^\n]*\n)?  -> Read `(?P<path>[^`]+)`", re.M)
_ACRONYM = re.compile(r"\b[A-Z]{2,}\b")
_PREFERENCES = {"tldr": re.compile(r"start every report with a one-line TL;DR", re.I),
                "sources": re.compile(r"end reports with a 'Sources' line", re.I)}


def prompt_sections(messages: Sequence[BaseMessage]) -> dict[str, str]:
    """The system prompt of a request, split where deepagents' middleware appended to it:
    ``prompt`` (the authored part), ``skills`` (SkillsMiddleware's section), ``memory``
    (MemoryMiddleware's ``<agent_memory>`` block) and ``memory guidelines``. Missing parts are
    empty strings; no system message gives all empty. Notebook 13."""
    system = next((m for m in messages if m.type == "system"), None)
    text = plain(system) if system is not None else ""
    starts = sorted((text.find(marker), name) for name, marker in _SECTIONS.items()
                    if marker in text)
    out = dict.fromkeys(["prompt", *_SECTIONS], "")
    out["prompt"] = text[: starts[0][0]].strip() if starts else text.strip()
    for (start, name), (end, _) in zip(starts, [*starts[1:], (len(text), "")]):
        out[name] = text[start:end].strip()
    return out


def memory_sources(view: View) -> dict[str, str]:
    """``path -> content`` of each memory file in ``<agent_memory>`` (none if not loaded). Notebook 13."""
    block = prompt_sections(view.messages)["memory"]
    body = block.removeprefix("<agent_memory>").split("</agent_memory>")[0].strip()
    parts = re.split(r"(?m)^(/\S+)\n\n", body)
    return {path: content.strip() for path, content in zip(parts[1::2], parts[2::2])}


def stated_preference(view: View) -> tuple[int, str] | None:
    """(position, rule) if the latest user message states a lasting preference. Notebook 13."""
    for i in range(len(view.messages) - 1, -1, -1):
        m = view.messages[i]
        if isinstance(m, HumanMessage) and not m.additional_kwargs.get("lc_source"):
            said = re.match(r"\s*from now on,\s*(.+?)\s*$", plain(m), re.I | re.S)
            if not said:
                return None
            rule = said.group(1)
            return i, rule[0].upper() + rule[1:]
    return None


def skill_to_read(task: sc.Task | None, view: View, names: list[str]) -> str | None:
    """The SKILL.md to read first: listed in the prompt, sharing an acronym with the request,
    not yet read (its read_file result is not in view), with a step of the task still to do.
    Notebook 13."""
    if task is None or "read_file" not in names:
        return None
    listed = list(_SKILL_LISTED.finditer(prompt_sections(view.messages)["skills"]))
    if not listed or all(s.evidence in view.text for s in task.steps):
        return None
    asked = next((plain(m) for m in reversed(view.messages)
                  if m.type == "human" and task.marker in plain(m)), "")
    read = {c["args"].get("file_path") for c, _ in view.answered.values() if c["name"] == "read_file"}
    for skill in listed:
        shared = set(_ACRONYM.findall(skill["description"])) & set(_ACRONYM.findall(asked))
        if shared and skill["path"] not in read:
            return skill["path"]
    return None


def skill_format(view: View) -> tuple[str | None, list[str]] | None:
    """The format of the first ``SKILL.md`` read into context that has one: its title (or None)
    and its ``## `` headings. Notebook 13."""
    for call, result in view.answered.values():
        path = str(call["args"].get("file_path", ""))
        if call["name"] != "read_file" or not path.endswith("/SKILL.md"):
            continue
        headings = re.findall(r"^\s*(?:\d+\s+)?- `(## [^`]+)`", result, re.M)
        title = re.search(r"`(# [^`]+)`", result)
        if headings:
            return (title.group(1) if title else None), headings
    return None


def with_preferences(draft: str, view: View) -> str:
    """The draft with each preference visible in ``<agent_memory>`` applied. Notebook 13."""
    memory = "\n".join(memory_sources(view).values())
    lines = draft.rstrip("\n").split("\n")
    if _PREFERENCES["tldr"].search(memory):
        seen = sum(f"Market data export — {c['name']}" in view.text for c in sc.companies())
        lines.insert(1, f"TL;DR: {seen} of {len(sc.companies())} competitors researched this "
                        "week; the details follow.")
    if _PREFERENCES["sources"].search(memory):
        lines += ["", "Sources: each competitor's market-data export and news digest "
                      "(fictional labkit data)."]
    return "\n".join(lines) + "\n"
