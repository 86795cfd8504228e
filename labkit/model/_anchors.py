"""Used by: ``labkit.model.behaviour`` (and ``labkit.model``, which re-exports the two constants).

The lab model's goal anchors, a todo list and a progress file (notebook 14), for a task of
``ANCHOR_MIN_STEPS`` or more steps: what to write (the request, then each step with its status;
the goal, then the evidence of each step done), what the anchors still show when a summary lost
the goal, which anchor call is due before the next step, and the one read of the progress file
before the model says it has lost track. ``labkit.evals`` and notebook 14 use the constants.

What it leaves out: the tools themselves — ``write_todos`` is langchain's ``TodoListMiddleware``,
the file tools are deepagents'; the instruction that turns the file on is
``labkit.prompts.PROGRESS_PROMPT``.
"""

from __future__ import annotations

import ast
import re

from labkit import scenario as sc
from labkit.model._context import View, plain
from labkit.prompts import PROGRESS_PATH

__all__ = ["ANCHOR_MIN_STEPS", "TODO_TOOL", "anchor_call", "anchored_task", "done_steps", "recall_call"]

TODO_TOOL = "write_todos"  # langchain's TodoListMiddleware adds it; deepagents does not by default
# write_todos' own description: "If the user's request is trivial and takes less than 3 steps,
# it is better to NOT use this tool". The lab model follows it, for both anchors.
ANCHOR_MIN_STEPS = 3


def _progress_on(view: View) -> bool:
    """The progress-file anchor is on when a system message names the file."""
    return any(m.type == "system" and PROGRESS_PATH in plain(m) for m in view.messages)


def _todo_item(step: sc.Step) -> str:
    """A step as a todo item: its tool and argument — not its evidence, which only a result shows."""
    return f"{step.tool} {next(iter(step.args.values()))}"


def _todo_list(task: sc.Task, done: set[str]) -> list[dict]:
    """The user's request first (so the goal travels with the list), then one item per step."""
    todo = [s for s in task.steps if s.key not in done]
    items = [{"content": task.request, "status": "in_progress" if todo else "completed"}]
    for s in task.steps:
        status = "completed" if s.key in done else "in_progress" if s is todo[0] else "pending"
        items.append({"content": _todo_item(s), "status": status})
    return items


def _progress_text(task: sc.Task, done: set[str]) -> str:
    """The progress file: the goal, then the evidence of each step done (quoted, so it counts)."""
    lines = [f"- {s.evidence}" for s in task.steps if s.key in done] or ["- nothing yet"]
    return f"# Progress\n\nGoal: {task.request}\n\nDone:\n" + "\n".join(lines) + "\n"


def _latest_todos(view: View) -> list[dict] | None:
    """The todo list of the latest write_todos call the tool accepted, if it is still visible.
    (TodoListMiddleware keeps the list in state but never shows it to the model: the model sees
    only its own call and the tool's answer.)"""
    for call, result in reversed(view.answered.values()):
        if call["name"] == TODO_TOOL and result.startswith("Updated todo list"):
            todos = call["args"].get("todos")
            if not isinstance(todos, list):  # the call's arguments were cleared: read the answer
                try:
                    todos = ast.literal_eval(result.removeprefix("Updated todo list to "))
                except (SyntaxError, ValueError):
                    return None
            return [dict(t) for t in todos if isinstance(t, dict)]
    return None


def _latest_progress(view: View) -> str | None:
    """The progress file as last seen: the latest write_file to it, or read_file of it."""
    for call, result in reversed(view.answered.values()):
        path = call["args"].get("file_path")
        if path != PROGRESS_PATH:
            continue
        if call["name"] == "write_file" and result.startswith("Updated file"):
            return str(call["args"].get("content", ""))
        if call["name"] == "read_file":
            return None if result.startswith("Error") else result
    return None


def _read_progress(view: View) -> bool:
    """Is a read of the progress file still in view? (Then it is not read again.)"""
    return any(c["name"] == "read_file" and c["args"].get("file_path") == PROGRESS_PATH
               for c, _ in view.answered.values())


def _task_named(text: str) -> sc.Task | None:
    return next((t for t in sc.tasks() if t.marker in text), None)


def _progress_task(text: str) -> sc.Task | None:
    """The task named on a progress file's Goal line."""
    m = re.search(r"Goal: (.+)", text)
    return _task_named(m.group(1)) if m else None


def anchored_task(view: View) -> sc.Task | None:
    """The goal an anchor carries, for when no request or summary intent is visible: the first
    item of the latest todo list, or the Goal line of the progress file. Notebook 14."""
    todos = _latest_todos(view)
    if todos:
        task = _task_named(str(todos[0].get("content", "")))
        if task:
            return task
    return _progress_task(_latest_progress(view) or "")


def done_steps(task: sc.Task, view: View) -> set[str]:
    """Steps whose evidence is visible (a result, a summary line, a progress-file line), or that
    the latest todo list marks completed. Notebook 14."""
    done = {s.key for s in task.steps if s.evidence in view.text}
    completed = {str(t.get("content")) for t in _latest_todos(view) or () if t.get("status") == "completed"}
    return done | {s.key for s in task.steps if _todo_item(s) in completed}


def anchor_call(task: sc.Task, view: View, names: list[str], done: set[str]) -> tuple | None:
    """The anchor update due before the next step, as (tool, args): write the todo list if it is
    not the one visible; with the progress file on, read it first if it is not in view, then
    rewrite it if it is out of date. Notebook 14."""
    if len(task.steps) < ANCHOR_MIN_STEPS:
        return None
    if TODO_TOOL in names and _latest_todos(view) != _todo_list(task, done):
        return TODO_TOOL, {"todos": _todo_list(task, done)}
    if not (_progress_on(view) and "write_file" in names):
        return None
    seen = _latest_progress(view)
    if seen is None and "read_file" in names and not _read_progress(view):
        return "read_file", {"file_path": PROGRESS_PATH}
    if seen is None or _progress_task(seen) is not task or not all(
            s.evidence in seen for s in task.steps if s.key in done):
        return "write_file", {"file_path": PROGRESS_PATH, "content": _progress_text(task, done)}
    return None


def recall_call(view: View, names: list[str]) -> tuple | None:
    """Lost the goal, with the progress file on: read it once before giving up. Notebook 14."""
    if _progress_on(view) and "read_file" in names and not _read_progress(view):
        return "read_file", {"file_path": PROGRESS_PATH}
    return None
