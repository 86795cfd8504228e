"""labkit.versions: the tested set is uv.lock's, a difference is named with the command that
restores it, and that command really restores (make setup syncs even when the stamp is fresh)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from labkit import versions

ROOT = Path(__file__).resolve().parent.parent


def test_tested_versions_are_uv_locks():
    locked = {p["name"]: p["version"] for p in tomllib.loads((ROOT / "uv.lock").read_text())["package"]
              if p["name"] in versions.TESTED}
    assert versions.TESTED == locked, "labkit/versions.py's TESTED must be uv.lock's versions: copy them over"


def test_requirements_lock_pins_the_tested_versions():
    lines = (ROOT / "requirements.lock").read_text().splitlines()
    missing = [f"{p}=={v}" for p, v in versions.TESTED.items() if f"{p}=={v}" not in lines]
    assert not missing, f"`pip install -r requirements.lock` would not restore {missing}"


def test_a_matching_set_has_no_difference_and_one_calm_line():
    found = versions.compare(dict(versions.TESTED))
    assert found and found.differences == ()
    assert found.message.startswith("Tested versions: all match")
    assert "\n" not in found.message and "make setup" not in found.message


def test_the_installed_set_is_the_tested_one():
    """The suite runs in the environment uv.lock builds: the notebook's first line is the calm one."""
    assert versions.compare().message.startswith("Tested versions: all match"), versions.compare().message
    assert versions.compare() is versions.compare(), "computed once per process"


def test_an_older_deepagents_is_named_with_both_versions_and_the_command():
    found = versions.compare({**versions.TESTED, "deepagents": "0.7.20"})
    assert not found
    assert found.differences == (versions.Difference("deepagents", versions.TESTED["deepagents"], "0.7.20"),)
    assert "deepagents 0.7.20 (tested: 0.7.32)" in found.message
    assert "make setup" in found.message and "pip install -r requirements.lock" in found.message
    assert "\n" not in found.message


def test_a_missing_package_is_named():
    found = versions.compare({**versions.TESTED, "langgraph": None})
    assert "langgraph not installed (tested: 1.2.24)" in found.message


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_setup_syncs_even_when_the_environment_looks_fresh(tmp_path):
    """After `pip install -U deepagents` in .venv the stamp is still newer than uv.lock; `make setup`
    must sync anyway, or the command the check names would restore nothing."""
    tools, venv = tmp_path / "tools", tmp_path / "venv"
    venv.mkdir()
    tools.mkdir()
    make = ["make", "-n", "-C", str(ROOT), f"TOOLS={tools}", f"VENV={venv}"]
    uv_version = re.search(r"^UV_VERSION := (\S+)$", (ROOT / "Makefile").read_text(), re.M)[1]
    for stamp in (tools / f".uv-{uv_version}", venv / ".labkit-synced"):
        stamp.touch()
        os.utime(stamp, (4e9, 4e9))  # newer than uv.lock and pyproject.toml
    assert "sync --frozen" not in subprocess.run([*make, "lab"], capture_output=True, text=True).stdout
    out = subprocess.run([*make, "setup"], capture_output=True, text=True, check=True).stdout
    assert "sync --frozen" in out, out


def test_notebook_01s_first_code_cell_prints_the_comparison():
    """The README and issue 13 promise it there, where a learner starts."""
    notebook = ROOT / "notebooks" / "01_why_context_explodes.ipynb"
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    first = "".join(next(c for c in cells if c["cell_type"] == "code")["source"])
    assert "versions.compare()" in first and "print(" in first


def test_the_restore_advice_fits_the_install(tmp_path):
    """A checkout (uv.lock and the Makefile above the package) is told `make setup`; anywhere else
    (a wheel in site-packages) the pip command with the tested versions."""
    from labkit import versions
    assert versions.restore_advice().startswith("run `make setup` in the course folder")  # this checkout
    assert versions.restore_advice(tmp_path) == "run `pip install " + " ".join(
        f"{p}=={v}" for p, v in versions.TESTED.items()) + "`"
    (tmp_path / "uv.lock").write_text("")
    (tmp_path / "Makefile").write_text("")
    assert "make setup" in versions.restore_advice(tmp_path)
