"""Small checks and lookups of the summarization middleware. Used by: labkit.summarize.middleware."""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Mapping, Sequence
from operator import attrgetter
from typing import Any

from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage

from labkit.summarize.archive import archive_section, new_conversation
from labkit.summarize.policy import CONVERSATION_KEY, MANUAL_TOOL, Event, cut_in


def chat_model(model: Any) -> BaseChatModel:
    """The summarizer, checked when the middleware is built: a chat model, or a
    ``"provider:model"`` string resolved by langchain's ``init_chat_model`` (as deepagents does)."""
    if isinstance(model, str):
        if not model.strip():
            raise ValueError("SummarizeMiddleware needs a summarizer: a chat model or a 'provider:model' "
                             f"string, not an empty name ({model!r})")
        try:
            built = init_chat_model(model)
        except Exception as e:
            raise ValueError(f"SummarizeMiddleware could not build the summarizer {model!r}: {e}") from e
        if not isinstance(built, BaseChatModel):  # langchain defers an incomplete name to call time
            raise ValueError(f"SummarizeMiddleware could not build the summarizer {model!r}: langchain "
                             f"made a {type(built).__name__} with no model chosen; name one as "
                             "'provider:model'")
        return built
    if not isinstance(model, BaseChatModel):
        raise TypeError(f"SummarizeMiddleware needs a chat model to write summaries (a BaseChatModel "
                        f"or a 'provider:model' string), got {type(model).__name__}: {model!r:.60}")
    return model


def conversation_of(events: Sequence[Event], minted: str | None) -> str:
    """The conversation a new compaction belongs to: the latest section's (a fork that had to draw
    a new id keeps it), else the id drawn before the first call, else a new one."""
    for event in reversed(events):
        if event.section:
            return event.section.rsplit("-", 1)[0]
    return minted or new_conversation()


def minted(request: Any) -> str | None:
    state = getattr(request, "state", None)
    return state.get(CONVERSATION_KEY) if isinstance(state, Mapping) else None


_ID = attrgetter("id")


def refuse_shared_ids(messages: Sequence[BaseMessage]) -> None:
    """Two messages with one id would make one of them invisible to a cut found by id (and
    langgraph's own reducer would merge them): refuse, naming the id."""
    if len(set(map(_ID, messages))) == len(messages):  # one pass at C speed: this runs on every call
        return  # every id distinct (at most one message without an id)
    ids = list(map(_ID, messages))
    if len(set(ids) - {None}) == len(ids) - ids.count(None):
        return  # several messages without an id, the others distinct
    seen: set[str] = set()
    for m in messages:
        if m.id is not None and m.id in seen:
            where = [j for j, x in enumerate(messages) if x.id == m.id]
            raise ValueError(f"SummarizeMiddleware: messages {where} share the id {m.id!r}; give "
                             "each message its own id (langgraph's "
                             "add_messages does, and replaces a message sent again with the same id)")
        seen.add(m.id)


def first_call(messages: Sequence[BaseMessage], tool_call_id: str) -> str:
    """The id of the first ``compact_conversation`` call in the AI message that made this one
    (the call's own id when it is the first, or when the message is not found)."""
    for m in reversed(messages):
        if isinstance(m, AIMessage) and any(tc.get("id") == tool_call_id for tc in m.tool_calls):
            return next(tc["id"] for tc in m.tool_calls if tc["name"] == MANUAL_TOOL)
    return tool_call_id


def restored(events: Sequence[Event], stored: Sequence[BaseMessage], path: str, present: set[str],
             when: dt.datetime | None) -> str:
    """The sections of ``events`` archived at ``path`` that the file no longer holds (another
    writer replaced it — a subagent handing back its copy of the parent's files, say), rebuilt
    from the messages in state, with a warning; ``""`` when none is missing."""
    out, first = [], 0
    for event in events:
        cut = cut_in(stored, event)
        if event.archive == path and event.section and event.section not in present and cut and cut > first:
            out.append(archive_section(stored[first:cut], event.number, first, when, section=event.section))
        first = cut if cut is not None else first
    if out:
        warnings.warn(f"labkit summarize: {len(out)} section(s) of {path} were missing (another writer "
                      "replaced the file); written again from the messages in state", stacklevel=6)
    return "".join(out)
