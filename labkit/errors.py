"""What a provider's error means, and what to do about it: the one place labkit reads model errors.

Notebook 11 introduces :func:`is_overflow`, which recognises a request above the window as
deepagents' summarization middleware does: langchain's ``ContextOverflowError``, or an HTTP 400,
413 or 422 whose text holds one of :data:`OVERFLOW_PHRASES` (OpenAI's client raises a plain bad
request for it). ``SummarizeMiddleware``, the ``Recorder``, ``diagnose`` and every "On your model"
section ask it. :func:`explain` turns any provider error into its own message plus one line of
what to do; :func:`retryable` and :func:`retry_after` say whether and when to send again.

What it leaves out: sending again (``labkit.meter`` does) and provider codes beyond the HTTP
status, langchain's error classes and the network errors of ``httpx``.
"""

from __future__ import annotations

import os
from typing import Any

from langchain_core.exceptions import ContextOverflowError

__all__ = ["KEY_VARIABLES", "OVERFLOW_PHRASES", "OVERFLOW_STATUS", "explain", "is_overflow", "kind",
           "provider_message", "retry_after", "retryable", "status_of"]

OVERFLOW_STATUS = frozenset({400, 413, 422})
# deepagents 0.7.32, middleware/summarization.py: _is_context_overflow (tests/test_errors.py
# holds this list to the installed one)
OVERFLOW_PHRASES = (
    "context_length_exceeded",
    "contextwindowexceedederror",
    "maximum context length",
    "exceeds the context window",
    "exceeds the available context size",
    "context window exceeded",
    "context limit exceeded",
    "input tokens exceed the configured limit",
    "prompt is too long",
)
_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
KEY_VARIABLES = {"anthropic": "ANTHROPIC_API_KEY", "google_genai": "GOOGLE_API_KEY",
                 "openai": "OPENAI_API_KEY"}
"""The environment variable each provider's key is read from (``labkit.model.providers`` too)."""


