"""The ``task`` tool's interface: its arguments, its description, the answer to a malformed call.

Used by: labkit.isolate (``IsolateMiddleware`` builds its tool from these and answers a bad call
with :func:`check_call` before the tool node validates it; ``TASK_TOOL``, ``task_description``
and ``check_call`` are re-exported there). A spec is anything with a ``name`` and a
``description`` (``labkit.isolate.SubagentSpec``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from labkit.prompts import BAD_CALL, TASK_DESCRIPTION

__all__ = ["ARGS", "TASK_TOOL", "TaskArgs", "check_call", "task_description"]

TASK_TOOL = "task"
ARGS = ("description", "subagent_type")


class TaskArgs(BaseModel):
    """The ``task`` tool's arguments, as the model sees them."""

    description: str = Field(description="The whole task for the subagent: all the context it "
                                         "needs and what to reply with.")
    subagent_type: str = Field(description="Which subagent: one of the types listed in the tool "
                                           "description.")


def task_description(specs: Sequence[Any]) -> str:
    """The ``task`` tool's description: one ``- name: description`` line per subagent. Notebook 12."""
    return TASK_DESCRIPTION.format(agents="\n".join(f"- {s.name}: {s.description}" for s in specs))


def check_call(args: Any, specs: Sequence[Any]) -> str | None:
    """``None`` for a well-formed call to a known subagent, else the answer the parent gets: an
    unknown ``subagent_type`` or a malformed call is answered, never raised. Notebook 12."""
    names = [s.name for s in specs]
    types = ", ".join(f"`{n}`" for n in names)
    if not isinstance(args, Mapping):
        return BAD_CALL.format(types=types, problems=f"Got {type(args).__name__} instead of "
                                                     "named arguments.")
    problems = []
    for key in ARGS:
        if key not in args:
            problems.append(f"Missing {key}.")
        elif not isinstance(args[key], str):
            problems.append(f"{key} must be text, not {type(args[key]).__name__}.")
        elif not args[key].strip():
            problems.append(f"{key} is empty.")
    for key in sorted(set(args) - set(ARGS), key=str):
        problems.append(f"Unexpected argument {key!r}: put all instructions in description.")
    if problems:
        return BAD_CALL.format(types=types, problems=" ".join(problems))
    if args["subagent_type"] not in names:
        return (f"Error: there is no subagent type {args['subagent_type']!r}. Allowed "
                f"subagent_type values: {types}. Call task again with one of them.")
    return None
