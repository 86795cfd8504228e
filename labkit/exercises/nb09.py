"""Exercises for notebook 09 · Compaction without deletion.

The run is notebook 09's: the running example on a 60,000-token window under labkit's
``SummarizeMiddleware`` with its defaults (four compactions). q1 asks for the view the model got on
one model call, rebuilt from the run's state alone (its messages and its events). The checker
compares the answer with what the lab model actually received on that call (``LabModel.calls``),
and for a wrong answer says which step of the rebuild went astray.
"""

from __future__ import annotations

from functools import cache

from langchain_core.messages import BaseMessage

from labkit import LabModel, scenario
from labkit.exercises.core import Exercise
from labkit.summarize import SummarizeMiddleware, events_of, view

__all__ = ["CALL", "WINDOW", "q1", "recorded"]

WINDOW = 60_000
CALL = 8


@cache
def recorded():
    """``(run, agent_calls)``: notebook 09's run and what the lab model received on each agent call."""

    model = LabModel(window=WINDOW)
    run = scenario.run(model, middleware=[SummarizeMiddleware(model)])
    return run, tuple(c for c in model.calls if c.kind == "agent")


def _names() -> dict:
    """The names notebook 09 has defined by its exercise."""

    return {"run": recorded()[0], "events_of": events_of, "view": view}


def _key(messages) -> tuple:
    """Messages compared by what a model reads: kind, text, tool calls and the call they answer."""
    return tuple((m.type, m.content if isinstance(m.content, str) else repr(m.content),
                  tuple(tc["id"] for tc in getattr(m, "tool_calls", None) or []),
                  getattr(m, "tool_call_id", None)) for m in messages)


def _check_q1(answer) -> str | None:
    if not isinstance(answer, (list, tuple)) or not all(isinstance(m, BaseMessage) for m in answer):
        return (f"answer with a list of messages — the view the model got on call {CALL} "
                f"(not {type(answer).__name__})")
    run, calls = recorded()
    truth = calls[CALL].messages
    got = _key(answer)
    if got == _key(truth):
        return None
    n, messages, events = run.records[CALL].messages_stored, run.messages, events_of(run.state)
    if got == _key(messages[:n]):
        return (f"that is everything state held at call {CALL} ({n} messages); the model got the view: the "
                "summary of the event in effect, then the messages from its cut on")
    if got == _key(messages):
        return (f"that is the whole final state; at call {CALL} state held only {n} messages "
                f"(run.records[{CALL}].messages_stored), and the model saw a view of them")
    in_effect = [e for e in events if e.created_at <= n][-1]
    if got == _key(view(messages, events[-1])):
        return (f"that is the view at the end of the run (the last event, every message); at call {CALL} "
                f"state held {n} messages and event {in_effect.number} was in effect")
    if got == _key(view(messages, in_effect)):
        return (f"event {in_effect.number} is the right one, but the view has messages that came after call "
                f"{CALL}: cut state to run.records[{CALL}].messages_stored = {n} messages first")
    for e in events:
        if got == _key(view(messages[:n], e)):
            if e.created_at > n:
                return (f"event {e.number} was made later, when state held {e.created_at} messages; at call "
                        f"{CALL} it held {n}: use the latest event made at or before that "
                        f"(created_at <= {n})")
            return (f"event {e.number} was already replaced by event {in_effect.number} at call {CALL}: the "
                    "view is rebuilt from the latest event, which holds the newest summary")
        if got == _key(messages[e.cut:n]):
            return (f"those are the messages from event {e.number}'s cut, "
                    "but the summary message is missing: view() puts it first")
    return (f"the model got {len(truth)} messages on call {CALL}, starting with a {truth[0].type} message; "
            f"your list has {len(answer)}")


q1 = Exercise(
    prompt=f"From the run's state alone — run.messages and events_of(run.state) — rebuild the view the "
           f"model got on model call {CALL} (run.records[{CALL}]). Answer with the list of messages.",
    checker=_check_q1,
    hints=[
        f"How many messages did state hold at call {CALL}? The Recorder logged it: "
        f"run.records[{CALL}].messages_stored. Messages after that did not exist yet.",
        "Which event was in effect? Each new event replaces the previous one, and an event exists from "
        "the moment it was made: the latest with e.created_at <= that number.",
        "Then summarize.view(those messages, that event): the summary message, then the messages from "
        "event.cut on.",
    ],
    solution_text=(
        f"n = run.records[{CALL}].messages_stored\n"
        "event = [e for e in events_of(run.state) if e.created_at <= n][-1]\n"
        "answer = view(run.messages[:n], event)"
    ),
    given=_names,
)
