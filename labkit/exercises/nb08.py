"""Exercises for notebook 08 · Cutting safely.

The history is notebook 08's: the running example at a 128,000-token window under labkit's
``SummarizeMiddleware`` with its defaults — the 32 messages its state holds at the end (nothing is
deleted by a compaction). q1 asks where the pair-safe cut of ``keep=("messages", k)`` falls for a
few values of k; the checker compares each with ``labkit.summarize.cut_point`` and, for a wrong
one, says what sits at the position given.
"""

from __future__ import annotations

import sys
from functools import cache

from labkit import LabModel, scenario
from labkit.exercises.core import Exercise, as_whole
from labkit.summarize import SummarizeMiddleware, cut_point, safe_cut
from labkit.tokens import count_tokens

__all__ = ["KS", "WINDOW", "history", "q1"]

WINDOW = 128_000
KS = (9, 10, 13, 14, 20, 25)


@cache
def history() -> tuple:
    """The 32 messages of notebook 08's run, oldest first."""

    model = LabModel(window=WINDOW)
    return tuple(scenario.run(model, middleware=[SummarizeMiddleware(model)]).messages)


def _right(k: int) -> int:
    return cut_point(list(history()), ("messages", k), None, count_tokens)


def _describe(message) -> str:
    if message.type == "tool":
        return f"a tool result (the answer to {message.tool_call_id})"
    if message.type == "ai" and message.tool_calls:
        return f"the AI message that calls {message.tool_calls[0]['name']} ({message.tool_calls[0]['id']})"
    return f"a {message.type} message"


def _names() -> dict:
    """The names notebook 08 has defined by its exercise: its history, and its pair-safe cut
    (section 3's ``my_safe_cut``, which agrees with labkit's ``safe_cut``)."""

    return {"history": list(history()), "my_safe_cut": safe_cut, "nb08": sys.modules[__name__]}


def _check_q1(answer) -> str | None:
    if not isinstance(answer, dict) or any(as_whole(k) is None or as_whole(v) is None
                                           for k, v in answer.items()):
        return f"answer with a dict {{k: cut}} of whole numbers, one entry per k in {KS} (not {answer!r})"
    answer = {as_whole(k): as_whole(v) for k, v in answer.items()}
    missing, extra = [k for k in KS if k not in answer], sorted(set(answer) - set(KS))
    if missing or extra:
        return f"give one cut for each k in {KS}" + (f"; missing {missing}" if missing else "") + \
            (f"; not asked: {extra}" if extra else "")
    h = history()
    for k in KS:
        got, want, naive = answer[k], _right(k), len(h) - k
        if got == want:
            continue
        if not 0 <= got <= len(h):
            return f"k={k}: {got} is not a position in a history of {len(h)} messages"
        if got == naive:
            return (f"k={k}: {got} is the naive cut (len(history) - k), and history[{got}] is "
                    f"{_describe(h[got])}: kept without its call, the model would refuse it")
        if got > naive:
            return (f"k={k}: a cut at {got} keeps only {len(h) - got} messages, fewer than k; a safe "
                    "cut moves back from the naive one, never forward")
        return (f"k={k}: history[{got}] is {_describe(h[got])}, but the cut moved further back than it "
                f"needs to: start from the naive cut {naive} and step back only over tool results")
    return None


q1 = Exercise(
    prompt=f"On notebook 08's history, keep=('messages', k) keeps the last k messages, made pair-safe. "
           f"For each k in {KS}, where does the cut fall? Answer with a dict {{k: cut}}.",
    checker=_check_q1,
    hints=[
        "Start from the naive cut, len(history) - k: the position where the kept part would begin.",
        "If history[cut] is a tool result, the cut moves back to the AI message that made the call "
        "(section 1's shape string shows a T there); anything else stays where it is.",
        "Check yourself: {k: cut_point(history, ('messages', k), None, count_tokens) for k in nb08.KS}.",
    ],
    solution_text="answer = {k: my_safe_cut(history, len(history) - k) for k in nb08.KS}",
    given=_names,
)
