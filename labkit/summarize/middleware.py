"""The summarization middleware: compact before a call, fall back on an overflow, archive first.

:class:`SummarizeMiddleware` wraps every model call (notebooks 07–11): past the trigger it asks
``policy.next_fold`` for a fold, writes the folded messages to the archive
(``labkit.summarize.archive``), asks the model for a four-part summary and records an
``Event`` in private state — ``state["messages"]`` is never touched; a ``ContextOverflowError``
forces one more compaction and one retry; ``manual_tool=True`` adds ``compact_conversation``.
What it leaves out: uploading media apart as deepagents does (an image is archived with its
message and counted as its data) and argument truncation (``labkit.offload``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Annotated, Any, NotRequired

from deepagents.backends import StateBackend
from deepagents.middleware.filesystem import FilesystemState
from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse, PrivateStateAttr
from langchain.tools import ToolRuntime
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langgraph.types import Command

from labkit import prompts
from labkit._sizes import check_fraction, check_limit, check_size, size_threshold
from labkit.errors import is_overflow
from labkit.summarize._helpers import (
    chat_model,
    conversation_of,
    first_call,
    minted,
    refuse_shared_ids,
    restored,
)
from labkit.summarize.archive import (
    TAKEN,
    archive_owner,
    archive_path,
    archive_section,
    as_stored,
    fold_key,
    new_conversation,
    section_of,
    state_messages,
    write_section,
)
from labkit.summarize.policy import (
    CONVERSATION_KEY,
    EVENTS_KEY,
    SUMMARY_METADATA,
    SUMMARY_TAGS,
    Event,
    Fold,
    current,
    defaults,
    events_of,
    message_key,
    next_fold,
    summary_prompt,
    view_of,
)
from labkit.tokens import TokenCounter, encoding
from labkit.trace import RunningMeasure

__all__ = ["SummarizeMiddleware", "is_overflow"]  # is_overflow: labkit.errors's, as before


class _State(FilesystemState):
    _labkit_compactions: Annotated[NotRequired[list[dict]], PrivateStateAttr]
    _labkit_conversation: Annotated[NotRequired[str], PrivateStateAttr]


class SummarizeMiddleware(AgentMiddleware):
    """Non-destructive compaction with an archive, an overflow fallback and a manual tool.

    Args:
        model: the summarizer (usually the agent's own model); its profile sets the defaults.
        trigger: when to compact — ``("fraction", f)``, ``("tokens", n)`` or ``("messages", n)``.
        keep: how much recent history survives a compaction, in the same forms.
        backend: a deepagents backend for the archive (default ``StateBackend()``).
        archive: ``False`` to fold with no archive at all: nothing is written, and no summary
            points to one (an eval's "no archive" setting, notebook 15). A backend that fails
            to write is different: that is a warning (notebook 10).
        keep_figures: ask the summarizer to keep exact figures and ids.
        manual_tool: add the ``compact_conversation`` tool.
        gate: the manual tool refuses below this fraction of the trigger.
        window: the context window, when the model has no profile.
        clock: returns the time stamped on archive sections (for reproducible tests).

    The middleware is named ``SummarizationMiddleware``, so ``create_deep_agent(middleware=[...])``
    puts it in place of deepagents' own. It works in sync and async runs (``ainvoke``, ``astream``).
    Notebook 07.
    """

    name = "SummarizationMiddleware"
    state_schema = _State

    def __init__(self, model: Any, *, trigger: tuple | None = None, keep: tuple | None = None,
                 backend: Any = None, archive: bool = True, keep_figures: bool = False,
                 manual_tool: bool = False,
                 gate: float = 0.5, window: int | None = None,
                 clock: Callable[[], dt.datetime] | None = None) -> None:
        super().__init__()
        model = chat_model(model)
        default_trigger, default_keep = defaults(model)
        profile = getattr(model, "profile", None)
        self.window = check_limit("window", window, allow_none=False) if window is not None else (
            profile.get("max_input_tokens") if isinstance(profile, dict) else None)
        self.trigger = check_size("trigger", default_trigger if trigger is None else trigger)
        self.keep = check_size("keep", default_keep if keep is None else keep)
        for knob, size in (("trigger", self.trigger), ("keep", self.keep)):
            if size[0] == "fraction" and self.window is None:
                raise ValueError(f"{knob}={size!r} is a fraction of the context window, but the model "
                                 "has no profile: pass window=, or use ('tokens', n) / ('messages', n)")
        self._check_keep_below_trigger()
        check_fraction("gate", gate, of="the trigger")
        self.model, self.keep_figures, self.gate, self.clock = model, keep_figures, gate, clock
        self.backend = StateBackend() if backend is None else backend
        self.archive = archive
        self.counter = TokenCounter(non_text="count")
        self._measure = RunningMeasure(self.counter)  # the view, call after call
        self.tools = [self._manual_tool()] if manual_tool else []

    def _check_keep_below_trigger(self) -> None:
        (tk, tv), (kk, kv) = self.trigger, self.keep
        if tk == kk == "messages":
            ok = kv < tv
        elif "messages" in (tk, kk):
            return  # not comparable
        else:
            ok = size_threshold(self.keep, self.window) < size_threshold(self.trigger, self.window)
        if not ok:
            raise ValueError(f"keep={self.keep!r} must keep less than trigger={self.trigger!r} lets "
                             "in, or every compaction would fire again at once")

    # -- measuring ---------------------------------------------------------------------------

    def request_tokens(self, messages, system=None, tools=()) -> int:
        return sum(self._measure(messages, system, tools).values())

    # -- compacting --------------------------------------------------------------------------

    def compact(self, messages: list[BaseMessage], events: list[Event], reason: str = "manual",
                stored: Sequence[BaseMessage] = (), conversation: str | None = None) -> Event | None:
        """Fold what ``keep`` allows now (the trigger aside) into a new event, or ``None`` if the
        cut cannot move forward. ``stored`` and ``conversation``: see :meth:`make_event`."""
        return self.make_event(self._next(messages, events, forced=True, stored=stored), messages, events,
                               reason, stored,
                               conversation)

    def _next(self, messages, events, request_tokens: int = 0, forced: bool = False,
              stored: Sequence[BaseMessage] = ()) -> Fold | None:
        return next_fold(messages, events, request_tokens, trigger=self.trigger, keep=self.keep,
                         window=self.window, count=self.counter.message, forced=forced, stored=stored or None)

    def make_event(self, planned: Fold | None, messages: Sequence[BaseMessage], events: list[Event],
                   reason: str, stored: Sequence[BaseMessage] = (), conversation: str | None = None
                   ) -> Event | None:
        """Archive and summarize what ``planned`` folds: the new event (``None`` for no fold).

        ``messages`` are what this middleware was handed (an outer middleware may have shortened
        them); ``stored`` are the same messages as the agent's state holds them: the archive is
        written from those, matched by message id, so it keeps every word of their text."""
        if planned is None:
            return None
        folded = as_stored(planned.folded, stored)
        number = len(events) + 1
        path, section = self._archive(folded, number, planned.absolute - len(folded),
                                      conversation_of(events, conversation), events, stored or messages)
        summary = self._summarize(planned.shown[:planned.cut])
        kept = as_stored(planned.shown[planned.cut:planned.cut + 1], stored)
        return Event(cut=planned.absolute, summary=summary, archive=path, created_at=len(messages),
                     number=number, reason=reason, section=section,
                     folded_to=message_key(folded[-1]) if folded else None,
                     kept_from=message_key(kept[0]) if kept else None)

    def _summarize(self, messages: Sequence[BaseMessage]) -> str:
        """Ask the model for the summary. If the prompt itself overflows the summarizer, retry once
        with the middle of the history cut out (a quarter of the budget from the head, three
        quarters from the tail), as deepagents does — the archive still holds all of it."""
        prompt = summary_prompt(messages, self.keep_figures)
        config = {"tags": SUMMARY_TAGS, "metadata": SUMMARY_METADATA}
        try:
            reply = self.model.invoke([HumanMessage(prompt)], config=config)
        except Exception as error:
            if not is_overflow(error):
                raise
            reply = self.model.invoke([HumanMessage(self._trimmed(prompt))], config=config)
        return reply.text if hasattr(reply, "text") else str(reply.content)

    def _trimmed(self, prompt: str) -> str:
        enc = encoding(self.counter.encoding_name)
        ids = enc.encode(prompt, disallowed_special=())
        budget = max(200, int(0.4 * (self.window or len(ids))))
        if len(ids) <= budget:
            return prompt
        head, tail = budget // 4, budget - budget // 4
        return (enc.decode(ids[:head]) + "\n[... middle of the history omitted: it is in the archive ...]\n"
                + enc.decode(ids[-tail:]))

    def _archive(self, folded: Sequence[BaseMessage], number: int, first: int, conversation: str,
                 events: Sequence[Event] = (), stored: Sequence[BaseMessage] = ()) -> tuple[str | None, str]:
        """Write the section: ``(the archive's path or None, the section's id)``. A section id
        another fold holds (a fork of this conversation) gets a new conversation id; a section of
        an earlier event that is missing from the file is written again from state."""
        fold, section = fold_key(folded), section_of(conversation, number)
        if not self.archive:  # asked for no archive: nothing to write, nothing to warn about
            return None, section
        thread, agent = archive_owner()
        when = self.clock() if self.clock else None
        for _ in range(3):
            path = archive_path(thread, agent, conversation)
            text = archive_section(folded, number, first, when, section=section, fold=fold)
            def restore(present, path=path):
                return restored(events, stored, path, present, when)

            error = write_section(self.backend, path, section, text, fold, restore=restore)
            if error != TAKEN:
                break
            conversation = new_conversation()
            section = section_of(conversation, number)
        if error:
            warnings.warn(f"labkit summarize: could not archive to {path} ({error}); the summary "
                          "will not point to an archive", stacklevel=3)
            return None, section
        return path, section

    # -- hooks ---------------------------------------------------------------------------------

    def _before(self, request, events: list[Event]) -> tuple[list, list, list[Event]]:
        """The messages, the view to send and any new event: compact first past the trigger."""
        messages, stored = list(request.messages), state_messages(request)
        refuse_shared_ids(messages)
        shown = view_of(messages, events, stored)
        new: list[Event] = []
        tokens = self.request_tokens(shown, request.system_message, request.tools or ())
        planned = self._next(messages, events, tokens, stored=stored)
        event = None if planned is None else self.make_event(planned, messages, events, "trigger",
                                                             stored, minted(request))
        if event:
            new.append(event)
            shown = view_of(messages, [event], stored)
        return messages, shown, new

    def _on_overflow(self, error: Exception, messages, events: list[Event],
                     stored: Sequence[BaseMessage] = (), conversation: str | None = None) -> Event:
        """The event that makes room after an overflow — or the error, saying nothing can."""
        event = self.make_event(self._next(messages, events, forced=True, stored=stored), messages, events,
                                "overflow",
                                stored, conversation)
        if event is None:
            raise ContextOverflowError(f"{error} — and nothing is left to compact "
                                       f"(keep={self.keep!r})") from error
        return event

    def before_agent(self, state, runtime) -> dict | None:
        """Draw the conversation's id once, before its first call: a compaction redone after a
        failed call then writes under the same id, and replaces only its own section."""
        return None if state.get(CONVERSATION_KEY) else {CONVERSATION_KEY: new_conversation()}

    async def abefore_agent(self, state, runtime) -> dict | None:
        return self.before_agent(state, runtime)

    def _result(self, response, events, new):
        if not new:
            return response
        update = {EVENTS_KEY: [asdict(e) for e in events + new]}
        return ExtendedModelResponse(model_response=response, command=Command(update=update))

    def wrap_model_call(self, request, handler):
        """Call the model on the current view; on overflow, compact once and retry once."""
        events = events_of(request.state)
        messages, shown, new = self._before(request, events)
        try:  # with nothing folded the view is the very messages handed in: the request goes on as is
            response = handler(request.override(messages=shown) if new or events else request)
        except Exception as error:
            if not is_overflow(error):
                raise
            new.append(self._on_overflow(error, messages, events + new, state_messages(request),
                                         minted(request)))
            response = handler(request.override(
                messages=view_of(messages, new[-1:], state_messages(request))))
        return self._result(response, events, new)

    async def awrap_model_call(self, request, handler):
        """The same for ``ainvoke`` / ``astream``; compaction runs in a worker thread."""
        events = events_of(request.state)
        messages, shown, new = await asyncio.to_thread(self._before, request, events)
        try:
            response = await handler(request.override(messages=shown) if new or events else request)
        except Exception as error:
            if not is_overflow(error):
                raise
            new.append(await asyncio.to_thread(self._on_overflow, error, messages, events + new,
                                               state_messages(request), minted(request)))
            response = await handler(request.override(
                messages=view_of(messages, new[-1:], state_messages(request))))
        return self._result(response, events, new)

    # -- the manual tool -----------------------------------------------------------------------

    def gate_check(self, shown, tokens) -> tuple[bool, str]:
        """May ``compact_conversation`` fold now? ``(ok, why not)``: the view must hold at least
        ``gate`` of the trigger, counted in messages or in tokens of ``shown``. Notebook 11."""
        kind, n = self.trigger
        if kind == "messages":
            need = max(1, int(n * self.gate))
            return len(shown) >= need, (f"the context holds {len(shown)} messages, below the gate "
                                        f"of {need} ({self.gate:.0%} of the trigger)")
        need = max(1, int(size_threshold(self.trigger, self.window) * self.gate))
        return tokens >= need, (f"the context holds {tokens:,} tokens of messages, below the gate of "
                                f"{need:,} ({self.gate:.0%} of the trigger)")

    def _manual_tool(self) -> StructuredTool:
        def compact_conversation(runtime: ToolRuntime) -> Command | str:
            """Compact the conversation now: fold older messages into a summary, archived word
            for word. Use it at a task boundary, when the context is long."""
            state = runtime.state
            messages, events = list(state["messages"]), events_of(state)
            first = first_call(messages, runtime.tool_call_id)
            if first != runtime.tool_call_id:
                text = prompts.COMPACT_TWICE.format(first=first)
                return Command(update={"messages": [ToolMessage(
                    text, tool_call_id=runtime.tool_call_id, status="error")]})
            shown = view_of(messages, events)
            ok, why = self.gate_check(shown, self.request_tokens(shown))
            if not ok:
                text = prompts.COMPACT_REFUSED.format(why=why)
                return Command(update={"messages": [ToolMessage(text, tool_call_id=runtime.tool_call_id)]})
            event = self.compact(messages, events, "manual", stored=messages,
                                 conversation=state.get(CONVERSATION_KEY))
            folded = event.cut - current(messages, events)[1] if event else 0
            text = prompts.COMPACT_DONE.format(n=folded, path=event.archive) if event \
                else prompts.COMPACT_REFUSED.format(why="nothing old enough to fold")
            update: dict[str, Any] = {"messages": [ToolMessage(text, tool_call_id=runtime.tool_call_id)]}
            if event:
                update[EVENTS_KEY] = [asdict(e) for e in events + [event]]
            return Command(update=update)

        return StructuredTool.from_function(compact_conversation)
