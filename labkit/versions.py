"""The versions the course was tested with, and what differs from them here. Notebook 01.

deepagents ships often (12 releases in 24 days) and the notebooks read some of its internals, so a
learner on other versions should hear so before a cell fails. ``TESTED`` holds uv.lock's versions of
the four packages the lessons lean on (``tests/test_versions.py`` keeps it in step with uv.lock);
``compare()`` sets them beside what is installed and says, in one line, what differs and the
command that restores the tested set. It reads package metadata only: nothing is imported or installed.
What it leaves out: the other packages of the lock (their drift rarely changes a lesson) and
whether a newer version still works — ``make canary`` answers that for maintainers.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

__all__ = ["RESTORE", "TESTED", "Comparison", "Difference", "compare", "in_checkout", "restore_advice"]

TESTED: dict[str, str] = {
    "deepagents": "0.7.32",
    "langchain": "1.5.2",
    "langchain-core": "1.8.3",
    "langgraph": "1.2.24",
}


def in_checkout(root: Path | None = None) -> bool:
    """Whether labkit runs from a checkout of the course (``root``, the folder above the package,
    holds uv.lock and the Makefile), not from an installed wheel."""
    root = Path(__file__).resolve().parents[1] if root is None else root
    return (root / "uv.lock").is_file() and (root / "Makefile").is_file()


def restore_advice(root: Path | None = None) -> str:
    """The command that restores the tested versions where labkit is installed: in a checkout of
    the course ``make setup``; installed from the wheel, pip with the tested versions."""
    if in_checkout(root):
        return "run `make setup` in the course folder (or `pip install -r requirements.lock`)"
    return "run `pip install " + " ".join(f"{p}=={v}" for p, v in TESTED.items()) + "`"


RESTORE = restore_advice()


@dataclass(frozen=True)
class Difference:
    """One package whose installed version is not the tested one (``installed`` None: missing)."""

    package: str
    tested: str
    installed: str | None

    def __str__(self) -> str:
        return f"{self.package} {self.installed or 'not installed'} (tested: {self.tested})"


@dataclass(frozen=True)
class Comparison:
    """What ``compare()`` found: the differences (empty when all match) and one line saying so."""

    differences: tuple[Difference, ...]
    message: str

    def __bool__(self) -> bool:
        """True when every package is at its tested version."""
        return not self.differences

    def __str__(self) -> str:
        return self.message


def _installed_version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def compare(installed: dict[str, str | None] | None = None) -> Comparison:
    """Compare the installed versions (or ``installed``, a ``{package: version}`` to try) with
    ``TESTED``. Once per process for the real environment: the answer is computed once and reused.

    >>> compare({"deepagents": "0.7.20"}).message.split(";")[0]
    'Not the versions this course was tested with: deepagents 0.7.20 (tested: 0.7.32)'
    """
    if installed is None:
        return _compare_installed()
    found = [Difference(p, v, installed.get(p, v)) for p, v in TESTED.items()]
    differences = tuple(d for d in found if d.installed != d.tested)
    if not differences:
        return Comparison((), "Tested versions: all match (" +
                     ", ".join(f"{p} {v}" for p, v in TESTED.items()) + ").")
    return Comparison(differences, "Not the versions this course was tested with: " +
                 ", ".join(map(str, differences)) + f"; a cell may fail — to restore them, {RESTORE}.")


@cache
def _compare_installed() -> Comparison:
    return compare({p: _installed_version(p) for p in TESTED})
