"""Exercises for notebook 03 · Middleware: hooks in the agent loop.

q1 is a middleware to write: it trims the market-data exports in what the model *sees* and
leaves what the agent *stores* whole. The checker runs the scenario's first turn with it on a
lab model whose window is 60,000 tokens (the naive turn peaks near 154,000) and reads the run:
a refused request, an export lost from the state, a step the lab model repeated because its
evidence was trimmed away, or an error from the class itself.
"""

from __future__ import annotations

import inspect

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage

from labkit import LabModel, scenario
from labkit.exercises.core import Exercise

__all__ = ["q1"]

WINDOW = 60_000
TOOL = "fetch_market_data"
NODE_HOOKS = ("before_agent", "before_model", "after_model", "after_agent")


def _names() -> dict:
    """The names notebook 03 has imported by its exercise."""

    return {"AgentMiddleware": AgentMiddleware, "ToolMessage": ToolMessage}


def _edits_state(cls) -> list[str]:
    return [h for h in NODE_HOOKS if getattr(cls, h) is not getattr(AgentMiddleware, h)]


def _run(middleware):
    return scenario.run(LabModel(window=WINDOW), middleware=[middleware], turns=scenario.TURNS[:1],
                        recursion_limit=60)


def _lost(run) -> list:
    """The fetched exports the state no longer holds whole."""
    exports = {scenario.export_text(c["ticker"]) for c in scenario.companies()}
    return [m for m in run.messages if isinstance(m, ToolMessage) and m.name == TOOL
            and m.content not in exports]


def _without(cls, hooks: list[str]) -> type:
    """``cls`` with its node hooks put back to AgentMiddleware's (which the agent then skips)."""
    return type(cls.__name__, (cls,), {h: getattr(AgentMiddleware, h) for h in hooks})


def _check_q1(answer) -> str | None:
    if not (inspect.isclass(answer) and issubclass(answer, AgentMiddleware)):
        return f"give the class itself (a subclass of AgentMiddleware), not {answer!r}"
    try:
        middleware = answer()
    except TypeError as e:
        return f"TrimExports() should need no arguments, but: {e}"
    run = _run(middleware)
    if refused := next((r for r in run.records if r.overflow), None):
        return (f"call {refused.index} sent the model {refused.seen:,} tokens, over its {WINDOW:,}-token "
                f"window: the exports still reach it in full (trim them in the request that "
                "wrap_model_call hands to handler)")
    lost = _lost(run)
    if lost:
        kept = sum(len(str(m.content)) for m in lost)
        hooks = _edits_state(answer)
        if hooks and not _lost(_run(_without(answer, hooks)())):  # the cause, flipped: hooks off
            how = f"your {', '.join(hooks)} changed the state; trim only the request, in wrap_model_call"
        else:
            how = ("you changed the messages in place, and the request's messages are the state's own "
                   "objects; hand handler new ones: request.override(messages=[...]) with m.model_copy(...)")
        return (f"the state no longer holds {len(lost)} export(s) whole (they are down to {kept:,} "
                f"characters): {how}")
    if run.score.steps_repeated:
        return (f"the lab model did steps again ({', '.join(run.score.repeated)}): it takes a step as "
                "done only while it sees the first line of that step's result, and your trimmed "
                "export no longer has it; keep each export's first line")
    if run.error is not None:
        return (f"the turn ended with {type(run.error).__name__}: {str(run.error)[:200]} — raised by "
                "your middleware or by what it handed on")
    if scenario.REPORT_PATH not in run.files:
        return "the turn finished without writing the report: " + str(run.score)
    return None


q1 = Exercise(
    prompt=f"Write a middleware class TrimExports so that the scenario's first turn runs on a "
           f"{WINDOW:,}-token lab model: the model is sent trimmed market-data exports, the "
           "state keeps every export whole, and no step is done twice (the lab model takes a step "
           "as done while it sees its result's first line: keep it).",
    checker=_check_q1,
    hints=[
        "Only wrap_model_call can change what the model sees without changing the state: build "
        "a new list from request.messages and call handler(request.override(messages=new)). The "
        "before_model and after_model hooks return updates to the state itself.",
        "For each ToolMessage m whose m.name is 'fetch_market_data', put in the list "
        "m.model_copy(update={'content': ...}) with the export's first line and a short note; "
        "never assign m.content — that object is the one the state holds. Trimming every "
        "export, or every one but the latest, both fit.",
    ],
    solution_text=(
        "class TrimExports(AgentMiddleware):\n"
        "    def wrap_model_call(self, request, handler):\n"
        "        def trim(m):\n"
        "            if isinstance(m, ToolMessage) and m.name == 'fetch_market_data':\n"
        "                first = m.content.splitlines()[0]\n"
        "                return m.model_copy(update={'content': first + '\\n[trimmed in the request]'})\n"
        "            return m\n"
        "        return handler(request.override(messages=[trim(m) for m in request.messages]))\n\n"
        "answer = TrimExports"
    ),
    given=_names,
)
