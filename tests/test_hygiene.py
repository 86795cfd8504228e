"""A learner's working copy stays clean: running a notebook leaves git clean, ``make reset`` puts
notebooks back (keeping edits in .reset-backup/), ``make lab`` is quiet and never asks about news.

The git filter (scripts/nbstrip.py, .gitattributes, set up by the Makefile) and ``make reset``
(scripts/reset_notebooks.py) run for real in a throwaway git repository; JupyterLab's settings
override is read by jupyterlab_server's own reader; ``make lab``'s quiet options are read from
``make -n lab`` and tried on a real server.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from tests.conftest import script

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
FIRST = NOTEBOOKS[0]
GIT = shutil.which("git")
MAKE = shutil.which("make")


nbstrip = script("nbstrip")


def run_by_jupyterlab(path: Path) -> str:
    """The notebook as JupyterLab saves it after Run All: outputs, counts, kernel details, widgets."""
    nb = nbformat.read(path, as_version=4)
    nb.metadata.kernelspec.display_name = "Python 3"
    nb.metadata.language_info = {"name": "python", "version": "3.12.1", "mimetype": "text/x-python",
                                 "codemirror_mode": {"name": "ipython", "version": 3}}
    nb.metadata.widgets = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    for n, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        cell.execution_count = n + 1
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran\n"),
                        nbformat.v4.new_output("display_data", data={"text/plain": "42"})]
        cell.metadata["execution"] = {"iopub.execute_input": "2026-01-01T00:00:00Z"}
        cell.metadata["scrolled"] = True
    return nbformat.writes(nb) + "\n"


def committed(path: Path) -> str:
    """The notebook as it is committed: the file itself when it holds no run (CI's clone, a change
    being made), else — a learner's saved outputs — the last commit's copy in a git checkout."""
    text = path.read_text(encoding="utf-8")
    if nbstrip.clean(text) == text:
        return text
    rel = path.relative_to(ROOT).as_posix()
    if GIT is not None and (ROOT / ".git").exists():
        shown = subprocess.run([GIT, "show", f"HEAD:{rel}"], cwd=ROOT, capture_output=True,
                               text=True, encoding="utf-8")
        if shown.returncode == 0:
            return shown.stdout
    return text


# --- the filter ---------------------------------------------------------------------------------

@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.name[:2])
def test_every_committed_notebook_passes_through_the_filter_unchanged(path):
    """What is committed, not the working file: a learner's saved outputs are theirs to keep."""
    text = committed(path)
    assert nbstrip.clean(text) == text, f"run: python scripts/nbstrip.py {path.relative_to(ROOT)}"


def test_a_notebook_run_in_jupyterlab_comes_out_as_committed():
    ran = run_by_jupyterlab(FIRST)
    assert "execution_count\": 1" in ran, "the run copy should carry execution counts"
    assert nbstrip.clean(ran) == committed(FIRST), "the filter should undo the run"


