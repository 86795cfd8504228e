"""The meter: every request a chat model sends, counted before it leaves, and a budget that holds.

``meter.attach(model)`` returns a copy of the model (same class, client and profile) whose every
request — the agent's, a summary call, a subagent's, a retry — is counted as the ``Recorder``
counts one (BPE of its messages and tool schemas), checked against the cap *before* it is sent,
and shown as one line with what came back and the provider's usage. The request that would take
the total over the cap is not sent: :class:`BudgetExceeded` ends the run. Rate limits, server
errors, resets and timeouts are retried here, each retry a request of its own (the client's own
retries are switched off where labkit can). Every "On your model" section uses it (notebook 01).
What it leaves out: the provider's tokenizer (its count is shown beside labkit's) and prices.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from langchain_core.exceptions import ModelError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from labkit._client_retries import without_client_retries
from labkit._request_parts import EXTRAS, schema_text, with_model_kwargs
from labkit.caching import PrefixCache
from labkit.errors import explain, is_overflow, kind, provider_message, retry_after, retryable, status_of
from labkit.tokens import TokenCounter

__all__ = ["BudgetExceeded", "Meter", "Sent"]

# the meters whose request is being made now: a model whose _generate calls _stream is metered once,
# and a metered model attached to a second meter is counted by both
_INSIDE: contextvars.ContextVar[frozenset] = contextvars.ContextVar("labkit_inside", default=frozenset())
# the request's run manager: langchain streams a model (streaming=True) without handing it to _stream
_CALLER: contextvars.ContextVar[Any] = contextvars.ContextVar("labkit_caller", default=None)


class BudgetExceeded(ModelError):
    """The next request would have taken the input tokens sent over the cap; it was not sent.
    A langchain ``ModelError`` that is not retryable, so langchain's retry middleware and
    summarizer do not ask again."""

    is_retryable = False


@dataclass
class Sent:
    """One request the meter saw (notebook 01). ``tokens``: labkit's count of what it carried;
    ``reported_input`` / ``output_tokens``: the provider's usage, ``None`` when it reported none;
    ``outcome``: ``"ok"``, ``"retried"``, ``"overflow"``, ``"failed"``, ``"cut off"`` (cancelled or
    left mid-reply: sent, never answered), ``"not sent"`` (the cap refused it) or ``"not delivered"``
    (no connection: nothing reached the provider)."""

    number: int
    who: str
    tokens: int
    attempt: int = 1
    outcome: str = "ok"
    reported_input: int | None = None
    output_tokens: int | None = None
    detail: str = ""  # the provider's message, when the request failed
    shared_prefix: int = 0  # labkit.caching: the prefix shared with an earlier answered request,
    whole_prefix: int = 0  # and the longest earlier request that is a prefix of this one
    reported_cache_read: int | None = None  # the provider's cache read, when it reported one

    @property
    def sent(self) -> bool:
        return self.outcome not in ("not sent", "not delivered")


class Meter:
    """Counts, caps and shows every request of the models it is attached to. Notebook 01.

    Args:
        cap: the most input tokens to send in all (``None``: no cap, count only).
        out: where the one line per request goes (``None``: nowhere).
        retries: how many times a rate-limited, failed or cut request is sent again.
        wait: seconds before a retry when the provider gives no ``Retry-After``; a longer wait
            asked for is capped at ``max_wait``.

    Example:
        >>> from labkit import LabModel
        >>> meter = Meter(cap=50_000, out=None)
        >>> model = meter.attach(LabModel())
        >>> # scenario.run(model, ...); meter.sent, meter.requests[-1], meter.stopped
    """

    def __init__(self, cap: int | None = None, out: Callable[[str], Any] | None = print, *,
                 retries: int = 2, wait: float = 1.0, max_wait: float = 20.0,
                 sleep: Callable[[float], Any] = time.sleep) -> None:
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0):
            raise ValueError(f"cap must be a positive number of tokens or None, got {cap!r}")
        self.cap, self.out, self.retries = cap, out, retries
        self.wait, self.max_wait, self.sleep = wait, max_wait, sleep
        self.requests: list[Sent] = []
        self.stopped: str | None = None  # the line that said why the run stopped at the cap
        self.counter = TokenCounter(non_text="count", by_object=False)
        self._lock = threading.Lock()
        self._out_lock = threading.Lock()  # children run in parallel: one whole line at a time
        self._parent: list[str | None] = []  # the agent name of the first request: the parent's
        self._sent = 0  # the sum of tokens over the requests that left
        self.prefixes = PrefixCache()  # the answered requests, as a provider's prompt cache holds them

    # -- totals ------------------------------------------------------------------------------

    @property
    def sent(self) -> int:
        """Input tokens sent in all, labkit's count: every request that left, retries included
        (kept as requests are booked, so a long run does not re-add them on every request)."""
        return self._sent

    @property
    def reported(self) -> int | None:
        """Input tokens the provider reported in all; ``None`` unless every request sent reported."""
        values = [r.reported_input for r in self.requests if r.sent and r.outcome == "ok"]
        return sum(values) if values and None not in values else None

    def count(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> int:
        """A request's tokens, as the Recorder counts what it carried — messages and tool schemas
        (``kwargs["tools"]``) — plus a structured-output schema (``response_format``). A message
        labkit cannot count as text (an image block) is counted as the BPE of its whole content,
        data included: more than a provider bills, never less, so the cap still holds."""
        return sum(tokens for _, tokens in self.blocks(messages, kwargs))

    def blocks(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> list[tuple[Any, int]]:
        """The request as ``labkit.caching`` reads it: the tools and schemas, then each message,
        each with its tokens."""
        tools, extras = kwargs.get("tools") or [], [schema_text(kwargs[k]) for k in EXTRAS if kwargs.get(k)]
        tokens = sum(self.counter.tool(t) for t in tools) + sum(map(self.counter.text, extras))
        out: list[tuple[Any, int]] = [("|".join([*map(schema_text, tools), *extras]), tokens)]
        out += ((m, self.counter.message(m)) for m in messages)  # an image: its data's BPE
        return out

    # -- the metered model -------------------------------------------------------------------

    def attach(self, model: BaseChatModel) -> BaseChatModel:
        """A copy of ``model`` whose every request goes through this meter. Notebook 01.

        A shallow copy: it shares the client and anything the model logs (``LabModel.calls``)
        with ``model``. A model already metered is metered by both meters, each to its own cap."""
        if not isinstance(model, BaseChatModel):
            raise TypeError(f"Meter.attach needs a chat model (a BaseChatModel), got {type(model).__name__}: "
                            "pass the model itself, not a model wrapped by .bind(), .with_retry() or a chain")
        copy = without_client_retries(model)
        copy.__class__ = _metered_class(type(model), self)
        return copy

    # -- one request -------------------------------------------------------------------------

    def _who(self, run_manager: Any) -> str:
        meta = getattr(run_manager, "metadata", None) or {}
        agent = meta.get("lc_agent_name")
        with self._lock:
            if not self._parent:
                self._parent.append(agent)
        child = agent is not None and agent != self._parent[0]
        if meta.get("lc_source") == "summarization":
            return f"summary ({agent})" if child else "summary"
        return f"subagent {agent}" if child else "parent"

    def _admit(self, who: str, tokens: int, attempt: int) -> Sent:
        """Book the request, or refuse it: the cap is checked before anything leaves."""
        with self._lock:
            before = self._sent
            record = Sent(len(self.requests) + 1, who, tokens, attempt)
            self.requests.append(record)
            if self.stopped is None and (self.cap is None or before + tokens <= self.cap):
                self._sent += tokens
                return record
            record.outcome = "not sent"
            first = self.stopped is None
            if first:
                self.stopped = (f"Stopped before request {record.number} ({who}, {tokens:,} tokens): "
                                f"{before:,} of the {self.cap:,}-token budget already sent. Raise "
                                "LABKIT_BUDGET_TOKENS to go further; what ran so far is shown below.")
            message = self.stopped
        if first:
            self._say(message)
        raise BudgetExceeded(message)

    def _failed(self, record: Sent, error: Exception, model: Any, sent_anything: bool) -> float:
        """Show a failed request; the seconds to wait before sending it again — or re-raise
        ``error``, marked not retryable (labkit has retried it, or it is not worth retrying), so
        that langchain's retry wrappers do not send it again behind the meter's back."""
        again = not sent_anything and retryable(error) and record.attempt <= self.retries
        wait = min(retry_after(error, self.wait * record.attempt), self.max_wait) if again else None
        record.outcome = "overflow" if is_overflow(error) else "retried" if again \
            else "not delivered" if kind(error) == "connection refused" else "failed"
        if not record.sent:  # nothing reached the provider: it does not count against the cap
            with self._lock:
                self._sent -= record.tokens
        record.detail = provider_message(error)
        said = explain(error, model, advice=not again)
        tail = f" — retrying in {wait:.1f} s (attempt {record.attempt + 1} of {self.retries + 1})" \
            if again else ""
        verb = "refused" if record.outcome == "overflow" else "failed"
        self._say(self._line(record, f"{verb}: {said}{tail}"))
        if wait is None:
            try:
                error.is_retryable = False  # read by langchain's default_retry_on
            except AttributeError:  # an exception that takes no attributes
                pass
            raise error
        return wait

    def _done(self, record: Sent, message: Any, blocks: list) -> None:
        record.shared_prefix, record.whole_prefix = self.prefixes.observe(blocks)
        usage = getattr(message, "usage_metadata", None) or {}
        record.reported_input = usage.get("input_tokens")
        record.reported_cache_read = (usage.get("input_token_details") or {}).get("cache_read")
        record.output_tokens = usage.get("output_tokens")
        calls = [tc.get("name") for tc in getattr(message, "tool_calls", None) or []]
        bad = len(getattr(message, "invalid_tool_calls", None) or [])
        reply = f"tool calls {calls}" if calls else "a text reply"
        if bad:
            reply += f" and {bad} malformed tool call(s)"
        self._say(self._line(record, reply))

    def _cut_off(self, record: Sent, stop: BaseException) -> None:
        """A request that left and was never answered (counted: the provider may bill it)."""
        record.outcome = "cut off"
        self._say(self._line(record, f"cut off before the reply ended ({type(stop).__name__})"))

    def _line(self, r: Sent, what: str) -> str:
        retry = f" (retry {r.attempt - 1})" if r.attempt > 1 else ""
        usage = ("usage not reported" if r.reported_input is None
                 else f"provider: {r.reported_input:,} in, {r.output_tokens or 0:,} out")
        shown = f" · {usage}" if r.outcome == "ok" else ""
        return f"  request {r.number} · {r.who}{retry} · {r.tokens:,} tokens → {what}{shown}"

    def _say(self, line: str) -> None:
        if self.out is not None:
            with self._out_lock:
                self.out(line)


# -- the metered class: the model's own class with its calls wrapped ------------------------------


def _usage_message(chunks: list) -> Any:
    """The streamed reply as one message (its usage summed by langchain's chunk addition)."""
    message = None
    for chunk in chunks:
        m = getattr(chunk, "message", chunk)
        message = m if message is None else message + m
    return message


def _metered_class(cls: type, meter: Meter) -> type:
    """A subclass of ``cls`` whose ``_generate`` / ``_stream`` (and async) go through ``meter``:
    each is one request's pieces — the result, or the stream's chunks — from :func:`_sent`."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        if meter in _INSIDE.get():  # a model whose _generate streams: metered once, here
            return cls._generate(self, messages, stop=stop, run_manager=run_manager, **kwargs)

        def pieces():
            yield cls._generate(self, messages, stop=stop, run_manager=run_manager, **kwargs)
        (result,) = _sent(meter, self, messages, run_manager, kwargs, pieces, _first_message)
        return result

    def _generate_with_cache(self, *args, **kwargs):
        token = _CALLER.set(kwargs.get("run_manager"))
        try:
            return cls._generate_with_cache(self, *args, **kwargs)
        finally:
            _CALLER.reset(token)

    async def _agenerate_with_cache(self, *args, **kwargs):
        token = _CALLER.set(kwargs.get("run_manager"))
        try:
            return await cls._agenerate_with_cache(self, *args, **kwargs)
        finally:
            _CALLER.reset(token)

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        def pieces():
            return cls._stream(self, messages, stop=stop, run_manager=run_manager, **kwargs)
        caller = run_manager or _CALLER.get()
        yield from pieces() if meter in _INSIDE.get() else _sent(meter, self, messages, caller, kwargs,
                                                                  pieces, _usage_message)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        if meter in _INSIDE.get():
            return await cls._agenerate(self, messages, stop=stop, run_manager=run_manager, **kwargs)

        async def pieces():
            yield await cls._agenerate(self, messages, stop=stop, run_manager=run_manager, **kwargs)
        return [r async for r in _asent(meter, self, messages, run_manager, kwargs, pieces,
                                        _first_message)][0]

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):
        def pieces():
            return cls._astream(self, messages, stop=stop, run_manager=run_manager, **kwargs)
        inside, caller = meter in _INSIDE.get(), run_manager or _CALLER.get()
        async for chunk in pieces() if inside else _asent(meter, self, messages, caller, kwargs, pieces,
                                                          _usage_message):
            yield chunk

    namespace: dict[str, Any] = {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                                 "__annotations__": {"labkit_meter": ClassVar[Meter]},
                                 "labkit_meter": meter, "_generate": _generate, "_agenerate": _agenerate,
                                 "_generate_with_cache": _generate_with_cache,
                                 "_agenerate_with_cache": _agenerate_with_cache}
    # only what the model implements: langchain streams a model whose _stream is its own
    if cls._stream is not BaseChatModel._stream:
        namespace["_stream"] = _stream
    if cls._astream is not BaseChatModel._astream:
        namespace["_astream"] = _astream
    return type(cls)(cls.__name__, (cls,), namespace)


def _partial(model: Any, got: list, error: Exception) -> bool:
    """Did the failed attempt already hand out part of a reply? Chunks it yielded; or, for a model
    that streams inside ``_generate`` (``streaming=True``), any failure that is not an HTTP error
    status or a refused connection (those come before the first token)."""
    if got:
        return True
    return bool(getattr(model, "streaming", False)) and status_of(error) is None \
        and kind(error) != "connection refused"


def _first_message(pieces: list) -> Any:
    generations = pieces[0].generations if pieces else []
    return generations[0].message if generations else None


def _sent(meter: Meter, model, messages, run_manager, kwargs, pieces, reply):
    """One request through the meter: admitted (or refused) before each attempt, its pieces
    yielded as they come (``_INSIDE`` set while the model makes each), retried while the meter
    says so, and shown with ``reply(pieces)`` when done."""
    who, blocks = meter._who(run_manager), meter.blocks(messages, with_model_kwargs(model, kwargs))
    tokens = sum(n for _, n in blocks)
    for attempt in itertools.count(1):
        record, got = meter._admit(who, tokens, attempt), []
        stream = pieces()
        try:
            while True:
                token = _INSIDE.set(_INSIDE.get() | {meter})
                try:
                    piece = next(stream)
                except StopIteration:
                    break
                finally:
                    _INSIDE.reset(token)
                got.append(piece)
                yield piece
        except BudgetExceeded:
            raise
        except Exception as error:
            meter.sleep(meter._failed(record, error, model, _partial(model, got, error)))
            continue
        except BaseException as stop:  # cancelled, a stream left, an interrupt: sent, not answered
            meter._cut_off(record, stop)
            raise
        meter._done(record, reply(got), blocks)
        return


async def _asent(meter: Meter, model, messages, run_manager, kwargs, pieces, reply):
    """:func:`_sent` for async calls and streams."""
    who, blocks = meter._who(run_manager), meter.blocks(messages, with_model_kwargs(model, kwargs))
    tokens = sum(n for _, n in blocks)
    for attempt in itertools.count(1):
        record, got = meter._admit(who, tokens, attempt), []
        stream = pieces()
        try:
            while True:
                token = _INSIDE.set(_INSIDE.get() | {meter})
                try:
                    piece = await stream.__anext__()
                except StopAsyncIteration:
                    break
                finally:
                    _INSIDE.reset(token)
                got.append(piece)
                yield piece
        except BudgetExceeded:
            raise
        except Exception as error:
            wait = meter._failed(record, error, model, _partial(model, got, error))
            await (asyncio.sleep(wait) if meter.sleep is time.sleep else asyncio.to_thread(meter.sleep, wait))
            continue
        except BaseException as stop:
            meter._cut_off(record, stop)
            raise
        meter._done(record, reply(got), blocks)
        return
