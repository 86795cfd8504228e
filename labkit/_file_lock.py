"""One writer at a time per file, whatever object reaches it: what keeps a check-then-write whole.

Used by: labkit.summarize.archive (a section's read, edit and write), labkit._offload_files (an
offloaded file's "is this name free?" and its write). In this process, a lock per file — the real
file behind a ``FilesystemBackend`` (however many backend objects point at its folder, through a
``CompositeBackend`` too), a store's key in its database (stores built per request on one
database share it), else the backend's; across processes, an exclusive ``flock`` on the folder of
a ``FilesystemBackend`` file or a SQLite store's file (without fcntl, on Windows: in-process only;
PostgreSQL stores: in-process only).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import weakref
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows: writes are serialized within a process only
    fcntl = None

__all__ = ["locked"]

_LOCKS: dict[tuple, threading.Lock] = {}  # one per file: read, edit, write as one
_LOCKS_GUARD = threading.Lock()


def _file_of(backend: Any, path: str) -> tuple[tuple, Path | None]:
    """What a write goes to, whatever object reaches it: a real file for a ``FilesystemBackend``
    (however many backend objects point at its folder, through a ``CompositeBackend`` too), a
    store's key, or else the backend."""
    route = getattr(backend, "_get_backend_and_key", None)
    if callable(route):  # deepagents' CompositeBackend: the backend the path is routed to
        try:
            inner, key = route(path)
            return _file_of(inner, key)
        except Exception:  # noqa: S110 - the write itself reports a path it refuses
            pass
    resolve = getattr(backend, "_resolve_path", None)
    if callable(resolve):
        try:
            real = Path(os.path.realpath(resolve(path)))
            return ("file", str(real)), real
        except Exception:  # noqa: S110 - a path it refuses fails again at the write, with its error
            pass
    if hasattr(backend, "_store"):  # a StoreBackend: its store, or the graph's when it has none
        try:
            store = backend._get_store()
        except Exception:
            store = None
        if store is not None:
            where, real = _database_of(store)
            return ("store", where, path), real
    return ("backend", id(backend), path), None


_DATABASES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # store -> (key, file)


def _database_of(store: Any) -> tuple[Any, Path | None]:
    """What a store keeps its items in: a SQLite file (its folder locked across processes too), a
    PostgreSQL database by its connection string, else the store object itself (in memory) — so
    stores built per request on one database share one lock."""
    try:
        return _DATABASES[store]
    except (KeyError, TypeError):
        pass
    found: tuple[Any, Path | None] = (id(store), None)
    conn = getattr(store, "conn", None)
    if isinstance(conn, sqlite3.Connection):
        try:
            with getattr(store, "lock", contextlib.nullcontext()):
                rows = conn.execute("PRAGMA database_list").fetchall()
            file = next((row[2] for row in rows if row[1] == "main"), "")
        except sqlite3.Error:
            file = ""
        if file:  # "" for an in-memory database
            real = Path(os.path.realpath(file))
            found = (("sqlite", str(real)), real)
    elif isinstance(dsn := getattr(getattr(conn, "info", None), "dsn", None)  # psycopg's connection
                    or getattr(conn, "conninfo", None), str):  # or psycopg_pool's pool
        found = (("postgres", dsn), None)
    try:
        _DATABASES[store] = found
    except TypeError:  # a store that cannot be weakly referenced is looked at each time
        pass
    return found


@contextlib.contextmanager
def locked(backend: Any, path: str):
    key, real = _file_of(backend, path)
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(key, threading.Lock())
    with lock, _folder_lock(real):
        yield


@contextlib.contextmanager
def _folder_lock(real: Path | None):
    """Across processes: an exclusive ``flock`` on the archive's folder (without fcntl: none)."""
    if real is None or fcntl is None:
        yield
        return
    real.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(real.parent, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:  # a folder that cannot be flocked (NFS emulates flock with fcntl locks,
            pass  # which a read-only open cannot take): this process's lock alone
        yield
    finally:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)  # before closing: a child forked meanwhile shares the fd
        except OSError:
            pass
        os.close(fd)