def test_the_filter_keeps_what_a_learner_types_and_passes_other_text_through():
    nb = json.loads(committed(FIRST))
    edited = copy.deepcopy(nb)
    code = next(c for c in edited["cells"] if c["cell_type"] == "code")
    code["source"] = ["answer = 42\n"]
    assert "answer = 42" in nbstrip.clean(json.dumps(edited)), "an edit is a real change"
    assert nbstrip.clean("not json\n") == "not json\n", "text that is not a notebook passes through"


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run([GIT, "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, env=env,
                          check=True, capture_output=True, text=True).stdout


@pytest.fixture
def clone(tmp_path):
    """A git repository holding the course's Makefile, scripts, .gitattributes and two notebooks."""
    if GIT is None or MAKE is None:
        pytest.skip("needs git and make")
    repo = tmp_path / "course"
    (repo / "notebooks").mkdir(parents=True)
    shutil.copytree(ROOT / "scripts", repo / "scripts")
    for name in ("Makefile", ".gitattributes", ".gitignore"):
        shutil.copy(ROOT / name, repo / name)
    for path in NOTEBOOKS[:2]:  # as committed: this checkout's copies may hold a run's outputs
        (repo / "notebooks" / path.name).write_text(committed(path), encoding="utf-8")
    _git(repo, "init", "-q")
    subprocess.run([MAKE, "-s", "nbstrip-filter", f"PYTHON={sys.executable}"], cwd=repo, check=True,
                   env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"})
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "course")
    return repo


def test_make_sets_up_the_filter_named_in_gitattributes(clone):
    assert "notebooks/*.ipynb filter=nbstrip" in (ROOT / ".gitattributes").read_text()
    command = _git(clone, "config", "filter.nbstrip.clean").strip()
    assert command.endswith("scripts/nbstrip.py"), command


def _run_in_jupyterlab(path: Path) -> None:
    time.sleep(1.1)  # a new mtime, so git re-reads the file
    path.write_text(run_by_jupyterlab(FIRST), encoding="utf-8")


def test_after_a_run_git_is_clean_and_pull_updates_the_notebook(clone):
    path = clone / "notebooks" / FIRST.name
    _git(clone, "checkout", "-q", "-b", "fix")
    path.write_text(path.read_text(encoding="utf-8").replace("Why context explodes", "Why it explodes"))
    _git(clone, "commit", "-qam", "a course fix")
    _git(clone, "checkout", "-q", "-")
    _run_in_jupyterlab(path)
    assert _git(clone, "diff") == "", "git diff shows nothing of a run"
    assert nbstrip.post_save(model={"type": "notebook"}, os_path=str(path)), "the hook refreshes git"
    assert _git(clone, "status", "--porcelain") == "", "running a notebook should leave git clean"
    _git(clone, "merge", "-q", "--ff-only", "fix")
    assert "Why it explodes" in path.read_text(encoding="utf-8"), "the pull updated the notebook"


def test_an_edited_notebook_stays_a_change_until_checked_out(clone):
    path = clone / "notebooks" / FIRST.name
    as_committed = path.read_text(encoding="utf-8")
    _run_in_jupyterlab(path)
    edited = nbformat.read(path, as_version=4)
    next(c for c in edited.cells if c.cell_type == "code").source = "answer = 42"
    nbformat.write(edited, path)
    assert not nbstrip.post_save(model={"type": "notebook"}, os_path=str(path)), "an edit is not staged"
    assert _git(clone, "status", "--porcelain").strip() == f"M notebooks/{FIRST.name}"
    _git(clone, "checkout", "--", f"notebooks/{FIRST.name}")
    assert path.read_text(encoding="utf-8") == as_committed, "git checkout restores an edited notebook"


# --- make reset ---------------------------------------------------------------------------------

def test_make_reset_restores_notebooks_and_keeps_a_copy_of_edits(clone):
    ran, edited = (clone / "notebooks" / p.name for p in NOTEBOOKS[:2])
    committed = {p: p.read_text(encoding="utf-8") for p in (ran, edited)}
    ran.write_text(run_by_jupyterlab(NOTEBOOKS[0]), encoding="utf-8")
    nb = nbformat.read(edited, as_version=4)
    nb.cells[0].source += "\n\nmy notes"
    nbformat.write(nb, edited)
    out = subprocess.run([MAKE, "-s", "reset", f"NB={NOTEBOOKS[1].name[:2]}", f"PYTHON={sys.executable}"],
                         cwd=clone, check=True, capture_output=True, text=True).stdout
    assert edited.read_text(encoding="utf-8") == committed[edited], out
    assert ran.read_text(encoding="utf-8") != committed[ran], "NB= resets only that notebook"
    backups = list((clone / ".reset-backup").glob(f"*/{edited.name}"))
    assert len(backups) == 1, "an edited notebook is copied before it is reset"
    assert "my notes" in backups[0].read_text(encoding="utf-8"), "the copy holds the edit"
    out = subprocess.run([MAKE, "-s", "reset", f"PYTHON={sys.executable}"], cwd=clone, check=True,
                         capture_output=True, text=True).stdout
    assert ran.read_text(encoding="utf-8") == committed[ran], out
    assert len(list((clone / ".reset-backup").rglob("*.ipynb"))) == 1, "a run notebook needs no copy"
    assert _git(clone, "status", "--porcelain") == "", ".reset-backup/ is ignored by git"


def _make(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run([MAKE, "-s", *args, f"PYTHON={sys.executable}"], cwd=repo, env=env,
                          check=True, capture_output=True, text=True).stdout


def _save_after_run_all(path: Path) -> None:
    """What JupyterLab does on Run All + save under make lab: write the outputs, then the hook."""
    ran = run_by_jupyterlab(path)
    time.sleep(1.1)  # a new mtime, so git re-reads the file
    path.write_text(ran, encoding="utf-8")
    assert nbstrip.post_save(model={"type": "notebook"}, os_path=str(path)), "the hook refreshes git"


def test_day_two_run_edit_reset_then_pull_a_course_fix(clone, tmp_path):
    """A learner's clone: Run All + save of two notebooks, an edit to one, make reset of that one;
    the course then fixes both upstream. git pull succeeds and git status is clean."""
    learner = tmp_path / "learner"
    _git(clone.parent, "clone", "-q", str(clone), str(learner))
    _make(learner, "nbstrip-filter")
    first, second = (learner / "notebooks" / p.name for p in NOTEBOOKS[:2])
    for path in (first, second):
        _save_after_run_all(path)
    edited = nbformat.read(first, as_version=4)
    next(c for c in edited.cells if c.cell_type == "code").source += "\nmy_try = 1"
    time.sleep(1.1)
    nbformat.write(edited, first)  # saved with its outputs and the edit: a real change
    assert _git(learner, "status", "--porcelain").strip() == f"M notebooks/{first.name}"
    out = _make(learner, "reset", f"NB={first.name[:2]}")
    assert f"reset notebooks/{first.name} (your version: .reset-backup/" in out, out
    assert _git(learner, "status", "--porcelain") == "", "after make reset, git is clean"

    for name in (first.name, second.name):  # the course fixes both notebooks upstream
        upstream = clone / "notebooks" / name
        nb = nbformat.read(upstream, as_version=4)
        nb.cells[0].source += "\n\nA course fix."
        upstream.write_text(nbstrip.dumps(nbformat.from_dict(nb)), encoding="utf-8")
    _git(clone, "commit", "-qam", "a course fix to both notebooks")
    _git(learner, "pull", "-q", "--ff-only")
    for path in (first, second):
        assert "A course fix." in path.read_text(encoding="utf-8"), f"the pull updated {path.name}"
    assert _git(learner, "status", "--porcelain") == "", "after the pull, git is clean"


def test_make_reset_mends_the_index_of_a_notebook_back_as_committed(clone):
    """Saved with outputs, then reverted by hand: the file is as committed, but git's index still
    holds the saved file's size and git status lists it; make reset mends the index."""
    path = clone / "notebooks" / FIRST.name
    as_committed = path.read_text(encoding="utf-8")
    _save_after_run_all(path)
    time.sleep(1.1)
    path.write_text(as_committed, encoding="utf-8")
    assert _git(clone, "status", "--porcelain").strip() == f"M notebooks/{FIRST.name}", "git's quirk"
    assert _make(clone, "reset").strip() == f"reset notebooks/{FIRST.name}"
    assert _git(clone, "status", "--porcelain") == ""
    assert _make(clone, "reset").strip() == "every notebook is as committed: nothing to reset"


def test_make_reset_moves_notebook_13s_memory_and_threads_aside(clone):
    """data/state/ (SQLite files notebook 13 keeps beyond the kernel) is moved to .reset-backup/,
    not deleted, by make reset and make reset NB=13 — not by a reset of another notebook."""
    state = clone / "data" / "state"
    state.mkdir(parents=True)
    (state / "memory.sqlite").write_bytes(b"the learner's memory")
    assert "data/state" not in _make(clone, "reset", "NB=01"), "another notebook's reset leaves it"
    assert (state / "memory.sqlite").exists()
    out = _make(clone, "reset", "NB=13")
    assert "reset data/state/" in out and not state.exists(), out
    [kept] = (clone / ".reset-backup").glob("*/state/memory.sqlite")
    assert kept.read_bytes() == b"the learner's memory", "moved aside, not deleted"
    assert _git(clone, "status", "--porcelain") == "", "git ignores data/state/ and the backup"


# --- make lab -----------------------------------------------------------------------------------

def _makefile_var(name: str) -> str:
    match = re.search(rf"^{name}\s*:?=\s*(.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert match, f"the Makefile defines {name}"
    return match.group(1).strip()


def test_the_news_setting_is_written_where_jupyterlab_reads_it(tmp_path):
    from jupyterlab.commands import get_app_dir  # the installed JupyterLab's own answer
    from jupyterlab_server.settings_utils import _get_overrides

    read_at = Path(get_app_dir()).resolve() / "settings" / "overrides.json"
    target = _makefile_var("LAB_OVERRIDES").replace("$(VENV)", str(Path(sys.prefix).resolve()))
    assert Path(target) == read_at, f"JupyterLab reads {read_at}, the Makefile writes {target}"
    shutil.copy(ROOT / "scripts" / "jupyterlab_overrides.json", tmp_path / "overrides.json")
    overrides, error = _get_overrides(str(tmp_path))
    assert not error, error
    notification = overrides["@jupyterlab/apputils-extension:notification"]
    assert notification["fetchNews"] == "false", "'false' is the schema's Never: no news, no prompt"
    schema = json.loads((Path(get_app_dir()) / "schemas" / "@jupyterlab" / "apputils-extension"
                         / "notification.json").read_text())["properties"]
    assert {"const": "false", "title": "Never"} in schema["fetchNews"]["oneOf"], "the schema's Never"
    assert set(notification) <= set(schema), "every key is one the installed schema knows"


def test_make_lab_installs_the_settings_and_the_filter_and_runs_quietly():
    if MAKE is None:
        pytest.skip("needs make")
    # -B: every step, as a fresh clone runs it (here .venv may already be built)
    plan = subprocess.run([MAKE, "-n", "-B", "lab"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout
    assert "scripts/jupyterlab_overrides.json" in plan, "make lab copies the settings override"
    assert "filter.nbstrip.clean" in plan, "make lab sets up the git filter"
    assert "--ServerApp.log_level=WARN --LabApp.log_level=WARN" in plan
    assert f"--config={ROOT}/scripts/jupyter_lab_config.py" in plan, "the post-save hook"
    assert re.search(r"uv sync --frozen --all-extras --quiet", plan), "the package list is not printed"


def test_make_labs_server_prints_only_the_url_and_a_saved_run_leaves_git_clean(clone, tmp_path):
    quiet = _makefile_var("LAB_QUIET").split()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "r"),
           "JUPYTER_CONFIG_DIR": str(tmp_path / "c"), "JUPYTER_DATA_DIR": str(tmp_path / "d"),
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    server = subprocess.Popen([sys.executable, "-m", "jupyterlab", "notebooks", "--no-browser",
                               "--ip=127.0.0.1", "--port=0", "--allow-root", *quiet,
                               f"--config={clone}/scripts/jupyter_lab_config.py"], cwd=clone,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines, url = [], None
    try:
        deadline = time.monotonic() + 120
        while url is None and time.monotonic() < deadline:
            line = server.stdout.readline()
            lines.append(line)
            url = re.search(r"http://127\.0\.0\.1:(\d+)/lab\?token=(\w+)", line)
            if not line:
                break
        assert url, "".join(lines)
        port, token = url.groups()
        nb = json.loads(run_by_jupyterlab(FIRST))
        for cell in nb["cells"]:  # JupyterLab marks the cells it ran: the server signs them
            cell["metadata"]["trusted"] = True
        time.sleep(1.1)
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/contents/{FIRST.name}", method="PUT",
            data=json.dumps({"type": "notebook", "format": "json", "content": nb}).encode(),
            headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            assert response.status == 200, response.status
        saved = (clone / "notebooks" / FIRST.name).read_text(encoding="utf-8")
        assert '"output_type"' in saved, "the server saved the outputs to disk"
        assert _git(clone, "status", "--porcelain") == "", "after the save, git is clean"
        _open_and_run_a_cell(f"127.0.0.1:{port}", token, NOTEBOOKS[1].name)
    finally:
        server.terminate()
        rest, _ = server.communicate(timeout=30)
    output = "".join(lines) + rest
    assert not re.findall(r"^\[I ", output, re.MULTILINE), f"info lines at WARN:\n{output}"
    assert not re.findall(r"^\[W |WARNING", output, re.MULTILINE), f"a warning, to the learner:\n{output}"
    assert "Warning" not in output, output


def _open_and_run_a_cell(host: str, token: str, name: str) -> None:
    """What a learner's first minute does to the server: open a notebook as committed (no
    outputs, never signed here), start a kernel and talk to it over the kernel's websocket."""
    import asyncio
    import uuid

    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    def call(path: str, method: str = "GET", body: dict | None = None) -> dict:
        request = urllib.request.Request(f"http://{host}{path}", method=method,
                                         data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Authorization": f"token {token}"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read() or b"{}")

    assert call(f"/api/contents/{name}?content=1")["content"]["cells"], "the notebook opened"
    kernel = call("/api/kernels", "POST", {"name": "python3"})["id"]

    async def run_a_cell() -> str:
        socket = await websocket_connect(HTTPRequest(
            f"ws://{host}/api/kernels/{kernel}/channels?session_id={uuid.uuid4().hex}",
            headers={"Authorization": f"token {token}"}))
        msg_id = uuid.uuid4().hex
        socket.write_message(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "t", "session": "s",
                       "version": "5.3", "date": ""}, "parent_header": {}, "metadata": {}, "channel": "shell",
            "content": {"code": "print(6 * 7)", "silent": False, "store_history": False,
                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
        printed = []  # the kernel may send what a cell prints in several stream messages
        while True:
            reply = json.loads(await asyncio.wait_for(socket.read_message(), 60))
            if reply["parent_header"].get("msg_id") != msg_id:
                continue
            if reply["msg_type"] == "stream":
                printed.append(reply["content"]["text"])
            elif reply["msg_type"] == "status" and reply["content"]["execution_state"] == "idle":
                socket.close()  # the cell is done: everything it printed has been sent
                return "".join(printed)

    assert asyncio.run(run_a_cell()) == "42\n", "the kernel ran the cell"
    call(f"/api/kernels/{kernel}", "DELETE")


def test_the_readme_states_what_the_makefile_does():
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"`{_makefile_var('LAB_QUIET')}`" in readme, "the README names make lab's quiet options"
    assert _makefile_var("LAB_OVERRIDES").replace("$(VENV)", ".venv") in readme, "where the override goes"
    overrides = json.loads((ROOT / "scripts" / "jupyterlab_overrides.json").read_text())
    assert overrides["@jupyterlab/apputils-extension:notification"]["checkForUpdates"] is False, "no checks"
    assert "make reset NB=04" in readme, "the README shows make reset"
