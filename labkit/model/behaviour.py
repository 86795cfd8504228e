"""What the lab model does from what it sees: the short script behind every reply (notebook 01).

One pure function, :func:`act`, reads the context (a ``View``) and returns the next AI message:
a step of the scenario's task whose evidence is not in view, an answer, or an admission that
the goal is lost. Its docstring lists every rule. :func:`summary_reply` is the model as a
summarizer; :func:`wants_compaction` its manual-compaction policy (notebook 11).

What it leaves out: any language understanding — outside the scenario it says what it is, or
calls the bound tool a prompt names by word matching (``_prose``); the plumbing of a chat model
(tools bound, ids, usage, the window) is ``labkit.model.chat``.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from labkit import prompts
from labkit import scenario as sc
from labkit.model._anchors import anchor_call, anchored_task, done_steps, recall_call
from labkit.model._context import PATHS, View, active_task, plain
from labkit.model._prose import named_tool, prose_args
from labkit.model._skills import memory_sources, skill_to_read, stated_preference
from labkit.model._writing import (
    draft_file,
    lab_summary,
    literal_args,
    noted_figure,
    notes_to_write,
    placeholder,
    research_reply,
)

__all__ = ["COMPACT_TOOL", "RESEARCH_JOB", "act", "delegate_to", "summary_reply", "wants_compaction"]

COMPACT_TOOL = "compact_conversation"  # labkit's and deepagents' manual-compaction tool
# a description that names the research job: who it is about, or the work itself (notebook 12)
RESEARCH_JOB = re.compile(r"\b(competitors?|rivals?|compan(y|ies)|firms?|business(es)?|tickers?)\b"
                          r"|\bmarket[- ]data\b|\bnews\b|\bresearch(es|er|ing)?\b", re.I)
_LISTED = re.compile(r"^\s*- ([\w-]+): (.+)$", re.M)  # a task tool's subagent lines


def act(view: View, tools: list[dict], tool_choice: Any = None, *,
        compact_when: Literal["never", "boundary", "every_step"] = "never",
        delegate_research: bool = False, raw_subagent_output: bool = False,
        when_lost: Literal["ask", "finish"] = "ask") -> AIMessage:
    """The lab model's next message, decided from the context alone. Notebook 01.

    ``tools`` are the bound OpenAI-style schemas; ``tool_choice`` narrows the tools it may call
    ("none": none, a name: that one) and, if it forces a call the script did not make, the call
    is made with literal arguments or placeholders. Tool calls come back without ids (the chat
    model numbers them). The keywords are ``LabModel``'s fields of the same names.

    * **It works from evidence.** A task is a list of steps (``labkit.scenario``); it takes the
      first step whose evidence — the tool result's header, or a summary line quoting it — is not
      in its context. Summarize the evidence away and it repeats the work.
    * **It needs the goal.** If neither the user's request nor a summary's SESSION INTENT is
      visible, it says it has lost track — goal drift you can count. With
      ``when_lost="finish"`` it shows drift's other face instead (notebook 14): it takes the work
      it can see for the whole task and declares it finished (``prompts.CLAIMED_DONE``, naming
      what the visible evidence shows done) — no question, so only the missing output tells.
    * **It recovers facts only from context or files.** Asked the needle question, it answers
      from context; else it greps (or pages through) a file path it can see — an offload stub, a
      summary's archive; else it declines to give a number.
    * **As a subagent** (notebook 12) it researches one company and returns what its system
      prompt asks for. A researcher's prompt (it holds ``scenario.RESEARCHER_ROLE``) that asks for
      a short report (``scenario.REPORT_LIMIT``) gets one; a researcher's prompt without that limit
      (``scenario.researcher(limit=False)``) gets its tool results whole — the raw dump, since
      nothing bounds the reply. No researcher prompt (a research request sent straight to it):
      the short report. ``raw_subagent_output=True`` forces the dump whatever the prompt says.
      If its context asks for raw notes in a file
      (``scenario.NOTES_INSTRUCTION``, or the shared file's) and it has ``write_file``, it saves
      the dump to ``scenario.notes_path(ticker)`` first and names the path in its reply (only the
      path, in raw mode).
    * **As a parent** (notebook 12), with ``delegate_research=True`` and a ``task`` tool bound
      during the report task, it delegates: one ``task`` call per company whose research evidence
      is not visible — all in one AI message — to the first subagent the tool's description lists
      (``- name: description``) whose description names the job — who it is about (a
      competitor, rival, company, firm, business or ticker) or the work (market data, news,
      research: ``RESEARCH_JOB``) — else to ``general-purpose`` if that catch-all is listed (deepagents
      always adds it). The description decides: with neither (a vague description, no
      catch-all), it makes no ``task`` call and does the research itself, in its own context.
      A company whose task came back without the evidence is not delegated again: the parent
      does that step itself. It reads figures and headlines from the reports.
    * **It keeps a goal anchor when given one** (notebook 14), for a task of 3 or more steps (the
      threshold in ``write_todos``' own description). With ``write_todos`` bound (langchain's
      ``TodoListMiddleware``) it writes a todo list — the user's request first, then one item per
      step — at the start of the task and again after each step, statuses from the evidence it
      sees. With a system prompt naming ``/progress.md`` (``PROGRESS_PROMPT``) it keeps that file
      with ``write_file`` — the goal and the evidence of each step done — reading it first
      whenever it is not in view. When no request or summary intent is visible, it takes the goal
      and the steps done from the latest visible todo list or progress file; with the progress
      file on and nothing in view, it reads the file before saying it has lost track.
    * **It uses skills and memory when deepagents shows them** (notebook 13). When the system
      prompt's skills section lists a skill whose description shares an acronym (``QBR``) with
      the user's request, it reads that ``SKILL.md`` with ``read_file`` before its first step, and
      drafts the report in the format it finds there (title and required ``## `` headings) — only
      while the read result is in its context. It applies the preferences it can see in
      ``<agent_memory>`` (a TL;DR line, a Sources line) and nowhere else; when the user states one
      ("From now on, …"), it adds it to the memory file shown there with ``edit_file`` and says so.
    * **It compacts by hand only when told how** (notebook 11, :func:`wants_compaction`). With a
      ``compact_conversation`` tool bound, ``compact_when`` sets a fixed policy: ``"never"`` (the
      default: it ignores the tool); ``"boundary"``: when the latest message is a user request
      naming a scenario task and the message before it is a finished answer (the previous task
      is done), it calls the tool first — once per turn, since the next message is the tool's
      answer; ``"every_step"``: after every tool result, mid-task. Never right after
      ``compact_conversation``'s own answer (no loops), and never when the task is lost.
    * **Outside the scenario** it says what it is and how to switch to a real model
      (``LABKIT_MODEL``); when a tool is forced or written out literally as ``name(args)``, it
      calls it with those literal arguments or schema placeholders. When the latest user message
      names what a bound tool does (a word of its name or description summary), it calls that
      tool once, arguments copied from the prompt by fixed rules (``_prose``), and then relays
      the tool's result — word matching, never a guess at intent.
    """
    names = [t["function"]["name"] for t in tools]
    forced = bool(names) and (tool_choice in ("any", "required", True) or tool_choice in names)
    if tool_choice == "none" or tool_choice in names:
        names = [n for n in names if n == tool_choice]
        tools = [t for t in tools if t["function"]["name"] in names]
    task = active_task(view) or anchored_task(view)
    noted = _skills_and_memory(task, view, names)  # notebook 13
    if noted is not None:
        message = noted
    elif task is not None and wants_compaction(compact_when, view, names):
        message = AIMessage("", tool_calls=[_tool_call(COMPACT_TOOL, {})])
    elif task is None:
        recall = recall_call(view, names)
        message = AIMessage("", tool_calls=[_tool_call(*recall)]) if recall \
            else _outside(view, tools, when_lost)
    elif task.key == "needle":
        message = _answer_needle(view, names)
    else:
        message = _delegate(task, view, tools, delegate_research) \
            or _work(task, view, names, raw_subagent_output or _unbounded(view))
    if forced and not message.tool_calls:
        message = AIMessage("", tool_calls=[_tool_call(names[0], literal_args(tools[0], view))])
    return message


def _tool_call(name: str, args: dict) -> dict:
    return {"name": name, "args": args, "id": None, "type": "tool_call"}  # the chat model numbers it


def _work(task: sc.Task, view: View, names: list[str], raw: bool) -> AIMessage:
    """The anchor update due, else the first step whose evidence is not in view, else the
    researcher's notes file, else the task's closing answer."""
    done = done_steps(task, view)
    anchor = anchor_call(task, view, names, done)
    if anchor:
        return AIMessage("", tool_calls=[_tool_call(*anchor)])
    for step in task.steps:
        if step.key in done or step.tool not in names:
            continue
        args = dict(step.args)
        if step.tool == "write_file":
            args["content"] = draft_file(task, step, view)
        return AIMessage("", tool_calls=[_tool_call(step.tool, args)])
    notes = notes_to_write(task, view, names)
    if notes:
        return AIMessage("", tool_calls=[_tool_call("write_file", notes)])
    return AIMessage(_finish(task, view, names, raw))


def _delegate(task: sc.Task, view: View, tools: list[dict], delegate: bool) -> AIMessage | None:
    """As a parent: one ``task`` call per company not yet researched nor delegated."""
    schema = next((t["function"] for t in tools if t["function"]["name"] == "task"), None)
    if not delegate or task.key != "report" or schema is None:
        return None
    kind = delegate_to(schema.get("description", ""))
    if kind is None:
        return None
    asked = {c["args"].get("description") for c, _ in view.answered.values() if c["name"] == "task"}
    calls = []
    for research in (t for t in sc.tasks() if t.key.startswith("research:")):
        if research.request in asked or all(s.evidence in view.text for s in research.steps):
            continue
        calls.append(_tool_call("task", {"description": research.request, "subagent_type": kind}))
    return AIMessage("", tool_calls=calls) if calls else None


def delegate_to(task_description: str) -> str | None:
    """The subagent the lab parent hands a company's research to: the first one a ``task`` tool's
    description lists whose own description names the job (``RESEARCH_JOB``), else the
    ``general-purpose`` catch-all if listed, else None — no delegation. Notebook 12.

    Example:
        >>> delegate_to("- general-purpose: For anything.\\n- researcher: Researches one competitor.")
        'researcher'
        >>> delegate_to("- helper: Helps the main agent with tasks.") is None
        True
    """
    listed = _LISTED.findall(task_description)
    named = next((name for name, text in listed  # the catch-all is the fallback, not a match
                  if name != "general-purpose" and RESEARCH_JOB.search(text)), None)
    return named or ("general-purpose" if any(name == "general-purpose" for name, _ in listed) else None)


def _unbounded(view: View) -> bool:
    """A researcher's system prompt that sets no limit on its reply (notebook 12)."""
    prompts_ = [plain(m).lower() for m in view.messages if m.type == "system"]
    return any(sc.RESEARCHER_ROLE.lower() in p and sc.REPORT_LIMIT.lower() not in p for p in prompts_)


def _finish(task: sc.Task, view: View, names: list[str], raw: bool) -> str:
    if task.key.startswith("research:"):
        return research_reply(task.key.split(":")[1], view, raw)
    if task.output and "write_file" not in names:
        body = "\n".join(draft_file(task, s, view) for s in task.steps if s.tool == "write_file")
        return f"I have no write_file tool, so here is the draft for {task.output}:\n\n{body}"
    if task.key == "briefings":
        return f"One briefing per competitor is written under {sc.BRIEFINGS_DIR}/."
    if task.key == "report":
        return f"The weekly competitor report is written to {sc.REPORT_PATH}; it covers all " \
               "five competitors."
    return f"The risks note is saved to {sc.RISKS_PATH}, one line per competitor."


def _answer_needle(view: View, names: list[str]) -> AIMessage:
    n = sc.needle()
    value = n.find(view.text) or noted_figure(n, view.text)
    if value:
        return AIMessage(f"Brightloom's Q3 net revenue retention was {value}, as recorded in "
                         f"its market-data export (KPI `{n.kpi}`).")
    searched: dict[str, int] = {}  # path -> next offset (grep counts as all)
    for call, result in view.answered.values():
        path = call["args"].get("path") or call["args"].get("file_path")
        if call["name"] == "grep" and path:
            searched[path] = 10**9
        elif call["name"] == "read_file" and path:
            m = re.search(r"lines \d+-(\d+) of (\d+)", result)
            done = not m or int(m.group(1)) >= int(m.group(2))
            searched[path] = 10**9 if done else max(searched.get(path, 0), int(m.group(1)))
    for path in dict.fromkeys(p.rstrip(".:") for p in PATHS.findall(view.text)):
        if path.startswith("/reports/") or searched.get(path, 0) >= 10**9:
            continue
        if "grep" in names:
            return AIMessage("", tool_calls=[_tool_call(
                "grep", {"pattern": n.pattern, "path": path, "output_mode": "content"})])
        if "read_file" in names:
            return AIMessage("", tool_calls=[_tool_call(
                "read_file", {"file_path": path, "offset": searched.get(path, 0), "limit": 200})])
    detail = ""
    if f"{n.ticker} {n.kpi}" in view.text or "exact figure not kept" in view.text:
        detail = " — my summary says the figure was reported, but not its value"
    return AIMessage(prompts.NEEDLE_NOT_FOUND.format(detail=detail))


def _skills_and_memory(task: sc.Task | None, view: View, names: list[str]) -> AIMessage | None:
    """Record a preference the user just stated, or read a skill that fits the request."""
    said = stated_preference(view)
    memory = memory_sources(view) if said else {}
    if memory:
        i, rule = said
        path, content = next(iter(memory.items()))
        after = {m.tool_call_id for m in view.messages[i + 1:] if isinstance(m, ToolMessage)}
        edits = [r for cid, (c, r) in view.answered.items() if cid in after
                 and c["name"] == "edit_file" and c["args"].get("file_path") == path]
        if edits:
            return AIMessage(prompts.MEMORY_SAVED.format(rule=rule, path=path, result=edits[-1]))
        if rule in content:
            return AIMessage(prompts.MEMORY_HAD.format(rule=rule, path=path))
        if "edit_file" in names:
            last = [line for line in content.splitlines() if line.strip()][-1]
            return AIMessage("", tool_calls=[_tool_call("edit_file", {
                "file_path": path, "old_string": last, "new_string": f"{last}\n- {rule}"})])
    path = skill_to_read(task, view, names)
    if path:
        return AIMessage("", tool_calls=[_tool_call("read_file", {"file_path": path, "limit": 1000})])
    return None


def _outside(view: View, tools: list[dict], when_lost: str = "ask") -> AIMessage:
    """No scenario task is visible: goal lost (asked, or the visible work declared done), a
    literal tool call, a call to the tool the prompt names (``_prose``), the tool's result
    relayed, or the plain intro."""
    lab_context = any(s.evidence in view.text for t in sc.tasks() for s in t.steps) or \
        "SESSION INTENT" in view.text
    if lab_context:
        return AIMessage(_claimed_done(view) if when_lost == "finish" else prompts.GOAL_LOST)
    humans = [i for i, m in enumerate(view.messages) if m.type == "human"]
    if humans and tools:
        i = humans[-1]
        asked = plain(view.messages[i])
        results = [m for m in view.messages[i + 1:] if isinstance(m, ToolMessage)]
        if results:
            return AIMessage(f"The tool returned: {plain(results[-1])}")
        for t in tools:
            name = t["function"]["name"]
            if re.search(rf"\b{re.escape(name)}\s*\(", asked):
                return AIMessage("", tool_calls=[_tool_call(name, literal_args(t, view))])
        named = named_tool(asked, tools)  # issue 10: the prompt names what a tool does
        if named:
            args = prose_args(named, asked, placeholder)
            return AIMessage("", tool_calls=[_tool_call(named["function"]["name"], args)])
    return AIMessage(prompts.LAB_MODEL_INTRO)


def _claimed_done(view: View) -> str:
    """``prompts.CLAIMED_DONE``, naming the work the visible evidence shows done (notebook 14)."""
    seen = {}  # company name -> what was pulled for it, in the scenario's order
    for c in sc.companies():
        for kind, label in (("Market data export", "market data"), ("News digest", "news")):
            if f"{kind} — {c['name']} ({c['ticker']})" in view.text:
                seen.setdefault(c["name"], []).append(label)
    work = "; ".join(f"{' and '.join(kinds)} for {name}" for name, kinds in seen.items())
    return prompts.CLAIMED_DONE.format(work=f"I pulled the {work}" if work else "the work is finished")


def wants_compaction(policy: str, view: View, names: list[str]) -> bool:
    """Should the next reply be a ``compact_conversation`` call? (``compact_when``; notebook 11.)"""
    if policy == "never" or COMPACT_TOOL not in names:
        return False
    last = view.messages[-1]
    if policy == "every_step":
        if not isinstance(last, ToolMessage):
            return False
        call = view.answered.get(last.tool_call_id)
        return (call[0]["name"] if call else last.name) != COMPACT_TOOL
    before = view.messages[-2] if len(view.messages) > 1 else None
    return (isinstance(last, HumanMessage) and not last.additional_kwargs.get("lc_source")
            and any(t.marker in plain(last) for t in sc.tasks())
            and isinstance(before, AIMessage) and not before.tool_calls)


def summary_reply(prompt: str, keep_figures: bool = False) -> str:
    """The lab model as a summarizer: its extractive summary of the ``<messages>`` in a summary
    prompt (labkit's or deepagents'). Notebook 07.

    It drops exact figures unless ``keep_figures`` (``LabModel(keep_figures=True)``) or the
    prompt, outside the messages, asks to keep exact figures.
    """
    body = prompt
    if "<messages>" in prompt:
        body = prompt[prompt.rfind("<messages>") + len("<messages>"):]
        body = body[: body.rfind("</messages>")] if "</messages>" in body else body
    keep = keep_figures or "exact figures" in prompt.lower().replace(body.lower(), "")
    return lab_summary(body, keep_figures=keep)