def _chain(error: BaseException):
    """``error`` and the errors that caused it, outermost first."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def status_of(error: BaseException) -> int | None:
    """The HTTP error status (400 or more) a provider answered with, if the error carries one (a
    reply that failed to parse carries its 200: not an error status)."""
    for e in _chain(error):
        status = getattr(e, "status_code", None) or getattr(getattr(e, "response", None), "status_code", None)
        if isinstance(status, int) and status >= 400:
            return status
    return None


def is_overflow(error: BaseException) -> bool:
    """Is ``error`` a provider saying the request is above the window? As deepagents decides it:
    a ``ContextOverflowError``, or status 400 / 413 / 422 with one of :data:`OVERFLOW_PHRASES` in
    its text. Notebook 11."""
    if isinstance(error, ContextOverflowError):
        return True
    if getattr(error, "status_code", None) not in OVERFLOW_STATUS:  # the error's own, as deepagents reads it
        return False
    text = str(error).lower()
    return any(phrase in text for phrase in OVERFLOW_PHRASES)


def provider_message(error: BaseException) -> str:
    """The provider's own words: the ``message`` of its JSON error body when there is one, else
    the error's text (the root cause's, for a network error with no text of its own)."""
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if isinstance(message, str) and message.strip():
            return " ".join(message.split())
    for e in _chain(error):
        text = " ".join(str(e).split())
        if text and text not in ("Connection error.", "Request timed out."):
            return text
    return type(error).__name__


def retryable(error: BaseException) -> bool:
    """Is sending the same request again worth it: a rate limit, a server error, a connection
    reset or a timeout (langchain's ``is_retryable`` classes, or the status) — not a refused
    connection, a bad key or an overflow."""
    if is_overflow(error) or _refused_connection(error):
        return False
    if getattr(error, "is_retryable", False):
        return True
    status = status_of(error)
    if status is not None:
        return status in _RETRY_STATUS
    return any(_kind(e) in ("reset", "timeout") for e in _chain(error))


def retry_after(error: BaseException, default: float) -> float:
    """Seconds to wait before sending again: the provider's ``Retry-After`` (or ``retry-after-ms``)
    header when it gave one, else ``default``."""
    headers = getattr(getattr(error, "response", None), "headers", None) or {}
    try:
        if headers.get("retry-after-ms"):
            return float(headers["retry-after-ms"]) / 1000
        if headers.get("retry-after"):
            return float(headers["retry-after"])
    except (TypeError, ValueError):  # an HTTP date: take the default
        pass
    return default


def _kind(error: BaseException) -> str | None:
    """"refused" (nothing reached the provider: the client could not connect), "reset" or
    "timeout" for a network error (by its class, so no import of httpx, openai or anthropic is
    needed), else None."""
    name = type(error).__name__
    text = str(error).lower()
    if name == "ConnectError" or isinstance(error, ConnectionRefusedError):  # the client's own, never
        return "refused"                                                     # a message that says so
    if "Timeout" in name or isinstance(error, TimeoutError):
        return "timeout"
    if name in ("RemoteProtocolError", "ReadError", "WriteError") or isinstance(error, ConnectionError) \
            or "reset by peer" in text or "disconnected" in text:
        return "reset"
    return None


def _refused_connection(error: BaseException) -> bool:
    return any(_kind(e) == "refused" for e in _chain(error))


def kind(error: BaseException) -> str:
    """The kind of error in a few words, e.g. "rate limited (429)" or "connection reset"."""
    status = status_of(error)
    names = {401: "authentication failed", 403: "permission denied", 404: "not found",
             429: "rate limited"}
    if is_overflow(error):
        return "context overflow"
    if status is not None:
        return f"{names.get(status, 'server error' if status >= 500 else 'request refused')} ({status})"
    kinds = {_kind(e) for e in _chain(error)}
    words = {"refused": "connection refused", "timeout": "timeout", "reset": "connection reset"}
    return next((w for k, w in words.items() if k in kinds), type(error).__name__)


def _where(model: Any) -> tuple[str, str | None, str | None]:
    """(provider, the key's environment variable, base URL) of ``model``, as far as it says."""
    try:
        provider = model._get_ls_params().get("ls_provider") or ""
    except Exception:
        provider = ""
    url = getattr(model, "openai_api_base", None) or getattr(model, "base_url", None) \
        or getattr(model, "anthropic_api_url", None)
    return provider, KEY_VARIABLES.get(provider), str(url) if url else None


def explain(error: BaseException, model: Any = None, *, advice: bool = True) -> str:
    """One line: what kind of error, the provider's message, and what to do about it (without it,
    ``advice=False``: a retry's line). Every "On your model" section prints it instead of a
    traceback. Notebook 01.

    Example:
        >>> explain(ConnectionRefusedError("[Errno 111] Connection refused"))[:58]
        'connection refused: [Errno 111] Connection refused — noth'
    """
    provider, key, url = _where(model)
    message, status = provider_message(error), status_of(error)
    at = f" at {url}" if url else ""
    name = getattr(model, "model_name", None) or getattr(model, "model", None) \
        or os.environ.get("LABKIT_MODEL")
    if type(error).__name__ == "BudgetExceeded":
        return str(error)
    if not advice:
        return f"{kind(error)}: {message}"
    if is_overflow(error):
        return (f"context overflow: {message} — the request was above the model's window: set "
                "LABKIT_WINDOW to its real window so that compaction fires first")
    if status == 401:
        return (f"authentication failed (401): {message} — the provider refused the key: check "
                f"{key or 'the API key variable'}" + (f" (it is sent to {url}: a key for another "
                "service is refused there)" if url else "") + ", then restart the kernel")
    if status == 403:
        return (f"permission denied (403): {message} — the key works but may not use this model "
                "or endpoint: check your plan or the organisation the key belongs to")
    if status == 404:
        return (f"not found (404): {message} — {url or 'the provider'} does not know the model "
                f"{name!r}: check the name in LABKIT_MODEL (provider:model), or LABKIT_BASE_URL")
    if status == 429:
        return (f"rate limited (429): {message} — wait a minute and run the cell again, lower the "
                "parallel calls (fewer subagents at once), or raise your plan's rate limit")
    if status is not None and status >= 500:
        return (f"server error ({status}): {message} — the provider failed, not your request: "
                "run the cell again later")
    if status is not None:
        return f"request refused ({status}): {message} — the provider rejected the request as sent"
    kinds = {_kind(e) for e in _chain(error)}
    if "refused" in kinds:
        fix = ("start the Ollama server with `ollama serve`" if provider == "ollama"
               else "check LABKIT_BASE_URL, or start the server")
        return f"connection refused: {message} — nothing answers at the model's address{at}: {fix}"
    if "timeout" in kinds:
        return (f"timeout: {message} — the model took too long to answer{at}: run the cell again; "
                "a slow local model may need a smaller experiment")
    if "reset" in kinds:
        return (f"connection reset: {message} — the connection{at} was cut mid-request: run the "
                "cell again; if it keeps happening, check a proxy or LABKIT_BASE_URL")
    return f"{type(error).__name__}: {message}"
