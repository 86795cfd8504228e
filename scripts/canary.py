"""make canary: the test suite on the newest releases of labkit's runtime dependencies.

For maintainers, not part of `make test`; needs PyPI. In a throwaway directory under the system's
temp dir it makes a venv with uv, installs pyproject.toml's dependencies and extras *without*
uv.lock, every runtime dependency overridden to its bare name (so uv picks the newest release,
whatever pyproject pins), runs pytest there on this checkout, and reports what broke: the versions
that differ from the tested set (labkit.versions), the deepagents/langchain internals the
notebooks read that are gone (labkit.installed), and pytest's failures. The venv is deleted at
the end (--keep keeps it); the pytest log stays beside it. Exit status: pytest's.

    python scripts/canary.py --uv .tools/bin/uv --python python3 [--keep] [-- pytest options]

Standard library only: it runs from the Makefile's tools venv.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PYTEST = ["-q", "-n", "2", "--dist", "loadfile"]
NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
FAILED = re.compile(r"^(FAILED|ERROR) (.+?)(?: - (.*))?$")

# Run inside the canary venv: what differs from the tested set, and which probed internals are gone.
PROBE = """
from labkit import installed, versions
print(versions.compare().message)
gone = installed.missing()
print(f"Internals the notebooks read: {len(installed.FEATURES) - len(gone)} of {len(installed.FEATURES)} present.")
for feature in gone:
    print("  gone:", feature.changed())
"""


def overrides(pyproject: dict) -> list[str]:
    """uv override lines: each runtime dependency by bare name (newest release wins), then the
    project's own [tool.uv] override-dependencies (kept as they are)."""
    names = [NAME.match(dep)[1] for dep in pyproject["project"]["dependencies"]]
    return names + list(pyproject.get("tool", {}).get("uv", {}).get("override-dependencies", []))


def failures(log: str) -> list[str]:
    """pytest's FAILED/ERROR lines from its -ra summary, as ``test id - reason``."""
    found = []
    for line in log.splitlines():
        m = FAILED.match(line.strip())
        if m:
            found.append(f"{m[1]} {m[2]}" + (f" - {m[3]}" if m[3] else ""))
    return found


def report(probe: str, log: str, status: int) -> str:
    """The canary's closing summary: the probe's lines, then pytest's outcome and failures."""
    tail = next((line for line in reversed(log.splitlines()) if re.search(r"\b(passed|failed|error)", line)),
                "pytest printed no summary")
    lines = ["== canary: newest releases ==", probe.strip(), f"pytest (exit {status}): {tail.strip('= ')}"]
    lines += [f"  {f}" for f in failures(log)]
    if status == 0:
        lines.append("Nothing broke: the newest releases pass the suite.")
    return "\n".join(lines)


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kwargs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uv", default="uv")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--keep", action="store_true", help="keep the venv")
    parser.add_argument("pytest_args", nargs="*", help="pytest options (after --)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="labkit-canary-"))
    venv, python = work / "venv", work / "venv" / "bin" / "python"
    (work / "overrides.txt").write_text("\n".join(overrides(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8")))))
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never", "VIRTUAL_ENV": str(venv)}
    try:
        run([args.uv, "venv", "--quiet", "--python", args.python, str(venv)], env=env)
        run([args.uv, "pip", "install", "--quiet", "--python", str(python), "--upgrade", "--all-extras",
             "-r", "pyproject.toml", "--override", str(work / "overrides.txt")], cwd=ROOT, env=env)
        env["PYTHONPATH"] = str(ROOT)
        probe = subprocess.run([str(python), "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True)
        pytest = [str(python), "-m", "pytest", *(args.pytest_args or DEFAULT_PYTEST)]
        print("+", " ".join(pytest), flush=True)
        with open(work / "pytest.log", "w") as log:
            status = subprocess.run(pytest, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
        print(report(probe.stdout + probe.stderr[-2000:], (work / "pytest.log").read_text(), status))
        print(f"pytest's log: {work / 'pytest.log'}")
        return status
    finally:
        if not args.keep:
            shutil.rmtree(venv, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
