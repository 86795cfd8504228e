"""Claims of the README and CHANGELOG that no other test held: each fails if its claim stops being true."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from langchain.agents.middleware import ModelRequest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from labkit.model import LabModel
from labkit.offload import OffloadMiddleware
from labkit.summarize import SummarizeMiddleware

ROOT = Path(__file__).resolve().parents[1]
MAKE = shutil.which("make")


def _as_typed() -> dict[str, str]:
    """The environment of a make typed at a prompt: under `make test` the outer make's flags would
    reach it (its `-n`, its "Entering directory" lines)."""
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}


# --- README, quick start: what `make lab` adds to the server's command line ----------------------

def _lab_command(tmp_path: Path, *, uid: str, display: str) -> list[str]:
    """Run make lab's own recipe (from `make -n`) with `jupyter lab` replaced by a printout of its options."""
    outer = _as_typed()
    plan = subprocess.run([MAKE, "--no-print-directory", "-n", "-B", "lab", "LAB_ARGS=--port=9999"],
                          cwd=ROOT, env=outer, capture_output=True, text=True, check=True).stdout
    recipe = plan[plan.rindex('flags="--ip='):]
    recipe, n = re.subn(r"exec \S+/bin/jupyter lab notebooks/", "printf '%s\\n'", recipe)
    assert n == 1, recipe
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    for name, answer in (("id", uid), ("uname", "Linux")):
        (fake / name).write_text(f"#!/bin/sh\necho {answer}\n")
        (fake / name).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update({"PATH": f"{fake}{os.pathsep}{env['PATH']}", **({"DISPLAY": display} if display else {})})
    out = subprocess.run(["sh", "-c", recipe], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True).stdout
    return out.splitlines()


@pytest.mark.skipif(MAKE is None, reason="needs make")
def test_make_lab_skips_the_browser_without_a_display_adds_allow_root_as_root_and_passes_lab_args(tmp_path):
    headless_root = _lab_command(tmp_path, uid="0", display="")
    assert "--no-browser" in headless_root, "no display: the server must not try to open a browser"
    assert "--allow-root" in headless_root, "as root, make lab adds --allow-root"
    assert headless_root[-1] == "--port=9999", "LAB_ARGS reach jupyter lab, last"
    desktop_user = _lab_command(tmp_path, uid="1000", display=":0")
    assert "--no-browser" not in desktop_user, "with a display, JupyterLab opens the browser"
    assert "--allow-root" not in desktop_user, "not root: no --allow-root"


# --- CHANGELOG: "offload and summarize hand a request on unchanged when they change nothing" -----

def _small_request() -> ModelRequest:
    messages = [HumanMessage("hi", id="h1"),
                AIMessage("", id="a1", tool_calls=[{"name": "t", "args": {}, "id": "c1"}]),
                ToolMessage("a small result", tool_call_id="c1", id="t1")]
    return ModelRequest(model=LabModel(), messages=list(messages), state={"messages": list(messages)})


@pytest.mark.parametrize("make", [lambda: OffloadMiddleware(), lambda: SummarizeMiddleware(LabModel())],
                         ids=["offload", "summarize"])
def test_a_middleware_that_changes_nothing_hands_the_request_on_unchanged(make):
    request, seen = _small_request(), []
    make().wrap_model_call(request, lambda r: seen.append(r) or AIMessage("ok"))
    assert seen == [request] and seen[0] is request, "nothing to offload or fold: the very request goes on"


# --- README, quick start: what `make clean` removes, and what it keeps -----------------------------

@pytest.mark.skipif(MAKE is None, reason="needs make")
def test_make_clean_removes_the_environment_the_caches_and_the_book_and_keeps_the_course(tmp_path):
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    made = [".tools/uv", ".venv/bin/python", ".pytest_cache/v", ".hypothesis/x", ".ruff_cache/x",
            "build/book/index.html", "labkit/__pycache__/x.pyc"]
    kept = ["notebooks/01_x.ipynb", "labkit/x.py", "README.md"]
    for name in made + kept:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    outer = _as_typed()
    subprocess.run([MAKE, "--no-print-directory", "clean"], cwd=tmp_path, env=outer, capture_output=True,
                   check=True)
    assert [n for n in made if (tmp_path / n).exists()] == [], "make clean removes what setup and tests made"
    assert [n for n in kept if not (tmp_path / n).exists()] == [], "make clean keeps the course itself"


# --- README, quick start: later runs "re-sync only when uv.lock or pyproject.toml changes" ---------

@pytest.mark.skipif(MAKE is None, reason="needs make")
@pytest.mark.parametrize("newer", [None, "uv.lock", "pyproject.toml"])
def test_lab_test_and_bench_sync_the_environment_only_when_the_lock_or_the_project_changed(tmp_path, newer):
    for name in ("Makefile", "uv.lock", "pyproject.toml", "scripts/jupyterlab_overrides.json"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    uv_version = re.search(r"^UV_VERSION := (\S+)", (ROOT / "Makefile").read_text(), re.M).group(1)
    stamps = [tmp_path / ".tools" / f".uv-{uv_version}", tmp_path / ".venv" / ".labkit-synced"]
    for stamp in stamps:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text("")
    os.utime(tmp_path / "uv.lock", (1_000_000, 1_000_000))
    os.utime(tmp_path / "pyproject.toml", (1_000_000, 1_000_000))
    os.utime(stamps[1], (2_000_000, 2_000_000))
    if newer:
        os.utime(tmp_path / newer, (3_000_000, 3_000_000))
    outer = _as_typed()
    for goal in ("lab", "test", "bench"):
        plan = subprocess.run([MAKE, "--no-print-directory", "-n", goal], cwd=tmp_path, env=outer,
                              capture_output=True, text=True, check=True).stdout
        synced = "sync --frozen" in plan
        assert synced == bool(newer), f"make {goal} syncs .venv only after uv.lock or pyproject.toml changed"
