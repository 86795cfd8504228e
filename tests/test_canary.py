"""make canary (scripts/canary.py), without the network: it unpins every runtime dependency and only
those, it reports pytest's failures, and `make test` does not run it."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests.conftest import script

ROOT = Path(__file__).resolve().parent.parent
canary = script("canary")


def test_every_runtime_dependency_is_unpinned_and_nothing_else():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    lines = canary.overrides(pyproject)
    runtime = [re.match(r"[A-Za-z0-9._-]+", d)[0] for d in pyproject["project"]["dependencies"]]
    assert lines[:len(runtime)] == runtime, "each runtime dependency by its bare name: the newest release"
    assert {"deepagents", "langchain", "langchain-core", "langgraph"} <= set(lines)
    assert lines[len(runtime):] == pyproject["tool"]["uv"].get("override-dependencies", [])
    assert "pytest" not in lines and "nbval" not in lines, "the test tools keep their pins"


def test_the_report_lists_pytests_failures():
    failed = "FAILED notebooks/09_compaction_without_deletion.ipynb::Cell 17 - KeyError: 'created_at_index'"
    log = ("..F.\n=========================== short test summary info ============================\n"
           f"{failed}\n"
           "ERROR tests/test_x.py::test_y\n"
           "=========== 1 failed, 2 passed, 1 error in 3.21s ===========\n")
    text = canary.report("Not the versions …: deepagents 0.8.0 (tested: 0.7.32)", log, 1)
    assert "deepagents 0.8.0 (tested: 0.7.32)" in text
    assert "pytest (exit 1): 1 failed, 2 passed, 1 error in 3.21s" in text
    assert f"  {failed}" in text
    assert "  ERROR tests/test_x.py::test_y" in text
    assert "Nothing broke" not in text
    assert "Nothing broke" in canary.report("Tested versions: all match (…).", "5 passed in 1.0s\n", 0)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_canary_runs_the_script_and_make_test_does_not(tmp_path):
    make = ["make", "-n", "-C", str(ROOT), f"TOOLS={tmp_path}", f"VENV={tmp_path}"]
    assert "scripts/canary.py" in subprocess.run([*make, "canary"], capture_output=True, text=True).stdout
    assert "canary.py" not in subprocess.run([*make, "test"], capture_output=True, text=True).stdout
