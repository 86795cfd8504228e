"""Summarization (压缩): fold old messages into a summary — without deleting them.

Notebooks 07–11 introduce it. Compaction is lossy and costs a model call, so this module makes
every part of it visible:

* **when** — :func:`should_compact`: the request (system prompt, tool schemas and messages, in
  BPE tokens) passes the ``trigger``: ``("fraction", f)`` of the window, ``("tokens", n)`` or
  ``("messages", n)``. Defaults follow deepagents: 85% / keep 10% with a model profile, and the
  no-profile fallback of 170,000 tokens / keep 6 messages (which a 128k model never reaches).
* **where** — :func:`cut_point`: keep the most recent ``keep`` (messages, or a token budget met by
  a binary search over suffix sums) so that an AI message with tool calls is never separated
  from its tool results: a token budget moves past a block of results when that still fits,
  otherwise :func:`safe_cut` moves the cut back to the AI message.
* **what** — an :class:`Event` (cut point, summary, archive path) is recorded in private state;
  ``state["messages"]`` is never touched, and the model's view is rebuilt on every call by
  :func:`view`: ``[summary message, *messages[cut:]]``.
* **the archive** — before summarizing, the folded messages, as the agent's state holds them,
  are appended to a markdown file under ``/conversation_history/``: one per thread for the
  top-level agent, one of its own for each subagent; one section per compaction, owned by its
  conversation (a redo after a failed call replaces only its own section). The summary message
  names that path, so exact details can be read back.
* **the summary** — a four-part prompt (``prompts.SUMMARY_PROMPT``); a second compaction folds
  the previous summary in (chained summaries).
* **failure** — a ``ContextOverflowError`` from the model forces a compaction and one retry.
* **by hand** — a ``compact_conversation`` tool shares the same event; it refuses below a gate
  (half the trigger by default).

The pure functions are what ``labkit.replay`` re-runs on every slider move. What it leaves out:
media in the folded range (deepagents uploads it; here non-text content is an error), and
argument truncation (that is ``labkit.offload``).
"""

from __future__ import annotations

import asyncio
import bisect
import datetime as dt
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Annotated, Any, NotRequired

from deepagents.middleware.filesystem import FilesystemState
from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse, PrivateStateAttr
from langchain.tools import ToolRuntime
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage, get_buffer_string
from langchain_core.tools import StructuredTool
from langgraph.types import Command

from labkit import prompts
from labkit._archive import (archive_owner, archive_path, archive_section, as_stored, conversation_key,
                             section_id, state_messages, write_section)
from labkit._sizes import check_limit, check_size, size_threshold
from labkit.tokens import TokenCounter

__all__ = [
    "EVENTS_KEY",
    "Event",
    "SummarizeMiddleware",
    "archive_path",
    "archive_section",
    "cut_point",
    "defaults",
    "events_of",
    "fold",
    "safe_cut",
    "section_id",
    "should_compact",
    "summary_message",
    "summary_prompt",
    "view",
]

EVENTS_KEY = "_labkit_compactions"
SUMMARY_TAGS = ["nostream", "labkit:summary"]
SUMMARY_METADATA = {"lc_source": "summarization"}
MANUAL_TOOL = "compact_conversation"
FALLBACK_TRIGGER = ("tokens", 170_000)
FALLBACK_KEEP = ("messages", 6)


@dataclass(frozen=True)
class Event:
    """One compaction: ``messages[:cut]`` are folded into ``summary``; the folded messages (not
    earlier summaries) are archived in ``archive``, in the section whose id is ``section``.
    ``created_at`` is the number of messages in state when it happened; ``number`` counts
    compactions in the conversation."""

    cut: int
    summary: str
    archive: str | None
    created_at: int
    number: int
    reason: str = "trigger"  # "trigger", "overflow" or "manual"
    section: str | None = None


class _State(FilesystemState):
    _labkit_compactions: Annotated[NotRequired[list[dict]], PrivateStateAttr]


# -- pure policy --------------------------------------------------------------------------------


def defaults(model: Any) -> tuple[tuple, tuple]:
    """(trigger, keep) for a model: fractions with a profile, deepagents' fallback without."""
    profile = getattr(model, "profile", None)
    if isinstance(profile, dict) and isinstance(profile.get("max_input_tokens"), int):
        return ("fraction", 0.85), ("fraction", 0.10)
    return FALLBACK_TRIGGER, FALLBACK_KEEP


def should_compact(tokens: int, n_messages: int, trigger: tuple, window: int | None) -> bool:
    """Has the request reached the trigger? (A fraction with no window never fires.)"""
    if trigger[0] == "messages":
        return n_messages >= trigger[1]
    threshold = size_threshold(trigger, window)
    return threshold is not None and tokens >= threshold


