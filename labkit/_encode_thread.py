"""Speed for labkit.tokens: long BPE counts run on one long-lived thread that owns the encoder.

Used by: labkit.tokens (``encoding`` claims each table it loads; ``TokenCounter.text`` counts
through :func:`count`). tiktoken's regex keeps its scratch space in a pool with a fast path for
one thread: the first that encoded with it. Every other thread takes the slow path on each match —
measured 1.3-1.8x the CPU for the same texts, however long-lived the thread (``bench/README.md``,
"Overhead"). langgraph runs each tool call in a fresh worker thread, so a tool result was counted
on the slow path. A table labkit loads is first used here, and each count is sent here (the asking
thread waits): one owner whichever thread asks. No count changes. A short text (under ``HOP_CHARS``),
or any text while this thread is busy (parallel subagents), after a fork or at shutdown, is counted
in the asking thread: sending it costs ~30 µs, more than the slow path adds below ~1,500 characters.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["CLAIM_TEXT", "HOP_CHARS", "claim", "count", "count_many"]

HOP_CHARS = 1_500  # shorter texts are counted where they are asked for

_CLAIMED: dict[int, Any] = {}  # id(encoding) -> encoding, first used by the counting thread
_STATE: dict[str, Any] = {"executor": None, "ident": None}
_LOCK = threading.Lock()  # guards _STATE
_FREE = threading.Semaphore(1)  # one count waits on the thread at a time; others run in place


def _encode_len(enc: Any, text: str) -> int:
    """The count itself: special-token text counts as text (``disallowed_special=()``)."""
    return len(enc.encode(text, disallowed_special=()))


def _remember_ident() -> None:
    _STATE["ident"] = threading.get_ident()


def _executor() -> ThreadPoolExecutor:
    with _LOCK:
        if _STATE["executor"] is None:
            _STATE["executor"] = ThreadPoolExecutor(1, thread_name_prefix="labkit-count",
                                                    initializer=_remember_ident)
        return _STATE["executor"]


def _hop(fn, *args):
    """``fn(*args)`` on the counting thread; the asking thread waits (``bench_overhead.py``
    wraps this to charge the counting thread's CPU to the code that asked)."""
    return _executor().submit(fn, *args).result()


# Every alternative of the tables' split patterns matches somewhere in it (tests/test_encode_thread.py):
# the pattern is several regexes inside, each with a pool of its own, owned by the first thread that
# runs it — a claim with a plain word left the others to the main thread (measured: 25% more CPU).
CLAIM_TEXT = "The CAT's ABCs we'll 'D 中文 Été 123 4567 -- !?\n\n/ \r\n  \t x  \n   y  <|endoftext|>   "


def claim(enc: Any) -> None:
    """Make the counting thread the first user of ``enc`` (a table just loaded, not used yet), so
    its counts take the regex's fast path; :func:`count` then sends its counts there."""
    try:
        _hop(_encode_len, enc, CLAIM_TEXT)
    except RuntimeError:  # interpreter shutting down: counts stay in the asking thread
        return
    _CLAIMED[id(enc)] = enc  # held: its id stays its own


def count(enc: Any, text: str) -> int:
    """BPE tokens of ``text``: on the counting thread when it owns ``enc``, is free and the text is
    long enough to be worth sending, else here."""
    return count_many(enc, [text])[0]


def _encode_lens(enc: Any, texts: list[str]) -> list[int]:
    return [_encode_len(enc, text) for text in texts]


def count_many(enc: Any, texts: list[str]) -> list[int]:
    """BPE tokens of each of ``texts``, in one hop to the counting thread when it owns ``enc``, is
    free and their characters together are worth sending (a long tool result; a replay's new
    summary lines, short each, many per move), else here."""
    if sum(map(len, texts)) < HOP_CHARS or id(enc) not in _CLAIMED \
            or threading.get_ident() == _STATE["ident"] or not _FREE.acquire(blocking=False):
        return _encode_lens(enc, texts)
    try:
        return _hop(_encode_lens, enc, texts)
    except RuntimeError:  # shut down meanwhile
        return _encode_lens(enc, texts)
    finally:
        _FREE.release()


def _forget() -> None:
    """In a forked child the thread is gone, and no new thread owns the pool: count in place."""
    global _FREE, _LOCK  # either may have been held by a thread that the child does not have
    _CLAIMED.clear()
    _STATE.update(executor=None, ident=None)
    _FREE, _LOCK = threading.Semaphore(1), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget)
