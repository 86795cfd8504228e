"""labkit as a library: the built wheel installs into a clean venv and runs the scenario there.

`uv build --wheel`, then a fresh `uv venv` gets labkit-context's runtime dependencies at uv.lock's
versions (`uv sync --frozen --no-dev --no-install-project`, no extras) and the wheel itself; `uv pip
check` then holds the wheel's own requirements against them. Everything comes from uv's cache
(`--offline`), which `make setup` filled: no network. About 15 s of CPU, so it is part of
`make test` (marker `wheel`). The same wheel checked here: the data set inside it, the LICENSE, the metadata.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from labkit import LabModel, scenario

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
UV = next((str(p) for p in (ROOT / ".tools/bin/uv", shutil.which("uv")) if p and Path(p).is_file()), None)
CACHE_MISS = "Network connectivity is disabled"
pytestmark = pytest.mark.wheel  # `make test PYTEST_ARGS="-m 'not wheel'"` leaves it out

SCRIPT = """
import importlib.util, json, labkit
from labkit import LabModel, scenario
run = scenario.run(LabModel(window=1_000_000))
try:
    from labkit import plots
    extra = "imported"
except ModuleNotFoundError as missing:
    extra = str(missing)
print(json.dumps({"versions": callable(labkit.versions.compare), "extra": extra,
    "restore": labkit.versions.RESTORE,
    "file": labkit.__file__, "version": labkit.__version__, "data": str(scenario.data_dir()),
    "score": str(run.score), "peak": run.peak, "messages": len(run.messages),
    "absent": [m for m in ("plotly", "ipywidgets", "jupyterlab", "pytest")
               if importlib.util.find_spec(m) is None],
}))
"""


def uv(*args: str, cwd: Path, **env: str) -> str:
    """Run uv offline (never a Python download); skip when uv's cache lacks a locked wheel."""
    base = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "LABKIT_DATA")}
    offline = {"UV_OFFLINE": "1", "UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1"}
    out = subprocess.run([UV, *args], cwd=cwd, capture_output=True, text=True, env=base | offline | env)
    if out.returncode and CACHE_MISS in out.stderr:
        pytest.skip(f"uv's cache lacks a locked package (run `make setup`): {out.stderr.strip()[-300:]}")
    assert out.returncode == 0, f"uv {' '.join(args)} failed:\n{out.stderr}"
    return out.stdout + out.stderr


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    if UV is None:
        pytest.skip("no uv: run `make setup` (it puts uv in .tools/)")
    dist = tmp_path_factory.mktemp("dist")
    uv("build", "--wheel", "--out-dir", str(dist), str(ROOT), cwd=dist)
    (built,) = dist.glob("*.whl")
    return built


def test_the_wheel_carries_the_data_set_the_license_and_the_ranges(wheel):
    assert wheel.name.startswith(f"labkit_context-{PROJECT['version']}-"), wheel.name
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = z.read(meta).decode()
    data = {p.relative_to(ROOT / "data").as_posix() for p in (ROOT / "data").rglob("*") if p.is_file()}
    data = {n for n in data if not n.startswith("state/")}  # a learner's notebook-13 state, if any
    packed = {n.removeprefix("labkit/_data/") for n in names if n.startswith("labkit/_data/")}
    assert packed == data, f"data/ and the wheel's labkit/_data differ: {sorted(packed ^ data)}"
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), "the LICENSE file rides along"
    assert "Name: labkit-context" in metadata and "License-Expression: MIT" in metadata
    requires = {Requirement(line.removeprefix("Requires-Dist: ")) for line in metadata.splitlines()
                if line.startswith("Requires-Dist: ") and "extra ==" not in line}
    assert {str(r) for r in requires} == {str(Requirement(r)) for r in PROJECT["dependencies"]}
    pinned = [str(r) for r in requires if any(s.operator == "==" for s in r.specifier)]
    assert not pinned, f"runtime dependencies are ranges, not exact pins: {pinned}"
    assert not any(n.startswith(("tests/", "notebooks/")) for n in names), "the wheel is the package only"


def test_the_built_wheel_installs_alone_and_runs_the_scenario(wheel, tmp_path):
    venv = tmp_path / "venv"
    uv("venv", str(venv), "--python", sys.executable, cwd=tmp_path)
    # the runtime dependencies only (no extras, no dev group), at uv.lock's versions
    uv("sync", "--frozen", "--no-dev", "--no-install-project", cwd=ROOT, UV_PROJECT_ENVIRONMENT=str(venv))
    uv("pip", "install", "--no-deps", "--python", str(venv), str(wheel), cwd=tmp_path)
    assert "All installed packages are compatible" in uv("pip", "check", "--python", str(venv), cwd=tmp_path)
    python = venv / "bin" / "python"
    out = subprocess.run([str(python), "-c", SCRIPT], cwd=tmp_path, capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LABKIT_DATA")})
    assert out.returncode == 0, out.stderr
    there = json.loads(out.stdout.strip().splitlines()[-1])
    site = str(venv.resolve())
    assert there["file"].startswith(site), f"imported labkit from {there['file']}, not the venv"
    assert there["data"].startswith(site) and there["data"].endswith("labkit/_data"), there["data"]
    assert there["version"] == PROJECT["version"]
    assert there["absent"] == ["plotly", "ipywidgets", "jupyterlab", "pytest"], (
        f"the library alone pulls no notebook or test tools: {there['absent']}")
    assert there["versions"], "labkit.versions works after import labkit"
    assert there["restore"].startswith("run `pip install deepagents=="), there["restore"]  # no make here
    assert "pip install 'labkit-context[course]'" in there["extra"], there["extra"]
    run = scenario.run(LabModel(window=1_000_000))  # the same run from this checkout
    assert (there["score"], there["peak"], there["messages"]) == (str(run.score), run.peak, len(run.messages))