def safe_cut(messages: Sequence[BaseMessage], cut: int) -> int:
    """Move ``cut`` back so it does not fall between an AI message's tool calls and their results:
    if ``messages[cut]`` is a tool result, the cut moves to the AI message that made the call."""
    cut = max(0, min(cut, len(messages)))
    while 0 < cut < len(messages) and isinstance(messages[cut], ToolMessage):
        cut -= 1
    return cut


def cut_point(messages: Sequence[BaseMessage], keep: tuple, window: int | None,
              tokens: Callable[[BaseMessage], int], start: int = 0) -> int:
    """Where to cut so the kept suffix ``messages[cut:]`` satisfies ``keep`` — pair-safe.

    For a token budget, the smallest cut whose suffix fits is found by binary search over the
    suffix sums (at most ``log2(n)`` steps). ``start`` is the first message that may be folded
    (1 when ``messages[0]`` is the previous summary). Returns ``start`` when nothing can be folded.
    """
    n = len(messages)
    if keep[0] == "messages":
        cut = n - int(keep[1])
    else:
        budget = size_threshold(keep, window)
        if budget is None:
            return start
        sizes = [tokens(m) for m in messages]
        suffix = [0] * (n + 1)
        for i in range(n - 1, -1, -1):
            suffix[i] = suffix[i + 1] + sizes[i]
        # suffix is decreasing; find the first i with suffix[i] <= budget
        cut = bisect.bisect_left([-s for s in suffix], -budget)
        cut = min(max(cut, start), n - 1)
        cut = _fitting_cut(messages, cut) if cut > start else cut
    cut = safe_cut(messages, min(max(cut, start), n - 1))  # the latest message always stays
    return cut if cut > start else start


def _fitting_cut(messages: Sequence[BaseMessage], cut: int) -> int:
    """For a token budget: ``cut`` is the smallest cut whose suffix fits (or the latest message,
    when nothing does). If it falls inside a block of tool results, moving back to their AI
    message would keep more than the budget, so move forward past the block instead — the first
    pair-safe cut that fits — as long as the latest message stays. (langchain's cutter only
    moves back; notebook 08 compares them.)"""
    forward = cut
    while forward < len(messages) and isinstance(messages[forward], ToolMessage):
        forward += 1
    return forward if forward < len(messages) else cut


def fold(messages: Sequence[BaseMessage], events: Sequence[Event], keep: tuple, window: int | None,
         tokens: Callable[[BaseMessage], int]) -> tuple[list[BaseMessage], int, int, int] | None:
    """What the next compaction folds: ``(shown, start, cut, absolute)`` — the current view, the
    first foldable and the first kept position in it, and the cut in state — or ``None`` if the
    cut cannot move forward. ``SummarizeMiddleware.compact`` and ``labkit.replay`` both use it."""
    last = events[-1] if events else None
    shown = view(messages, last)
    start = 1 if last else 0
    cut = cut_point(shown, keep, window, tokens, start=start)
    if cut <= start:
        return None
    return shown, start, cut, (last.cut if last else 0) + (cut - start)


def view(messages: Sequence[BaseMessage], event: Event | None) -> list[BaseMessage]:
    """What the model sees: the summary, then every message from the cut on."""
    if event is None:
        return list(messages)
    return [summary_message(event), *messages[event.cut:]]


def summary_message(event: Event) -> HumanMessage:
    """The message that stands for everything before the cut."""
    where = (f"The folded messages are archived, word for word, in {event.archive} — read or grep "
             "that file when you need an exact detail.\n\n") if event.archive else ""
    text = (f"This conversation was compacted (compaction {event.number}): its first "
            f"{event.cut} messages were replaced by the summary below.\n\n{where}"
            f"<summary>\n{event.summary}\n</summary>")
    return HumanMessage(text, additional_kwargs=dict(SUMMARY_METADATA), id=f"labkit-summary-{event.number}")


def summary_prompt(messages: Sequence[BaseMessage], keep_figures: bool = False) -> str:
    """The prompt sent to the summarizer: the four sections, then the history as XML."""
    fidelity = prompts.KEEP_FIGURES if keep_figures else ""
    return prompts.SUMMARY_PROMPT.format(messages=get_buffer_string(list(messages), format="xml"),
                                         fidelity=fidelity)


def events_of(state: dict) -> list[Event]:
    """The compaction events recorded in a run's state, oldest first."""
    return [Event(**e) for e in state.get(EVENTS_KEY) or []]


# -- the middleware ------------------------------------------------------------------------------


