"""Offloading (卸载): move big content to a file and keep a path plus a preview in the context.

Notebooks 04 and 05 introduce it. Offloading is the one defence that loses nothing: the full text
is in a file the agent can page through with ``read_file`` or search with ``grep``. The pure
functions here make the file and the stub; :class:`OffloadMiddleware` applies them to large tool
results, large human messages and old ``write_file`` / ``edit_file`` arguments.

Unlike deepagents' ``FilesystemMiddleware`` (``len(text) > 4 * limit`` characters), the limits are
real tokens, so Chinese or digit-heavy text is judged by what it costs; and file names are
injective: two tool-call ids never share a file. What it leaves out: binary content (images stay
in the message), and evicting ``task`` results by size alone (isolation's business, notebook 12).
"""

from __future__ import annotations

import hashlib
import re
import threading
import warnings
import weakref
from collections.abc import Callable, Sequence
from operator import is_
from typing import Any

from deepagents.backends import StateBackend
from deepagents.middleware.filesystem import FilesystemState
from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.types import Command

from labkit import prompts
from labkit._offload_files import write_free
from labkit._offload_text import (
    END_MARK,
    LINE_LIMIT,
    WRAP_MARK,
    evicted_text,
    preview,
    stored_text,
    unwrap,
    wrap_long_lines,
)
from labkit._paths import HISTORY_DIR, RESULTS_DIR
from labkit._same import Carried
from labkit._sizes import check_count, check_limit, check_size, size_threshold
from labkit.tokens import TokenCounter, message_text
from labkit.trace import RunningMeasure

__all__ = ["END_MARK", "EXEMPT_TOOLS", "HISTORY_DIR", "LINE_LIMIT", "RESULTS_DIR", "WRAP_MARK",
           "OffloadMiddleware", "preview", "result_path", "safe_name", "stored_text", "truncate_args",
           "unwrap", "wrap_long_lines"]

EXEMPT_TOOLS = frozenset({"ls", "glob", "grep", "read_file", "edit_file", "write_file", "delete"})
TRUNCATED_TOOLS = ("write_file", "edit_file")
OFFLOADED = "lc_offloaded_to"  # additional_kwargs key: where this message's full text lives
_SAFE = re.compile(r"[A-Za-z0-9_-]{1,64}")


# -- pure functions ----------------------------------------------------------------------------


def safe_name(identifier: str) -> str:
    """A file name for a tool-call id: the id itself when it is plain (letters, digits, ``_``,
    ``-``; at most 64), else a cleaned prefix plus ``.h`` and a hash of the whole id. Plain names
    have no dot, so the two kinds never meet, and different ids never share a name. Notebook 04."""
    if _SAFE.fullmatch(identifier):
        return identifier
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", identifier)[:40].strip("_") or "id"
    return f"{cleaned}.h{hashlib.sha256(identifier.encode('utf-8', 'surrogatepass')).hexdigest()[:24]}"


def result_path(tool_call_id: str) -> str:
    """Where an evicted tool result goes: ``/large_tool_results/<safe name>``. Notebook 04."""
    return f"{RESULTS_DIR}/{safe_name(tool_call_id)}"


def truncate_args(messages: Sequence[BaseMessage], protect_from: int,
                  max_length: int = 2000) -> list[BaseMessage]:
    """Shorten long string arguments of ``write_file`` / ``edit_file`` calls in the AI messages
    before index ``protect_from``. Returns a new list; the messages given are not changed.
    Notebook 05."""
    out = list(messages)
    for i, m in enumerate(messages[:max(protect_from, 0)]):
        if not isinstance(m, AIMessage) or not m.tool_calls:
            continue
        calls, changed = [], False
        for tc in m.tool_calls:
            args = dict(tc.get("args") or {})
            if tc["name"] in TRUNCATED_TOOLS:
                path = args.get("file_path", "the file")
                for key, value in args.items():
                    if isinstance(value, str) and len(value) > max_length:
                        keep = max_length // 2
                        note = prompts.ARG_TRUNCATED if tc["name"] == "write_file" \
                            else prompts.ARG_TRUNCATED_EDIT
                        args[key] = value[:keep] + note.format(
                            dropped=len(value) - keep, path=path)
                        changed = True
            calls.append({**tc, "args": args})
        if changed:
            out[i] = m.model_copy(update={"tool_calls": calls})
    return out


def _shortenable(messages: Sequence[BaseMessage], max_length: int) -> bool:
    """Does any ``write_file`` / ``edit_file`` call in ``messages`` have a string argument longer
    than ``max_length`` (something :func:`truncate_args` could shorten)?"""
    for m in messages:
        if isinstance(m, AIMessage) and m.tool_calls:
            for tc in m.tool_calls:
                if tc["name"] in TRUNCATED_TOOLS and any(isinstance(v, str) and len(v) > max_length
                                                         for v in (tc.get("args") or {}).values()):
                    return True
    return False


