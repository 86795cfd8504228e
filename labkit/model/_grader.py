"""Used by: ``labkit.model.chat`` (``LabModel`` as the grader of deepagents' ``RubricMiddleware``).

The lab model as a grader (notebook 14): it recognises the grader's payload — a ``<rubric-…>`` and
a ``<transcript-…>`` block, nonce-bracketed as ``RubricMiddleware`` builds them — and answers
with a ``GraderResponse``: through the bound ``GraderResponse`` tool (langchain's ``ToolStrategy``,
which ``create_agent`` picks for a model whose profile says ``structured_output: False``), else as
JSON text. Each rubric line (or each frozen criterion) is one criterion; it passes only with
evidence in the transcript: a ``write_file``/``edit_file`` call to the path the criterion names,
whose arguments name every scenario company the criterion names.

What it leaves out: judging prose. A criterion that names no file cannot be checked from tool
calls, so it fails with a gap saying so — the grader prompt asks to be conservative.
"""

from __future__ import annotations

import json
import re

from langchain_core.messages import AIMessage

from labkit import scenario as sc

__all__ = ["GRADER_TOOL", "grade", "grader_reply", "is_grader_prompt"]

GRADER_TOOL = "GraderResponse"  # the schema RubricMiddleware passes as response_format
_BLOCK = r"<{tag}-(?P<nonce>[0-9a-f]+)>\n(?P<body>.*?)\n</{tag}-(?P=nonce)>"
_WRITE = re.compile(r"<tool_call name='(?:write_file|edit_file)' args=(\{.*)")  # one line: a repr
_PATH = re.compile(r"/(?:reports|research)/[\w./-]*\w")
_ITEM = re.compile(r"^\s*(?:[-*]|\d+[.)])\s*")


def is_grader_prompt(text: str) -> bool:
    """Is this ``RubricMiddleware``'s grader payload? Both blocks, and the ask for a GraderResponse."""
    return all(re.search(_BLOCK.format(tag=tag), text, re.S) for tag in ("rubric", "transcript")) \
        and f"Return a {GRADER_TOOL}" in text


def _block(text: str, tag: str) -> str:
    m = re.search(_BLOCK.format(tag=tag), text, re.S)
    return m.group("body") if m else ""


def criteria(text: str) -> list[str]:
    """The criteria: the frozen list if the payload replays one, else the rubric's lines."""
    listed = _block(text, "criteria") or _block(text, "rubric")
    return [_ITEM.sub("", line).strip() for line in listed.splitlines() if line.strip()]


def _check(criterion: str, writes: list[str]) -> str | None:
    """None when the transcript shows the criterion met, else the gap: what evidence is missing."""
    paths = _PATH.findall(criterion)
    if not paths:
        return "names no file, and the lab grader checks only the files the transcript shows written"
    gaps = []
    for path in paths:
        done = [w for w in writes if f"'{path}'" in w]
        if not done:
            gaps.append(f"no write_file to {path} in the transcript")
            continue
        names = [c["name"] for c in sc.companies() if c["name"] in criterion]
        missing = [n for n in names if not any(n in w for w in done)]
        if missing:
            gaps.append(f"{path} as written does not name {', '.join(missing)}")
    return "; ".join(gaps) or None


def grade(text: str) -> dict:
    """The ``GraderResponse`` for a grader payload: one entry per criterion, each passed or with its
    gap; ``satisfied`` when every one has evidence, ``needs_revision`` otherwise, ``failed`` for a
    rubric with no criterion. Notebook 14.

    Example:
        >>> payload = ("<rubric-ab>\\n- /reports/risks.md exists\\n</rubric-ab>\\n\\n<transcript-ab>\\n"
        ...            "[user] Add a risks note.\\n</transcript-ab>\\n\\nReturn a GraderResponse.")
        >>> grade(payload)["result"]
        'needs_revision'
    """
    names = criteria(text)
    if not names:
        return {"result": "failed", "explanation": "The rubric lists no criterion to check.",
                "criteria": []}
    writes = _WRITE.findall(_block(text, "transcript"))
    verdicts = []
    for name in names:
        gap = _check(name, writes)
        verdicts.append({"name": name, "passed": True} if gap is None
                        else {"name": name, "passed": False, "gap": gap})
    failing = [v for v in verdicts if not v["passed"]]
    if not failing:
        return {"result": "satisfied", "explanation": "Every criterion has evidence in the transcript.",
                "criteria": verdicts}
    gaps = "; ".join(v["gap"] for v in failing)
    return {"result": "needs_revision", "criteria": verdicts,
            "explanation": f"{len(failing)} of {len(verdicts)} criteria lack evidence: {gaps}."}


def grader_reply(text: str, tools: list[str]) -> AIMessage:
    """The verdict as a call to the bound ``GraderResponse`` tool (``ToolStrategy``), else as JSON
    text (a provider's native structured output). The call has no id: the chat model numbers it."""
    verdict = grade(text)
    if GRADER_TOOL in tools:
        return AIMessage("", tool_calls=[{"name": GRADER_TOOL, "args": verdict, "id": None,
                                          "type": "tool_call"}])
    return AIMessage(json.dumps(verdict))