class SummarizeMiddleware(AgentMiddleware):
    """Non-destructive compaction with an archive, an overflow fallback and a manual tool.

    Args:
        model: the summarizer (usually the agent's own model); its profile sets the defaults.
        trigger: when to compact — ``("fraction", f)``, ``("tokens", n)`` or ``("messages", n)``.
        keep: how much recent history survives a compaction, in the same forms.
        backend: a deepagents backend for the archive (default ``StateBackend()``).
        keep_figures: ask the summarizer to keep exact figures and ids.
        manual_tool: add the ``compact_conversation`` tool.
        gate: the manual tool refuses below this fraction of the trigger.
        window: the context window, when the model has no profile.
        clock: returns the time stamped on archive sections (for reproducible tests).

    The middleware is named ``SummarizationMiddleware``, so ``create_deep_agent(middleware=[...])``
    puts it in place of deepagents' own. It works in sync and async runs (``ainvoke``, ``astream``).
    """

    name = "SummarizationMiddleware"
    state_schema = _State

    def __init__(self, model: Any, *, trigger: tuple | None = None, keep: tuple | None = None,
                 backend: Any = None, keep_figures: bool = False, manual_tool: bool = False,
                 gate: float = 0.5, window: int | None = None,
                 clock: Callable[[], dt.datetime] | None = None) -> None:
        super().__init__()
        from deepagents.backends import StateBackend

        model = _chat_model(model)
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
        if isinstance(gate, bool) or not isinstance(gate, (int, float)) or not 0 < gate <= 1:
            raise ValueError(f"gate must be a fraction of the trigger in (0, 1], got {gate!r}")
        self.model, self.keep_figures, self.gate, self.clock = model, keep_figures, gate, clock
        self.backend = StateBackend() if backend is None else backend
        self.counter = TokenCounter()
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
        from labkit.trace import measure

        return sum(measure(list(messages), system, list(tools), self.counter).values())

    # -- compacting --------------------------------------------------------------------------

    def compact(self, messages: list[BaseMessage], events: list[Event], reason: str = "trigger",
                stored: Sequence[BaseMessage] = ()) -> Event | None:
        """Fold what ``keep`` allows into a new event, or ``None`` if the cut cannot move forward.

        ``messages`` are what this middleware was handed (an outer middleware may have shortened
        them); ``stored`` are the same messages as the agent's state holds them: the archive is
        written from those, matched by message id, so it keeps every word of their text."""
        planned = fold(messages, events, self.keep, self.window, self.counter.message)
        if planned is None:
            return None
        shown, start, cut, absolute = planned
        folded = as_stored(shown[start:cut], stored)
        number = len(events) + 1
        conversation = conversation_key(stored or messages)
        path = self._archive(folded, number, absolute - len(folded), conversation)
        summary = self._summarize(shown[:cut])
        return Event(cut=absolute, summary=summary, archive=path, created_at=len(messages),
                     number=number, reason=reason, section=f"{conversation}-{number}")

    def _summarize(self, messages: Sequence[BaseMessage]) -> str:
        """Ask the model for the summary. If the prompt itself overflows the summarizer, retry once
        with the middle of the history cut out (a quarter of the budget from the head, three
        quarters from the tail), as deepagents does — the archive still holds all of it."""
        prompt = summary_prompt(messages, self.keep_figures)
        config = {"tags": SUMMARY_TAGS, "metadata": SUMMARY_METADATA}
        try:
            reply = self.model.invoke([HumanMessage(prompt)], config=config)
        except ContextOverflowError:
            reply = self.model.invoke([HumanMessage(self._trimmed(prompt))], config=config)
        return reply.text if hasattr(reply, "text") else str(reply.content)

    def _trimmed(self, prompt: str) -> str:
        from labkit.tokens import encoding

        enc = encoding(self.counter.encoding_name)
        ids = enc.encode(prompt, disallowed_special=())
        budget = max(200, int(0.4 * (self.window or len(ids))))
        if len(ids) <= budget:
            return prompt
        head, tail = budget // 4, budget - budget // 4
        return (enc.decode(ids[:head]) + "\n[... middle of the history omitted: it is in the archive ...]\n"
                + enc.decode(ids[-tail:]))

    def _archive(self, folded: Sequence[BaseMessage], number: int, first: int,
                 conversation: str) -> str | None:
        thread, agent = archive_owner()
        path = archive_path(thread, agent, conversation)
        section = f"{conversation}-{number}"
        text = archive_section(folded, number, first, self.clock() if self.clock else None,
                               section=section)
        error = write_section(self.backend, path, section, text)
        if error:
            warnings.warn(f"labkit summarize: could not archive to {path} ({error}); the summary "
                          "will not point to an archive", stacklevel=3)
            return None
        return path

    # -- hooks ---------------------------------------------------------------------------------

    def _before(self, request, events: list[Event]) -> tuple[list, list, list[Event]]:
        """The messages, the view to send and any new event: compact first past the trigger."""
        messages = list(request.messages)
        shown = view(messages, events[-1] if events else None)
        new: list[Event] = []
        tokens = self.request_tokens(shown, request.system_message, request.tools or ())
        if should_compact(tokens, len(shown), self.trigger, self.window):
            event = self.compact(messages, events, stored=state_messages(request))
            if event:
                new.append(event)
                shown = view(messages, event)
        return messages, shown, new

    def _on_overflow(self, error: ContextOverflowError, messages, events: list[Event],
                     stored: Sequence[BaseMessage] = ()) -> Event:
        """The event that makes room after an overflow — or the error, saying nothing can."""
        event = self.compact(messages, events, reason="overflow", stored=stored)
        if event is None:
            raise ContextOverflowError(f"{error} — and nothing is left to compact "
                                       f"(keep={self.keep!r})") from error
        return event

    def _result(self, response, events, new):
        if not new:
            return response
        update = {EVENTS_KEY: [asdict(e) for e in events + new]}
        return ExtendedModelResponse(model_response=response, command=Command(update=update))

    def wrap_model_call(self, request, handler):
        """Call the model on the current view; on overflow, compact once and retry once."""
        events = events_of(request.state)
        messages, shown, new = self._before(request, events)
        try:
            response = handler(request.override(messages=shown))
        except ContextOverflowError as error:
            new.append(self._on_overflow(error, messages, events + new, state_messages(request)))
            response = handler(request.override(messages=view(messages, new[-1])))
        return self._result(response, events, new)

    async def awrap_model_call(self, request, handler):
        """The same for ``ainvoke`` / ``astream``; compaction runs in a worker thread."""
        events = events_of(request.state)
        messages, shown, new = await asyncio.to_thread(self._before, request, events)
        try:
            response = await handler(request.override(messages=shown))
        except ContextOverflowError as error:
            new.append(await asyncio.to_thread(self._on_overflow, error, messages, events + new,
                                               state_messages(request)))
            response = await handler(request.override(messages=view(messages, new[-1])))
        return self._result(response, events, new)

    # -- the manual tool -----------------------------------------------------------------------

    def _gate_ok(self, shown, tokens) -> tuple[bool, str]:
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
            first = _first_call(messages, runtime.tool_call_id)
            if first != runtime.tool_call_id:
                text = prompts.COMPACT_TWICE.format(first=first)
                return Command(update={"messages": [ToolMessage(
                    text, tool_call_id=runtime.tool_call_id, status="error")]})
            shown = view(messages, events[-1] if events else None)
            ok, why = self._gate_ok(shown, self.request_tokens(shown))
            if not ok:
                text = prompts.COMPACT_REFUSED.format(why=why)
                return Command(update={"messages": [ToolMessage(text, tool_call_id=runtime.tool_call_id)]})
            event = self.compact(messages, events, reason="manual", stored=messages)
            text = prompts.COMPACT_DONE.format(n=event.cut - (events[-1].cut if events else 0), path=event.archive) \
                if event else prompts.COMPACT_REFUSED.format(why="nothing old enough to fold")
            update: dict[str, Any] = {"messages": [ToolMessage(text, tool_call_id=runtime.tool_call_id)]}
            if event:
                update[EVENTS_KEY] = [asdict(e) for e in events + [event]]
            return Command(update=update)

        return StructuredTool.from_function(compact_conversation)


# -- helpers of the middleware --------------------------------------------------------------------


def _chat_model(model: Any) -> BaseChatModel:
    """The summarizer, checked when the middleware is built: a chat model, or a
    ``"provider:model"`` string resolved by langchain's ``init_chat_model`` (as deepagents does)."""
    if isinstance(model, str):
        from langchain.chat_models import init_chat_model

        try:
            return init_chat_model(model)
        except Exception as e:
            raise ValueError(f"SummarizeMiddleware could not build the summarizer {model!r}: {e}") from e
    if not isinstance(model, BaseChatModel):
        raise TypeError(f"SummarizeMiddleware needs a chat model to write summaries (a BaseChatModel "
                        f"or a 'provider:model' string), got {type(model).__name__}: {model!r:.60}")
    return model


def _first_call(messages: Sequence[BaseMessage], tool_call_id: str) -> str:
    """The id of the first ``compact_conversation`` call in the AI message that made this one
    (the call's own id when it is the first, or when the message is not found)."""
    for m in reversed(messages):
        if isinstance(m, AIMessage) and any(tc.get("id") == tool_call_id for tc in m.tool_calls):
            return next(tc["id"] for tc in m.tool_calls if tc["name"] == MANUAL_TOOL)
    return tool_call_id