def _protect_from(messages: Sequence[BaseMessage], keep: tuple, window: int | None,
                  counter: TokenCounter) -> int:
    """Index of the first message in the protected recent window."""
    kind, n = keep
    if kind == "messages":
        return max(len(messages) - int(n), 0)
    budget = size_threshold(keep, window)
    if budget is None:
        return 0  # a fraction with no window: protect everything rather than guess
    total = 0
    for i in range(len(messages) - 1, -1, -1):
        total += counter.message(messages[i])
        if total > budget:
            return i + 1
    return 0


def _with_text(message: BaseMessage, text: str) -> str | list:
    """The message's content with its text replaced and any non-text blocks kept."""
    if isinstance(message.content, str):
        return text
    others = [b for b in message.content if not (isinstance(b, dict) and b.get("type") == "text")
              and not isinstance(b, str)]
    return [{"type": "text", "text": text}, *others]


# -- the middleware ----------------------------------------------------------------------------


class OffloadMiddleware(AgentMiddleware):
    """Evict large tool results and human messages to files; shorten old file-tool arguments.
    Notebook 04 (results), notebook 05 (arguments and human messages).

    * **Large tool results** (``wrap_tool_call``): a result over ``tool_limit`` BPE tokens is
      written to ``/large_tool_results/<safe name>`` before it enters state, and replaced by the
      path and a head/tail preview with the file's own line numbers. The file tools are exempt,
      so reading an evicted result back never evicts it again.
    * **Old tool inputs** (``wrap_model_call``): once the request passes ``args_trigger``, long
      string arguments of ``write_file`` / ``edit_file`` calls older than the protected
      ``args_keep`` window are shortened *in the request only*; state keeps them. The cut moves
      in steps of ``args_step`` messages, so a prompt cache breaks once a step, not every call.
    * **Large human messages** (``wrap_model_call``): a user message over ``human_limit`` tokens
      is saved under ``/conversation_history/``; state keeps it whole, the model sees a stub.

    It writes through deepagents' backends, so deepagents' ``read_file`` and ``grep`` read what
    it wrote. Lines longer than ``LINE_LIMIT`` characters are wrapped in the file (a line ending
    in ``WRAP_MARK`` continues on the next) and the file ends with an ``END_MARK`` line;
    :func:`unwrap` restores the exact original.

    Args:
        backend: a deepagents backend (default ``StateBackend()``: files live in ``state["files"]``).
        tool_limit: evict tool results over this many BPE tokens (``None``: never).
        human_limit: evict the latest human message over this many tokens (``None``: never).
        args_trigger: when the request exceeds this size, truncate old file-tool arguments
            (``None``: never). ``("fraction", f)`` needs the model's profile or ``window``.
        args_keep: the recent window whose arguments are never truncated.
        args_step: the cut before that window moves this many messages at a time (1: every
            message, as deepagents does; more keeps the request's prefix — and a cache — stable).
        arg_max_length: arguments longer than this many characters are shortened.
        exempt_tools: tools whose results are never evicted; must include ``read_file``.
        head_lines, tail_lines: how many lines of the file the stub previews (0 to 1000 each).
        window: the context window, for fractions when the model has no profile.

    Example:
        >>> from langchain.agents import create_agent
        >>> # create_agent(model, tools, middleware=[OffloadMiddleware(tool_limit=20_000)])
    """

    name = "labkit.Offload"

    def __init__(
        self,
        *,
        backend: Any = None,
        tool_limit: int | None = 20_000,
        human_limit: int | None = 50_000,
        args_trigger: tuple | None = ("fraction", 0.85),
        args_keep: tuple = ("messages", 20),
        args_step: int = 1,
        arg_max_length: int = 2000,
        exempt_tools: Sequence[str] = EXEMPT_TOOLS,
        head_lines: int = 5,
        tail_lines: int = 5,
        window: int | None = None,
    ) -> None:
        super().__init__()
        self.tool_limit = check_limit("tool_limit", tool_limit)
        self.human_limit = check_limit("human_limit", human_limit)
        self.args_trigger = None if args_trigger is None else \
            check_size("args_trigger", args_trigger, ("fraction", "tokens"))
        self.args_keep = check_size("args_keep", args_keep)
        self.args_step = check_count("args_step", args_step, "messages")
        self.arg_max_length = check_limit("arg_max_length", arg_max_length, allow_none=False)
        self.window = check_limit("window", window)
        for knob, v in (("head_lines", head_lines), ("tail_lines", tail_lines)):
            check_count(knob, v, "lines", least=0, most=1000)
        if isinstance(exempt_tools, str) or "read_file" not in exempt_tools:
            raise ValueError("exempt_tools must be a collection of tool names that includes "
                             "'read_file': reading an evicted result back must never evict it again")
        self.exempt_tools = frozenset(exempt_tools)
        self.head_lines, self.tail_lines = head_lines, tail_lines
        self.backend = StateBackend() if backend is None else backend
        self.state_schema = FilesystemState
        self.counter = TokenCounter(non_text="count")
        self._measure = RunningMeasure(self.counter)  # the request, call after call
        self.evicted: list[str] = []  # paths written, in order (for the lessons)
        self.weighed: list[int] = []  # every result's tokens, as compared with tool_limit, in order
        self._stubs: dict[tuple, str] = {}
        self._twins: dict[int, dict] = {}  # id(reply) -> {call id: calls seen}, when a reply repeats ids
        self._carried, self._last_view = Carried(), ([], None)  # the last call's view (labkit._same)
        self._lock = threading.Lock()

    # -- writing -------------------------------------------------------------------------------

    def _write(self, path: str, text: str) -> str | None:
        """Write ``text`` at ``path`` or a free variant of it, never over other content and never
        blind (``labkit._offload_files``); the path, or ``None`` (the content stays in context)."""
        written, new = write_free(self.backend, path, text)
        if new:
            self.evicted.append(written)
        return written

    # -- large tool results ----------------------------------------------------------------------

    def _evict_result(self, message: ToolMessage, twin: int = 1) -> ToolMessage:
        if message.additional_kwargs.get(OFFLOADED) or self.tool_limit is None:
            return message
        text = message_text(message, text_only=True)
        tokens = self.counter.text(text)
        self.weighed.append(tokens)
        if tokens <= self.tool_limit:
            return message
        stored, wrapped, lines, shown = evicted_text(text, self.head_lines, self.tail_lines)
        call_id = message.tool_call_id or ""
        path = self._write(result_path(call_id if twin == 1 else f"{call_id}#{twin}"), stored)
        if path is None:
            return message
        stub = prompts.OFFLOAD_RESULT_STUB.format(tokens=tokens, path=path, lines=lines, preview=shown)
        if wrapped:
            stub += f"\n\nLines longer than {LINE_LIMIT:,} characters were wrapped in the file: a line " \
                    f"ending in '{WRAP_MARK.strip()}' continues on the next."
        return message.model_copy(update={
            "content": _with_text(message, stub),
            "additional_kwargs": {**message.additional_kwargs, OFFLOADED: path},
        })

    def _evict_any(self, result: ToolMessage | Command, twin: int = 1) -> ToolMessage | Command:
        if isinstance(result, ToolMessage):
            return self._evict_result(result, twin)
        if isinstance(result, Command) and isinstance(result.update, dict) and result.update.get("messages"):
            msgs = [self._evict_result(m, twin) if isinstance(m, ToolMessage) else m
                    for m in result.update["messages"]]
            return Command(graph=result.graph, goto=result.goto, resume=result.resume,
                           update={**result.update, "messages": msgs})
        return result

    def _twin(self, request) -> int:
        """Which of the reply's calls with this id ``request`` is (1 for an id used once): two parallel
        calls given one id get two files, though a state backend shows neither write to the other."""
        state = getattr(request, "state", None)
        reply = (state.get("messages") or [None])[-1] if isinstance(state, dict) else None
        call_id = request.tool_call.get("id")
        if sum(c.get("id") == call_id for c in getattr(reply, "tool_calls", None) or ()) < 2:
            return 1
        with self._lock:  # forgotten with the reply: no leak, no id reused
            if (seen := self._twins.get(id(reply))) is None:
                seen = self._twins[id(reply)] = {}
                weakref.finalize(reply, self._twins.pop, id(reply), None)
            seen[call_id] = n = seen.get(call_id, 0) + 1
        return n

    def wrap_tool_call(self, request, handler: Callable):
        result = handler(request)
        if request.tool_call["name"] in self.exempt_tools:
            return result
        return self._evict_any(result, self._twin(request))

    async def awrap_tool_call(self, request, handler):
        result = await handler(request)
        if request.tool_call["name"] in self.exempt_tools:
            return result
        return self._evict_any(result, self._twin(request))

    # -- the model's view ------------------------------------------------------------------------

    def _evict_human(self, messages: list[BaseMessage]) -> HumanMessage | None:
        """Save the latest human message if it is too large; return its tagged copy."""
        if self.human_limit is None or not messages or not isinstance(messages[-1], HumanMessage):
            return None
        last = messages[-1]
        if last.additional_kwargs.get(OFFLOADED) or last.additional_kwargs.get("lc_source"):
            return None
        if last.id is None:  # without an id the tagged copy could not replace it in state
            return None
        text = message_text(last, text_only=True)
        if self.counter.text(text) <= self.human_limit:
            return None
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        path = self._write(f"{HISTORY_DIR}/message-{digest}.md", stored_text(text))
        if path is None:
            return None
        return last.model_copy(update={"additional_kwargs": {**last.additional_kwargs, OFFLOADED: path}})

    def _human_view(self, message: HumanMessage) -> HumanMessage:
        """The stub the model sees for an offloaded human message (made once per message)."""
        path = message.additional_kwargs[OFFLOADED]
        key = (message.id, path)
        if key not in self._stubs:
            text = message_text(message, text_only=True)
            _, _, lines, shown = evicted_text(text, self.head_lines, self.tail_lines)
            self._stubs[key] = prompts.OFFLOAD_HUMAN_STUB.format(tokens=self.counter.text(text), path=path,
                                                                 lines=lines, preview=shown)
        return message.model_copy(update={"content": _with_text(message, self._stubs[key])})

    def _views(self, messages: Sequence[BaseMessage]) -> tuple[list[BaseMessage], bool]:
        """Offloaded human messages as their stubs, and whether an argument could be shortened;
        what the last call found for the messages it shares unedited is carried over."""
        with self._lock:
            last_out, at = self._last_view
            k = self._carried.advance(messages)
            out = last_out[:k] + [self._human_view(m) if isinstance(m, HumanMessage)
                                  and m.additional_kwargs.get(OFFLOADED) else m for m in messages[k:]]
            if at is None or at >= k:
                at = next((k + i for i, m in enumerate(out[k:]) if _shortenable((m,), self.arg_max_length)),
                          None)
            self._last_view = (out, at)
            return list(out), at is not None

    def view(self, messages: Sequence[BaseMessage], *, system: BaseMessage | None = None,
             tools: Sequence[Any] = (), window: int | None = None) -> list[BaseMessage]:
        """What the model should see for ``messages``: offloaded human messages as stubs, and old
        file-tool arguments shortened once the request is over ``args_trigger``. Pure: the
        messages given are not changed. Notebook 05."""
        out, shortenable = self._views(messages)
        if self.args_trigger is None or not shortenable:
            return out  # no argument long enough to shorten: the request's size does not matter
        window = window or self.window
        threshold = size_threshold(self.args_trigger, window)
        if threshold is None:
            return out
        total = sum(self._measure(out, system, tools).values())
        if total <= threshold:
            return out
        cut = _protect_from(out, self.args_keep, window, self.counter) // self.args_step * self.args_step
        return truncate_args(out, cut, self.arg_max_length)

    def _prepare(self, request):
        messages = list(request.messages)
        tagged = self._evict_human(messages)
        if tagged is not None:
            messages[-1] = tagged
        profile = getattr(request.model, "profile", None)
        window = profile.get("max_input_tokens") if isinstance(profile, dict) else None
        if self.args_trigger and self.args_trigger[0] == "fraction" and not (window or self.window):
            warnings.warn("labkit offload: args_trigger is a fraction but the model has no profile "
                          "and no window= was given, so old arguments are not truncated; pass "
                          "args_trigger=('tokens', n) or window=", stacklevel=3)
        seen = self.view(messages, system=request.system_message, tools=request.tools or (),
                         window=window if isinstance(window, int) else None)
        if tagged is None and len(seen) == len(request.messages) and all(map(is_, seen, request.messages)):
            return request, None  # the model sees the very messages it was handed: no new request
        return request.override(messages=seen), tagged

    @staticmethod
    def _finish(response, tagged):
        """Attach the tagged human message to the response, as a state update by message id."""
        if tagged is None:
            return response
        if isinstance(response, ExtendedModelResponse):
            command = response.command
            inner = command.update if command and isinstance(command.update, dict) else {}
            update = {**inner, "messages": [*inner.get("messages", []), tagged]}
            return ExtendedModelResponse(model_response=response.model_response,
                                         command=Command(update=update))
        return ExtendedModelResponse(model_response=response, command=Command(update={"messages": [tagged]}))

    def wrap_model_call(self, request, handler):
        new_request, tagged = self._prepare(request)
        return self._finish(handler(new_request), tagged)

    async def awrap_model_call(self, request, handler):
        new_request, tagged = self._prepare(request)
        return self._finish(await handler(new_request), tagged)
