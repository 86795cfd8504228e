"""Summarization's policy (摘要压缩): when to compact, where to cut, what the model then sees.

Pure functions over message lists, the part of summarization that ``labkit.replay`` re-runs on
every slider move (notebooks 07–10). :func:`should_compact` tests the ``trigger``;
:func:`cut_point` finds the pair-safe cut for ``keep``; :func:`next_fold` is the whole decision
for one model call; an :class:`Event` records a compaction and :func:`view` rebuilds what the
model is sent from it. What it leaves out: the model call, the archive and the hooks
(``labkit.summarize.middleware``).
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage, get_buffer_string

from labkit import prompts
from labkit._digest import message_digest
from labkit._sizes import size_threshold

__all__ = [
    "CONVERSATION_KEY",
    "EVENTS_KEY",
    "FALLBACK_KEEP",
    "FALLBACK_TRIGGER",
    "MANUAL_TOOL",
    "SUMMARY_METADATA",
    "SUMMARY_TAGS",
    "Event",
    "Fold",
    "current",
    "cut_in",
    "cut_point",
    "defaults",
    "events_of",
    "fold_due",
    "message_key",
    "next_fold",
    "prompt_text",
    "safe_cut",
    "should_compact",
    "summary_message",
    "summary_parts",
    "summary_prompt",
    "view",
    "view_of",
]

EVENTS_KEY = "_labkit_compactions"
CONVERSATION_KEY = "_labkit_conversation"  # the conversation's id, drawn once (archive sections)
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
    compactions in the conversation. ``cut`` is a position; ``folded_to`` and ``kept_from`` find
    it again by message (id and content) after an application removed messages (:func:`cut_in`).
    Notebook 09."""

    cut: int
    summary: str
    archive: str | None
    created_at: int
    number: int
    reason: str = "trigger"  # "trigger", "overflow" or "manual"
    section: str | None = None
    folded_to: str | None = None  # the key (message_key) of the last message folded ...
    kept_from: str | None = None  # ... and of the first kept: where the cut is, by identity


def defaults(model: Any) -> tuple[tuple, tuple]:
    """(trigger, keep) for a model: fractions with a profile, deepagents' fallback without. Notebook 07."""
    profile = getattr(model, "profile", None)
    if isinstance(profile, dict) and isinstance(profile.get("max_input_tokens"), int):
        return ("fraction", 0.85), ("fraction", 0.10)
    return FALLBACK_TRIGGER, FALLBACK_KEEP


def should_compact(tokens: int, n_messages: int, trigger: tuple, window: int | None) -> bool:
    """Has the request reached the trigger? (A fraction with no window never fires.) Notebook 07."""
    if trigger[0] == "messages":
        return n_messages >= trigger[1]
    threshold = size_threshold(trigger, window)
    return threshold is not None and tokens >= threshold


def fold_due(n_messages: int, last: Event | None, request_tokens: int, trigger: tuple,
             window: int | None, forced: bool = False, cut: int | None = None) -> bool:
    """:func:`next_fold`'s first test, on ``n_messages`` in state under the ``last`` event (its
    cut at ``cut``, by default where it was made): the messages in view are the summary and those
    from the cut on. ``labkit.replay`` asks it before it builds a view for ``next_fold``."""
    in_view = n_messages - (last.cut if cut is None else cut) + 1 if last else n_messages
    return forced or should_compact(request_tokens, in_view, trigger, window)


def safe_cut(messages: Sequence[BaseMessage], cut: int) -> int:
    """Move ``cut`` back so it does not fall between an AI message's tool calls and their results:
    if ``messages[cut]`` is a tool result, the cut moves to the AI message that made the call. Notebook 08."""
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
    Notebook 08.
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


@dataclass(frozen=True)
class Fold:
    """What the next compaction folds (:func:`next_fold`): ``shown`` is the current view,
    ``shown[start:cut]`` the messages folded (``start`` is 1 after the previous summary), and
    ``absolute`` the new cut in state. Notebook 09."""

    shown: list[BaseMessage]
    start: int
    cut: int
    absolute: int

    @property
    def folded(self) -> list[BaseMessage]:
        return self.shown[self.start:self.cut]


