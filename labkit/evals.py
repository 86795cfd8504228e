"""Targeted evals: goal retention and repeated work, read off finished scenario runs.

Notebook 14 introduces them (goal anchors under forced compaction); notebook 15 builds on them.

* :func:`forced_compaction` — the running example under deepagents with frequent forced
  compaction (its own ``SummarizationMiddleware``, built by hand: every ``trigger`` messages,
  keep ``keep``, the constructor's other defaults), with or without a goal anchor.
* :func:`reminded` — the user turns, with a user who answers "what should I work on?" by sending
  the same request again (at most ``times`` per turn). A goal lost then costs what it costs in
  real life: the user repeats themselves, and the agent redoes whatever it can no longer see.
* :func:`anchor_calls` — the tool calls that keep a goal anchor: ``write_todos``, and any file
  tool on ``/progress.md``.
* :func:`drift` — one row for a table: goal losses, steps repeated, goal completed, needle,
  model calls, tokens sent, anchor calls and the tokens of the anchor's own messages.

What it leaves out: judging a real model's wording. A goal loss is the lab model's fixed reply
(``prompts.GOAL_LOST``), as in ``scenario.score``; a real model says it in its own words.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from labkit.model import PROGRESS_PATH, PROGRESS_PROMPT, TODO_TOOL
from labkit.prompts import GOAL_LOST
from labkit.tokens import TokenCounter

__all__ = ["ANCHORS", "anchor_calls", "drift", "forced_compaction", "reminded"]

ANCHORS = ("none", "todo", "progress")


def reminded(turns: Iterable[str], model, times: int = 2) -> Iterator[str]:
    """Yield each user turn; after it, while the lab model's last reply was "I can no longer see
    what you asked me to do" (at most ``times`` in a row), yield the same turn again.

    Pass it as ``scenario.run(model, turns=reminded(scenario.TURNS, model))``: the run reads the
    turns one at a time, so each reminder sees the reply to the turn before it.
    """
    if isinstance(times, bool) or not isinstance(times, int) or times < 0:
        raise ValueError(f"times must be a whole number of reminders, 0 or more; got {times!r}")
    if not hasattr(model, "calls"):
        raise TypeError(f"reminded() reads the lab model's call log; {type(model).__name__} has "
                        "no .calls (use labkit.LabModel)")
    for text in turns:
        yield text
        for _ in range(times):
            last = next((c for c in reversed(model.calls) if c.kind == "agent"), None)
            if last is None or last.response is None or last.response.text != GOAL_LOST:
                break
            yield text


def forced_compaction(anchor: str = "none", *, trigger: int = 8, keep: int = 4, reminders: int = 2,
                      model=None):
    """Run the scenario under ``create_deep_agent`` with deepagents' ``SummarizationMiddleware``
    firing every ``trigger`` messages and keeping ``keep``, the user re-sending a turn when the
    goal is lost (:func:`reminded`). ``anchor``: ``"none"``, ``"todo"`` (langchain's
    ``TodoListMiddleware``) or ``"progress"`` (``model.PROGRESS_PROMPT`` as the system prompt).

    The middleware keeps its constructor's default ``trim_tokens_to_summarize`` (4,000): the
    summarizer reads only the last 4,000 tokens of what it folds, from a human message on, so a
    folded export leaves the summary without the request. (``create_summarization_middleware``,
    the factory ``create_deep_agent`` uses, sets it to ``None``.)
    """
    from deepagents.backends import StateBackend
    from deepagents.middleware.summarization import SummarizationMiddleware
    from langchain.agents.middleware import TodoListMiddleware

    from labkit import scenario
    from labkit.model import LabModel

    if anchor not in ANCHORS:
        raise ValueError(f"anchor must be one of {ANCHORS}, not {anchor!r}")
    model = LabModel(window=1_000_000) if model is None else model
    middleware = [SummarizationMiddleware(model, backend=StateBackend(), trigger=("messages", trigger),
                                          keep=("messages", keep))]
    kwargs = {"system_prompt": PROGRESS_PROMPT} if anchor == "progress" else {}
    if anchor == "todo":
        middleware.insert(0, TodoListMiddleware())
    return scenario.run(model, middleware=middleware, harness="deep",
                        turns=reminded(scenario.TURNS, model, reminders), **kwargs)


def anchor_calls(messages: Iterable[BaseMessage]) -> list[dict]:
    """The tool calls in ``messages`` that keep an anchor: ``write_todos``, or a file tool whose
    path is ``/progress.md``."""
    return [tc for m in messages if isinstance(m, AIMessage) for tc in m.tool_calls
            if tc["name"] == TODO_TOOL
            or PROGRESS_PATH in (tc["args"].get("file_path"), tc["args"].get("path"))]


def drift(run, counter: TokenCounter | None = None) -> dict:
    """How a run fared against goal drift, as one table row (see the module docstring).

    ``anchor tokens`` counts the anchor's own messages once each (its calls and the tools'
    answers); every later call that still sees them pays for them again, which ``tokens sent``
    includes. It needs the whole history in ``run.messages``, so it undercounts after a
    compaction that rewrites state (langchain's own ``SummarizationMiddleware``).
    """
    counter = counter or TokenCounter()
    score = run.score
    calls = anchor_calls(run.messages)
    ids = {tc["id"] for tc in calls}
    own = [m for m in run.messages
           if (isinstance(m, AIMessage) and m.tool_calls and all(tc["id"] in ids for tc in m.tool_calls))
           or (isinstance(m, ToolMessage) and m.tool_call_id in ids)]
    return {"goal losses": score.goal_lost, "steps repeated": score.steps_repeated,
            "goal completed": score.goal_completed, "needle": score.needle_correct,
            "model calls": len(run.records), "tokens sent": sum(r.seen for r in run.records),
            "anchor calls": len(calls), "anchor tokens": sum(counter.message(m) for m in own)}
