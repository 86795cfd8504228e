"""Where a learner stands, and the room with them: every check of an exercise, kept on this machine.

``Exercise.check`` appends a line per check to :func:`progress_file` — JSON Lines: the question,
its verdict, the time, the user (``$JUPYTERHUB_USER`` on a hub) — ``$LABKIT_PROGRESS``, else
``.labkit-progress.jsonl`` in the folder the notebook runs in (beside the notebooks; JupyterLab
hides dot files). Nothing is sent anywhere. :func:`progress` is the learner's table across the
sixteen notebooks; :func:`collect` an instructor's, one row per user from the files of a hub's
users, and :func:`to_csv` writes it for a spreadsheet. A line is appended whole in one write, so
two kernels checking at once lose neither.
"""

from __future__ import annotations

import csv
import datetime
import getpass
import glob
import importlib
import json
import os
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from labkit.tables import Table, table

__all__ = ["collect", "progress", "progress_file", "questions", "record", "to_csv"]

FILE_NAME = ".labkit-progress.jsonl"
CORRECT, TRIED, UNTRIED, UNSEEN = "correct", "tried", "not attempted", "not started"


def progress_file() -> Path:
    """Where checks are kept: ``$LABKIT_PROGRESS``, else ``.labkit-progress.jsonl`` here."""
    return Path(os.environ.get("LABKIT_PROGRESS") or Path.cwd() / FILE_NAME)


@cache
def _course() -> dict[int, str]:
    """Every question of the course by the identity of its ``Exercise``: ``nb01.q1`` … in notebook
    order, each module's names ``q1``, ``q2`` … (imported once; ``labkit.exercises.core`` imports
    this module, so it is not imported back)."""
    found = {}
    for n in range(1, 17):
        module = importlib.import_module(f"labkit.exercises.nb{n:02d}")
        found |= {id(ex): f"nb{n:02d}.{q}" for q, ex in vars(module).items()
                  if re.fullmatch(r"q\d+", q) and callable(getattr(ex, "check", None))}
    return found


def questions() -> list[str]:
    """Every question of the course, ``nb01.q1`` … in notebook order."""
    return list(_course().values())


def _user() -> str:
    try:
        return os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
    except (KeyError, OSError):  # no user name in a container
        return "unknown"


def record(exercise, status: str) -> str | None:
    """Append one check (``CORRECT``, ``TRIED`` or ``UNTRIED``) to the progress file; ``None``, or
    why it could not be kept."""
    name = _course().get(id(exercise))
    if name is None:
        return None  # an exercise of your own, not one of the course's
    line = json.dumps({"question": name, "status": status, "user": _user(),
                       "at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")})
    try:
        fd = os.open(progress_file(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode("utf-8"))
        finally:
            os.close(fd)
    except OSError as error:
        return f"progress not kept ({error.strerror or error}: {progress_file()})"
    return None


def _read(path: Path) -> list[dict]:
    rows = []
    for text in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(text)
        except ValueError:
            continue  # a line cut short by a full disk: the others still count
        if isinstance(row, dict) and {"question", "status"} <= row.keys():
            rows.append(row)
    return rows


def _standing(rows: list[dict]) -> dict[str, dict]:
    """Per question: its best status so far, how many answers were checked, when it was solved."""
    rank = {UNSEEN: 0, UNTRIED: 1, TRIED: 2, CORRECT: 3}
    out: dict[str, dict] = {}
    for row in rows:
        now = out.setdefault(row["question"], {"status": UNSEEN, "answers": 0, "solved": ""})
        if row["status"] in (TRIED, CORRECT):
            now["answers"] += 1
        if rank.get(row["status"], 0) > rank[now["status"]]:
            now["status"] = row["status"]
            now["solved"] = row.get("at", "") if row["status"] == CORRECT else now["solved"]
    return out


def progress(path: str | os.PathLike | None = None) -> Table:
    """A learner's table: each question of the sixteen notebooks, its status (correct, tried,
    not attempted — the notebook was run — or not started) and the answers checked."""
    path = Path(path) if path is not None else progress_file()
    standing = _standing(_read(path)) if path.is_file() else {}
    return table([{"question": q, "status": standing.get(q, {}).get("status", UNSEEN),
                   "answers checked": standing.get(q, {}).get("answers", 0),
                   "solved at": standing.get(q, {}).get("solved", "")} for q in questions()])


def collect(paths: Iterable[str | os.PathLike] | str) -> Table:
    """An instructor's table: one row per user found in ``paths`` (files, or glob patterns such
    as ``/home/*/labkit/notebooks/.labkit-progress.jsonl``), a column per question with its
    status, and how many are correct. A file that cannot be read is a row saying why."""
    patterns = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    files = sorted({Path(f) for p in patterns for f in (glob.glob(str(p)) or [str(p)])})
    names, by_user, errors = questions(), {}, []
    for f in files:
        try:
            rows = _read(f)
        except (OSError, UnicodeDecodeError) as error:
            errors.append({"user": f"(unreadable: {f})", "correct": str(error)})
            continue
        for row in rows:
            by_user.setdefault(row.get("user") or f.parent.as_posix(), []).append(row)
    out = []
    for user, rows in sorted(by_user.items()):
        standing = _standing(rows)
        marks = {q: standing.get(q, {}).get("status", UNSEEN) for q in names}
        solved = sum(s == CORRECT for s in marks.values())
        out.append({"user": user, **marks, "correct": f"{solved}/{len(names)}"})
    return table(out + errors, columns=["user", *names, "correct"])


def to_csv(rows: Table, path: str | os.PathLike) -> Path:
    """Write a table (``collect``'s) as CSV, for a spreadsheet; returns the path."""
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=rows.columns)
        writer.writeheader()
        writer.writerows({c: r.get(c, "") for c in rows.columns} for r in rows.rows)
    return path
