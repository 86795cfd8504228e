"""Exercises for notebook 05 · Offloading inputs and human messages."""

from __future__ import annotations

from functools import cache

from labkit import LabModel, scenario
from labkit.exercises.core import Exercise, smallest_that_holds, whole_number
from labkit.offload import truncate_args

__all__ = ["q1"]


@cache
def _last_request() -> tuple:
    """The messages of the last model call of the briefings turn, with no offloading: the
    request whose old write_file arguments ``args_keep`` decides about."""

    model = LabModel(window=1_000_000)  # a window nothing overflows: the request is the same
    scenario.run(model, turns=(scenario.BRIEFINGS,))
    return tuple(model.calls[-1].messages)


def _writes(messages) -> list[tuple[str, str]]:
    """(file_path, content) of every write_file call in ``messages``, in order."""
    return [(tc["args"]["file_path"], tc["args"]["content"]) for m in messages if m.type == "ai"
            for tc in m.tool_calls if tc["name"] == "write_file"]


def _in_full(n: int) -> list[bool]:
    """For each write_file call of the last request: is it seen in full with the last ``n``
    messages protected?"""

    messages = list(_last_request())
    seen = truncate_args(messages, protect_from=len(messages) - n)
    return [a == b for a, b in zip(_writes(messages), _writes(seen))]


def smallest_keep() -> int:
    """The smallest ``n`` for which the last two write_file calls are seen in full."""
    return next(n for n in range(1, len(_last_request()) + 1) if all(_in_full(n)[-2:]))


def _check_q1(answer) -> str | None:
    if isinstance(answer, tuple) and len(answer) == 2 and answer[0] == "messages":
        return _check_n(answer[1])
    if isinstance(answer, tuple):
        return f"give a number n, or the knob itself as ('messages', n), not {answer!r}"
    return _check_n(answer)


@whole_number("a whole number of messages n (or ('messages', n))")
@smallest_that_holds(show=lambda n: f"args_keep=('messages', {n})")
def _check_n(n: int) -> str | None:
    if n < 1:
        return f"args_keep counts messages to protect: at least 1, not {n}"
    total = len(_last_request())
    if n > total:
        return f"the last request holds only {total} messages; {n} protects all of them and more"
    full = _in_full(n)
    if not all(full[-2:]):
        paths = [p for (p, _), ok in zip(_writes(_last_request()), full) if not ok]
        return (f"with args_keep=('messages', {n}) the model still sees the write_file call for "
                f"{paths[-1]} shortened: the AI message that made it is older than the last {n}")
    return None


q1 = Exercise(
    prompt="On the last model call of the briefings turn, what is the smallest args_keep="
           "('messages', n) that leaves the last two write_file calls untouched? Answer n.",
    checker=_check_q1,
    hints=[
        "args_keep=('messages', n) protects the last n messages of the request; an AI message "
        "before them has its long write_file arguments shortened.",
        "Try it on the request itself: offload.truncate_args(msgs, protect_from=len(msgs) - n), "
        "with msgs = naive_model.calls[-1].messages (the naive run's last request, nothing shortened), "
        "and compare the write_file contents with msgs'.",
        "Count back from the end: the last messages are the AI message writing EMBR.md, its tool "
        "result, the news call for FERN, its result, the write of FERN.md and its result.",
    ],
    solution_text=(
        "answer = 6  # the request ends: AI write_file(EMBR), Tool, AI search_news(FERN), Tool,\n"
        "            # AI write_file(FERN), Tool; 5 would leave the EMBR call outside the window"
    ),
)
