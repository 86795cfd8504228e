"""The install story stays consistent: one set of pins, two ways in, one test command.

uv.lock is the source of truth. requirements.lock (everything, for pip) and binder/requirements.txt
(the course without the test tools, for Binder and conda: binder/environment.yml, environment.yml)
are exported from it by `make lock`, the Makefile pins the uv that reads it, and .ci/run runs the
README's test command. Pure file reading: no network, no install (the built wheel is tests/test_wheel.py).
"""

from __future__ import annotations

import importlib.util
import os
import re
import tomllib
from pathlib import Path

import jsonschema
import pytest
import yaml
from nbval.plugin import get_sanitize_patterns
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
BINDER_REQS = ROOT / "binder" / "requirements.txt"
TEST_ONLY = {"pytest", "pytest-timeout", "pytest-xdist", "nbval", "hypothesis", "langchain-tests",
             "playwright", "ruff"}
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)\s*(?:;\s*(.+))?$")


def lock_versions() -> dict[str, set[str]]:
    """uv.lock's versions by package name (a package can be locked twice, split by markers)."""
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    versions: dict[str, set[str]] = {}
    for pkg in lock["package"]:
        if "version" in pkg:
            versions.setdefault(canonicalize_name(pkg["name"]), set()).add(pkg["version"])
    return versions


def exported_pins(text: str) -> list[tuple[str, str]]:
    """``(name, version)`` for every ``name==version [; marker]`` line of a requirements file."""
    pins = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = PIN.match(line)
        assert m, f"requirements.lock: not a plain pin: {line!r}"
        pins.append((canonicalize_name(m[1]), m[2]))
    return pins


def test_requirements_lock_has_exactly_uv_locks_pins():
    locked = lock_versions()
    project = canonicalize_name(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"])
    pins = exported_pins((ROOT / "requirements.lock").read_text())
    binder = exported_pins(BINDER_REQS.read_text())
    for name, exported in (("requirements.lock", pins), ("binder/requirements.txt", binder)):
        wrong = [f"{n}=={v} (uv.lock has {sorted(locked.get(n, []))})"
                 for n, v in exported if v not in locked.get(n, set())]
        assert not wrong, f"{name} disagrees with uv.lock; run `make lock`: " + ", ".join(wrong)
    missing = {n for n in locked if n != project} - {n for n, _ in pins + binder}
    assert not missing, f"in uv.lock but exported to neither file: {sorted(missing)}"


def export_commands() -> dict[str, str]:
    """The `uv export` command each exported file's header records, by output file."""
    commands = {}
    for path in (ROOT / "requirements.lock", BINDER_REQS):
        command = path.read_text().splitlines()[1].removeprefix("#").strip()
        commands[path.relative_to(ROOT).as_posix()] = command
    return commands


def test_exported_files_come_from_make_lock():
    recipe = (ROOT / "Makefile").read_text().split("\nlock:", 1)[1].split("\n\n", 1)[0]
    recipe = re.sub(r"\\\n\s*", "", recipe).replace("$(UV) ", "uv ")
    for path, command in export_commands().items():
        assert command.startswith("uv export --frozen") and command.endswith(f"--output-file {path}")
        assert command in recipe, f"{path} was exported by {command!r}, which `make lock` does not run"


def test_binder_installs_the_course_without_the_test_tools():
    names = {n for n, _ in exported_pins(BINDER_REQS.read_text())}
    assert not names & TEST_ONLY, f"binder/requirements.txt installs test tools: {sorted(names & TEST_ONLY)}"
    course = {"jupyterlab", "ipywidgets", "plotly", "ipykernel", "deepagents", "langchain"}
    assert course <= names, f"binder/requirements.txt lacks {sorted(course - names)}"
    assert TEST_ONLY <= {n for n, _ in exported_pins((ROOT / "requirements.lock").read_text())}, (
        "requirements.lock keeps the test tools' pins")


def test_binder_replaces_the_base_images_notebook():
    """repo2docker's base environment has notebook 7.4 (jupyterlab<4.5); the course's jupyterlab is
    4.6, so Binder must install a notebook 7.6 in the same step (it requires jupyterlab>=4.6.6,<4.7)."""
    pins = dict(exported_pins(BINDER_REQS.read_text()))
    assert pins["notebook"].startswith("7.6."), pins["notebook"]
    assert pins["jupyterlab"].startswith("4.6."), pins["jupyterlab"]
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]
    assert [canonicalize_name(Requirement(r).name) for r in groups["binder"]] == ["notebook"]
    assert "notebook" not in dict(exported_pins((ROOT / "requirements.lock").read_text())), (
        "notebook is Binder's only: .venv (make lab) does not get it")