def next_fold(messages: Sequence[BaseMessage], events: Sequence[Event], request_tokens: int, *,
              trigger: tuple, keep: tuple, window: int | None, count: Callable[[BaseMessage], int],
              forced: bool = False, stored: Sequence[BaseMessage] | None = None) -> Fold | None:
    """The compaction decision for one model call: should it compact, and what does it fold?

    Before the call it compacts once the request (``request_tokens``, or the messages in view)
    reaches ``trigger``; ``forced`` (after an overflow, or by hand) skips that test. ``None``: the
    call goes out as it is — or nothing can be folded. :class:`SummarizeMiddleware` and
    ``labkit.replay`` both ask this function, so the two cannot drift apart. ``stored``: the same
    messages as state holds them, where the cut is found (an outer middleware may have changed
    the copies it was handed). Notebook 07.
    """
    last, base = current(_basis(messages, stored), events)
    if not fold_due(len(messages), last, request_tokens, trigger, window, forced, base):
        return None
    shown = _view(messages, last, base)
    start = 1 if last else 0
    cut = cut_point(shown, keep, window, count, start=start)
    if cut <= start:
        return None
    return Fold(shown, start, cut, base + (cut - start))


def message_key(message: BaseMessage) -> str | None:
    """A message's id and a hash of what it says (``labkit._digest``) — ``None`` without an id:
    an application that reuses an id after a reset has not made the old message come back."""
    return f"{message.id}#{message_digest(message)[:10]}" if message.id else None


def cut_in(messages: Sequence[BaseMessage], event: Event) -> int | None:
    """Where ``event``'s cut falls in ``messages`` (as state holds them) now. Notebook 09.

    By identity when the event knows its boundary: just after its last folded message, or else
    just before its first kept one — wherever an application's ``RemoveMessage`` moved them.
    ``None`` when neither is there any more (``REMOVE_ALL_MESSAGES`` reset the thread, even if the
    new messages reuse the old ids): the event no longer applies. An event made from messages
    without ids keeps its position."""
    if event.folded_to is None and event.kept_from is None:
        return min(event.cut, len(messages))
    if event.folded_to is not None and 0 < event.cut <= len(messages) \
            and message_key(messages[event.cut - 1]) == event.folded_to:
        return event.cut  # nothing before the cut was removed: the common case, one comparison
    wanted = {k.split("#")[0]: k for k in (event.folded_to, event.kept_from) if k}
    kept = None
    for i in range(len(messages) - 1, -1, -1):
        key = message_key(messages[i]) if messages[i].id in wanted else None
        if key is not None and key == event.folded_to:
            return i + 1
        if key is not None and key == event.kept_from:
            kept = i
    return kept


def current(messages: Sequence[BaseMessage], events: Sequence[Event]) -> tuple[Event | None, int]:
    """The compaction that applies to ``messages`` and where its cut falls: the latest event whose
    boundary is still there (:func:`cut_in`), or ``(None, 0)``: no summary, every message shown.
    Notebook 09."""
    for event in reversed(events):
        cut = cut_in(messages, event)
        if cut is not None:
            return event, cut
    return None, 0


def view_of(messages: Sequence[BaseMessage], events: Sequence[Event],
            stored: Sequence[BaseMessage] | None = None) -> list[BaseMessage]:
    """What the model is sent under a run's compaction ``events``: :func:`view` of the one that
    applies (:func:`current`; ``stored`` as in :func:`next_fold`). Notebook 09."""
    event, cut = current(_basis(messages, stored), events)
    return _view(messages, event, cut)


def _basis(messages: Sequence[BaseMessage], stored: Sequence[BaseMessage] | None) -> Sequence[BaseMessage]:
    """Where to look for a cut: state's messages when they line up with the request's."""
    return stored if stored is not None and len(stored) == len(messages) else messages


