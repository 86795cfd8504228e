"""The history checks: the lab model refuses, as a provider would, a history no provider accepts.

Notebook 08 meets them: a cut that keeps a tool result but drops the AI message that called it
leaves an orphan tool message, and the next call fails with :class:`InvalidHistoryError` (a
``ValueError`` with ``status_code = 400``, like a provider's bad-request error).

What it leaves out: every other rule a provider enforces (roles in order, images, sizes); and
deciding anything — :func:`check_history` only raises or returns.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from labkit.tokens import message_text

__all__ = ["InvalidHistoryError", "check_history"]


class InvalidHistoryError(ValueError):
    """A message history no provider would accept (an orphan tool result, say). Notebook 08."""

    status_code = 400


def check_history(messages: list[BaseMessage]) -> None:
    """Refuse what a provider would refuse: nothing to answer, non-text content, a tool result
    that answers no call, or a tool call left without its result. Notebook 08.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> check_history([HumanMessage("hello")])  # returns None: a provider would accept it
        >>> try:
        ...     check_history([ToolMessage("42", tool_call_id="call_1")])
        ... except InvalidHistoryError as e:
        ...     print(str(e).split(" (")[0])
        orphan tool message at position 0
    """
    if not messages:
        raise InvalidHistoryError("LabModel was called with an empty message list: there is "
                                  "nothing to answer. Pass at least one human message.")
    pending: dict[str, int] = {}
    for i, m in enumerate(messages):
        if not isinstance(m, BaseMessage):
            raise InvalidHistoryError(f"item {i} is a {type(m).__name__}, not a langchain message")
        try:
            message_text(m)
        except ValueError as e:
            raise InvalidHistoryError(f"message {i}: {e}") from e
        if isinstance(m, ToolMessage):
            if m.tool_call_id not in pending:
                raise InvalidHistoryError(
                    f"orphan tool message at position {i} (tool_call_id={m.tool_call_id!r}): it "
                    "answers no tool call of the AI message before it. Real providers reject this "
                    "history (OpenAI: 'messages with role \"tool\" must be a response to a "
                    "preceding message with \"tool_calls\"')."
                )
            del pending[m.tool_call_id]
            continue
        if pending:
            raise _unanswered(pending, f"the {m.type} message at position {i}")
        if isinstance(m, AIMessage):
            pending = {tc["id"]: i for tc in m.tool_calls}
    if pending:
        raise _unanswered(pending, "the end of the history")


def _unanswered(pending: dict[str, int], where: str) -> InvalidHistoryError:
    return InvalidHistoryError(
        f"the AI message at position {min(pending.values())} made tool calls {sorted(pending)} "
        f"that have no tool result before {where}. Real providers reject this history "
        "(Anthropic: 'tool_use ids were found without tool_result blocks immediately after')."
    )