def test_exported_pins_are_parsed_not_skipped():
    pins = exported_pins("# header\nnumpy==2.4.6 ; python_full_version < '3.12'\n    # via x\nA_b.c==1.0\n")
    assert pins == [("numpy", "2.4.6"), ("a-b-c", "1.0")]
    with pytest.raises(AssertionError, match="not a plain pin"):
        exported_pins("-e .\n")


def test_uv_lock_matches_pyproject_dependencies():
    """uv.lock records the requirements it was solved for; they must still be pyproject's."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    (me,) = [p for p in lock["package"] if p["name"] == project["name"]]

    def norm(req: Requirement, extra: str | None) -> tuple:
        return (canonicalize_name(req.name), req.specifier, extra)

    wanted = {norm(Requirement(r), None) for r in project["dependencies"]}
    for extra, reqs in project.get("optional-dependencies", {}).items():
        wanted |= {norm(Requirement(r), extra) for r in reqs}
    solved = set()
    for r in me["metadata"]["requires-dist"]:
        extra = re.search(r"extra == '([^']+)'", r.get("marker", ""))
        solved.add((canonicalize_name(r["name"]), SpecifierSet(r.get("specifier", "")), extra and extra[1]))
    assert wanted == solved, ("pyproject.toml and uv.lock disagree; run `make lock`. "
                              f"only in pyproject: {sorted(wanted - solved)}; "
                              f"only in uv.lock: {sorted(solved - wanted)}")


def test_specifiers_compare_parsed_not_as_strings():
    """uv writes '>=1.6,<1.7' where packaging may print '<1.7,>=1.6': the same requirement."""
    assert SpecifierSet("<1.7,>=1.6") == SpecifierSet(">=1.6,<1.7")
    assert len({SpecifierSet("<1.7,>=1.6"), SpecifierSet(">=1.6, <1.7")}) == 1
    assert SpecifierSet("<1.7,>=1.6") != SpecifierSet(">=1.6,<1.8")


def pip_lines(env_file: Path) -> list[str]:
    env = yaml.safe_load(env_file.read_text())
    assert env["channels"] == ["conda-forge"]
    deps = env["dependencies"]
    assert "python=3.11" in deps and "pip" in deps
    (pip_section,) = [d["pip"] for d in deps if isinstance(d, dict)]
    return pip_section


@pytest.mark.parametrize("env_file", ["environment.yml", "binder/environment.yml"])
def test_environment_yml_installs_the_course_pins(env_file):
    """conda and mamba (Binder's repo2docker too) run the pip section in the file's own folder."""
    path = ROOT / env_file
    here = path.parent
    lines = pip_lines(path)
    (req,) = [ln.split(None, 1)[1] for ln in lines if ln.startswith("-r ")]
    assert (here / req).resolve() == BINDER_REQS, f"{env_file} installs {req}, not binder/requirements.txt"
    (editable,) = [ln.split(None, 1)[1] for ln in lines if ln.startswith("-e ")]
    assert (here / editable).resolve() == ROOT, f"{env_file}: -e {editable} is not the repository"
    assert len(lines) == 2, lines
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == ">=3.11", "the environment files pin python=3.11: keep them in step"


def ci_command() -> str:
    lines = [ln.strip() for ln in (ROOT / ".ci/run").read_text().splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("#")][-1]


def test_ci_runs_the_readme_test_command():
    script = (ROOT / ".ci/run").read_text()
    assert script.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in script
    assert os.access(ROOT / ".ci/run", os.X_OK), ".ci/run must be executable"
    command = ci_command()
    assert command == "make test"
    readme = (ROOT / "README.md").read_text()
    assert re.search(rf"^\s*{re.escape(command)}\s*$", readme, re.MULTILINE), (
        f"README.md never shows the CI command {command!r} on a line of its own")


def test_makefile_pins_uv_and_syncs_frozen():
    makefile = (ROOT / "Makefile").read_text()
    version = re.search(r"^UV_VERSION\s*:?=\s*(\d+\.\d+\.\d+)\s*$", makefile, re.MULTILINE)
    assert version, "the Makefile must pin uv: UV_VERSION := X.Y.Z"
    assert "pip install" in makefile and "uv==$(UV_VERSION)" in makefile
    assert "$(UV) sync --frozen --all-extras" in makefile, "extras and dev group; never the binder group"
    assert "UV_PYTHON_DOWNLOADS := never" in makefile
    assert "--dist loadfile" in makefile, "plain -n scatters a notebook's cells over workers"


def test_uv_compiles_bytecode_and_never_downloads_python():
    uv = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]
    assert uv["compile-bytecode"] is True
    assert uv["python-downloads"] == "never"


def test_sanitizer_masks_timestamps_addresses_and_uuids():
    patterns = get_sanitize_patterns((ROOT / "tests/nbval_sanitize.cfg").read_text())
    assert len(patterns) == 3
    text = ("at 2026-03-02 09:15:27.123 <A object at 0x7f2a9c> "
            "/large_tool_results/1b4e28ba-2fa1-11d2-883f-0016d3cca427")
    for regex, replace in patterns:
        text = re.sub(regex, replace, text)
    assert text == "at DATETIME <A object at 0xADDRESS> /large_tool_results/UUID"


def test_no_grammar_compiled_when_a_kernel_first_plots():
    """rfc3987-syntax is left out (pyproject's override): importing jsonschema — which plotly's
    notebook renderer does through nbformat — compiles no Lark grammar, and the formats the
    installed schemas use are still checked."""
    assert importlib.util.find_spec("rfc3987_syntax") is None, "uv sync should leave rfc3987-syntax out"
    checker = jsonschema.FormatChecker()
    assert "uri" in checker.checkers, "uri is still checked (rfc3986-validator)"
    assert not checker.conforms("not a uri", "uri"), "a bad uri is still refused"


def test_every_public_module_is_an_attribute_after_import_labkit():
    """``import labkit; labkit.versions.compare()`` as the README writes it: each public module
    (every name under labkit/ not starting with _) is ``labkit.<module>``, in a fresh process."""
    import subprocess
    import sys

    import labkit
    package = Path(labkit.__file__).parent
    public = sorted(p.stem for p in package.iterdir()
                    if not p.name.startswith("_") and (p.suffix == ".py" or (p / "__init__.py").exists()))
    assert list(labkit.MODULES) == public, "labkit.MODULES lists exactly the public modules"
    code = f"import labkit; print([type(getattr(labkit, m)).__name__ for m in {public!r}])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(["module"] * len(public))
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        labkit.nonesuch  # noqa: B018


def test_a_missing_course_package_names_the_extra():
    """Without the course extra, ``from labkit import plots`` says which install brings plotly (a
    fresh process where plotly cannot be imported; the wheel test checks it with no extra at all)."""
    import subprocess
    import sys

    ways = [("from labkit import plots", "plotly"), ("from labkit.widgets import knobs", "ipywidgets"),
            ("import labkit.yourmodel", "plotly"), ("import labkit.experiments", "plotly")]
    for way, blocked in ways:
        code = (f"import sys; sys.modules[{blocked!r}] = None\n"
                f"try:\n    {way}\nexcept ModuleNotFoundError as e:\n    print(e)")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        said = f"needs {blocked}, from the course extra: pip install 'labkit-context[course]'"
        assert said in out.stdout, (way, out.stdout + out.stderr)