def view(messages: Sequence[BaseMessage], event: Event | None) -> list[BaseMessage]:
    """What the model sees: the summary, then every message from the cut on. Notebook 09."""
    if event is None:
        return list(messages)
    cut = cut_in(messages, event)
    return list(messages) if cut is None else _view(messages, event, cut)


def _view(messages: Sequence[BaseMessage], event: Event | None, cut: int) -> list[BaseMessage]:
    return list(messages) if event is None else [summary_message(event), *messages[cut:]]


def summary_message(event: Event) -> HumanMessage:
    """The message that stands for everything before the cut. Notebook 09.

    Made once per event and the same object after that (the latest 256 events): every call after
    a compaction sends the very same summary, which the counters recognise by identity. Read it;
    do not change it."""
    return _summary_message(event)


@functools.lru_cache(maxsize=256)
def _summary_message(event: Event) -> HumanMessage:
    head, body = summary_parts(event)
    return HumanMessage(head + body, additional_kwargs=dict(SUMMARY_METADATA),
                        id=f"labkit-summary-{event.number}")


def summary_parts(event: Event) -> tuple[str, str]:
    """The summary message's text in two parts: the lines that name the compaction and its archive
    (ending in a blank line), and the summary in its tags (``labkit.replay`` counts them apart)."""
    where = (f"The folded messages are archived, word for word, in {event.archive} — read or grep "
             "that file when you need an exact detail.\n\n") if event.archive else ""
    head = (f"This conversation was compacted (compaction {event.number}): its first "
            f"{event.cut} messages were replaced by the summary below.\n\n{where}")
    return head, f"<summary>\n{event.summary}\n</summary>"


def summary_prompt(messages: Sequence[BaseMessage], keep_figures: bool = False) -> str:
    """The prompt sent to the summarizer: the four sections, then the history as XML. Notebook 10."""
    fidelity = prompts.KEEP_FIGURES if keep_figures else ""
    return prompts.SUMMARY_PROMPT.format(messages="\n".join(map(prompt_text, messages)), fidelity=fidelity)


def prompt_text(message: BaseMessage) -> str:
    """A message as the summary prompt renders it: langchain's XML (``get_buffer_string``), with
    what that leaves out put back — a message's ``name``, a tool result's error status, thinking
    and reasoning, and text-plain blocks past 500 characters, whole. Notebook 10."""
    xml = get_buffer_string([message], format="xml")
    extra = {"name": message.name, "status": "error" if getattr(message, "status", None) == "error" else None}
    attrs = "".join(f" {k}={quoteattr(v)}" for k, v in extra.items() if v)
    blocks = message.content if isinstance(message.content, list) else []
    thoughts = [t for b in blocks if isinstance(b, dict) for t in _thought(b)]
    thoughts += [b["reasoning"] for b in _standard(message)
                 if b.get("type") == "reasoning" and b.get("reasoning")]
    plain = [b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text-plain"
             and len(b.get("text") or "") > 500]
    if not (attrs or thoughts or plain):
        return xml
    head = xml.index(">")
    inner = "".join(f"\n  <thinking>{escape(t)}</thinking>" for t in dict.fromkeys(thoughts))
    inner += "".join(f"\n  <text-plain>{escape(t)}</text-plain>" for t in plain)
    return xml[:head] + attrs + ">" + inner + xml[head + 1:]


def _thought(block: dict) -> list[str]:
    if block.get("type") == "thinking" and block.get("thinking"):
        return [block["thinking"]]
    if block.get("type") == "reasoning":
        return [s.get("text", "") for s in block.get("summary") or [] if s.get("text")] or (
            [block["reasoning"]] if block.get("reasoning") else [])
    return []


def _standard(message: BaseMessage) -> list[dict]:
    """langchain's standard blocks (they carry a provider's reasoning, e.g. DeepSeek's), or none."""
    try:
        return [b for b in message.content_blocks if isinstance(b, dict)]
    except Exception:  # a content langchain cannot translate: the raw blocks were read above
        return []


def events_of(state: dict) -> list[Event]:
    """The compaction events recorded in a run's state, oldest first. Notebook 09."""
    return [Event(**e) for e in state.get(EVENTS_KEY) or []]
