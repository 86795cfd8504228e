"""A git "clean" filter for the notebooks: git sees a notebook as it is committed, without outputs.

JupyterLab saves a notebook with its outputs, execution counts, the kernel's language details and
widget state; this filter drops them before git compares or stores the file, so ``git diff`` of a
run notebook is empty and nothing of a run can be committed; ``post_save`` (JupyterLab's hook, set
by ``make lab``) then refreshes git's index so ``git status`` is clean and ``git pull`` updates the
notebook. What a learner types into a cell is kept: that is a real change (``make reset``).
Standard library only, so any Python 3 runs it, even after ``make clean``. Its output is
nbformat's own layout (``nbformat.write``), so every committed notebook passes through unchanged.

    python scripts/nbstrip.py < in.ipynb > out.ipynb     # the filter (git runs it)
    python scripts/nbstrip.py notebooks/04_*.ipynb        # strip files in place
`make setup` / `make lab` install it: ``git config filter.nbstrip.clean ...`` + ``.gitattributes``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# Cell metadata JupyterLab or VS Code writes while a notebook is used (the course's own keys,
# ``tags`` and ``jupyter.source_hidden``, stay).
VOLATILE_CELL_KEYS = ("execution", "ExecuteTime", "collapsed", "scrolled")
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def _lines(text):
    """A multiline string as nbformat stores it: a list of lines, each with its newline."""
    return text.splitlines(keepends=True) if isinstance(text, str) else text


def strip(nb: dict) -> dict:
    """The notebook as the course commits it: no outputs, no counts, no per-session metadata."""
    meta = nb.get("metadata", {})
    meta.pop("widgets", None)
    meta.pop("vscode", None)
    if "language_info" in meta:
        meta["language_info"] = {"name": meta["language_info"].get("name", "python")}
    if meta.get("kernelspec", {}).get("name") == KERNELSPEC["name"]:
        meta["kernelspec"] = dict(KERNELSPEC)
    for cell in nb.get("cells", []):
        cell["source"] = _lines(cell.get("source", ""))
        cm = cell.get("metadata", {})
        for key in VOLATILE_CELL_KEYS:
            cm.pop(key, None)
        jupyter = cm.get("jupyter")
        if isinstance(jupyter, dict):
            jupyter.pop("outputs_hidden", None)
            if not jupyter:
                cm.pop("jupyter")
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    return nb


def dumps(nb: dict) -> str:
    """nbformat.write's layout: sorted keys, one-space indent, UTF-8 as is, a final newline."""
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def clean(text: str) -> str:
    """The filter on one file's text; text that is not a notebook passes through unchanged."""
    try:
        nb = json.loads(text)
    except ValueError:
        return text
    if not isinstance(nb, dict) or "cells" not in nb:
        return text
    return dumps(strip(nb))


def _git(cwd: Path, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=True,
                          text=True, encoding="utf-8", timeout=30).stdout.strip()


def post_save(model=None, os_path=None, contents_manager=None, **kwargs) -> bool:
    """JupyterLab's post-save hook (scripts/jupyter_lab_config.py): after a save that changed only
    outputs, ``git add`` the notebook — git stores nothing new (the filter strips the outputs) but
    records the file's new size, without which ``git status`` lists the notebook and ``git pull``
    refuses to update it. A notebook whose cells were edited is left alone. Never raises.
    """
    if not model or model.get("type") != "notebook" or not os_path:
        return False
    path = Path(os_path)
    try:
        root = Path(_git(path.parent, "rev-parse", "--show-toplevel"))
        rel = path.resolve().relative_to(root.resolve()).as_posix()
        staged = _git(root, "ls-files", "--stage", "--", rel).split()
        if len(staged) < 2 or _git(root, "hash-object", "--path", rel, "--", rel) != staged[1]:
            return False  # not tracked, the filter not set up, or cells edited: a real change
        _git(root, "add", "--", rel)
        return True
    except (OSError, ValueError, subprocess.SubprocessError):
        return False


def main(paths: list[str]) -> int:
    if not paths:
        data = sys.stdin.buffer.read().decode("utf-8")
        sys.stdout.buffer.write(clean(data).encode("utf-8"))
        return 0
    for path in map(Path, paths):
        text = path.read_text(encoding="utf-8")
        cleaned = clean(text)
        if cleaned != text:
            path.write_text(cleaned, encoding="utf-8")
            print(f"stripped {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
