"""``make reset``: put notebooks back as the course ships them (the last commit), keeping your edits.

A notebook whose cells you changed is first copied to ``.reset-backup/<time>/`` (ignored by git);
one that only differs by outputs — it was run — is reset without a copy, since nothing is lost.
The notebook is checked out of the last commit (``git checkout HEAD --``), so git's index records
the file as it is now and ``git status`` is clean: a save with outputs had left the index holding the
larger file's size, which git reads as a change, and ``git pull`` refused to update the notebook.
Reset a notebook while its tab is closed (or reload it afterwards: File ▸ Reload Notebook from
Disk), or JupyterLab's autosave writes the old version back.

Without notebook numbers, or with 13, it also moves ``data/state/`` (notebook 13's memory and
threads, SQLite files) to ``.reset-backup/<time>/state/``.

    python scripts/reset_notebooks.py          # every notebook, and data/state/
    python scripts/reset_notebooks.py 04 07    # notebooks 04 and 07
"""

from __future__ import annotations

import datetime
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbstrip  # noqa: E402  (a sibling script, not a package)


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                          text=True, encoding="utf-8").stdout


def tracked(root: Path, numbers: list[str]) -> list[str]:
    """The committed notebooks to reset: all of them, or those whose names start with
    ``numbers`` (two digits each: ``number_set``)."""
    names = _git(root, "ls-tree", "--name-only", "HEAD", "notebooks/").split("\n")
    names = [n for n in names if n.endswith(".ipynb") and n[len("notebooks/"):][:2].isdigit()]
    if numbers:
        names = [n for n in names if n[len("notebooks/"):][:2] in set(numbers)]
    return names


def reset(root: Path, numbers: list[str], stamp: str | None = None) -> list[str]:
    """Reset the notebooks; return one line per notebook changed, saying what happened."""
    stamp = stamp or datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    done, changed = [], []
    # what git lists as changed, in one call: a file back as committed can still be listed (git's
    # index holding a saved run's size), and then only a checkout mends it
    listed = {line[3:] for line in _git(root, "status", "--porcelain", "--", "notebooks/").splitlines()}
    for name in tracked(root, numbers):
        committed = _git(root, "show", f"HEAD:{name}")
        path = root / name
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == committed and name not in listed:
            continue
        if current is not None and nbstrip.clean(current) != committed:
            backup = root / ".reset-backup" / stamp / path.name
            backup.parent.mkdir(parents=True, exist_ok=True)
            backup.write_text(current, encoding="utf-8")
            done.append(f"reset {name} (your version: {backup.relative_to(root)})")
        else:
            done.append(f"reset {name}")
        changed.append(name)
    if changed:  # one checkout for them all: it rewrites the files and git's index
        _git(root, "checkout", "HEAD", "--", *changed)
    return done


def reset_state(root: Path, stamp: str | None = None) -> list[str]:
    """Move ``data/state/`` — what notebook 13 kept beyond the kernel: the agent's memory and its
    threads, in SQLite files — to ``.reset-backup/<time>/state/``, so the next run starts as the
    course does. Returns the line saying so, or nothing when there was none."""
    state = root / "data" / "state"
    if not state.is_dir() or not any(state.iterdir()):
        return []
    stamp = stamp or datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    backup = root / ".reset-backup" / stamp / "state"
    backup.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(state, backup)
    return [f"reset data/state/ (the agent's memory and threads; yours: {backup.relative_to(root)})"]


def number_set(argv: list[str]) -> list[str]:
    """The notebook numbers asked for, two digits each (``4`` is ``04``)."""
    return sorted({x.zfill(2) for x in argv})


def main(argv: list[str]) -> int:
    root = Path(__file__).resolve().parents[1]
    numbers, stamp = number_set(argv), datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    try:  # one stamp: a reset's copies go to one .reset-backup/<time>/ folder
        lines = reset(root, numbers, stamp) + (reset_state(root, stamp) if not numbers or "13" in numbers
                                               else [])
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"error: make reset needs a git clone of the course and git ({error})", file=sys.stderr)
        return 1
    print("\n".join(lines) if lines else "every notebook is as committed: nothing to reset")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
