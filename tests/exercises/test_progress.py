"""labkit.progress(): each check kept on this machine, a learner's table, an instructor's collection."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import labkit
from labkit.exercises import nb01, nb07
from labkit.exercises import progress as room


@pytest.fixture
def kept(tmp_path, monkeypatch):
    path = tmp_path / "progress.jsonl"
    monkeypatch.setenv("LABKIT_PROGRESS", str(path))
    monkeypatch.setenv("JUPYTERHUB_USER", "ada")
    return path


def test_each_check_is_kept_and_the_table_says_where_the_learner_stands(kept):
    nb01.q1.check(None)            # Run All: the notebook was run
    nb07.q1.check(object())        # a wrong answer
    nb07.q1.check(nb07.q1.solve())
    lines = [json.loads(line) for line in kept.read_text().splitlines()]
    assert [(r["question"], r["status"], r["user"]) for r in lines] == [
        ("nb01.q1", "not attempted", "ada"), ("nb07.q1", "tried", "ada"), ("nb07.q1", "correct", "ada")]
    mine = {r["question"]: r for r in labkit.progress().rows}
    assert list(mine) == room.questions() and len(mine) >= 16, "every question of the sixteen notebooks"
    assert mine["nb01.q1"]["status"] == "not attempted" and mine["nb02.q1"]["status"] == "not started"
    assert (mine["nb07.q1"]["status"], mine["nb07.q1"]["answers checked"]) == ("correct", 2)
    assert mine["nb07.q1"]["solved at"], "when it was solved"


def test_an_instructor_collects_a_hubs_files_into_one_table_and_a_csv(tmp_path, monkeypatch):
    for user, solve in (("ada", True), ("bo", False)):
        monkeypatch.setenv("LABKIT_PROGRESS", str(tmp_path / user / ".labkit-progress.jsonl"))
        monkeypatch.setenv("JUPYTERHUB_USER", user)
        (tmp_path / user).mkdir()
        nb01.q1.check(nb01.q1.solve() if solve else object())
    (tmp_path / "cy").mkdir()
    (tmp_path / "cy" / ".labkit-progress.jsonl").write_bytes(b"\xff\xfe not text")
    room_table = room.collect(str(tmp_path / "*" / ".labkit-progress.jsonl"))
    rows = {r["user"]: r for r in room_table.rows}
    assert rows["ada"]["nb01.q1"] == "correct" and rows["ada"]["correct"].startswith("1/")
    assert rows["bo"]["nb01.q1"] == "tried" and rows["bo"]["correct"].startswith("0/")
    assert any(user.startswith("(unreadable:") for user in rows), "a file that cannot be read is said"
    text = room.to_csv(room_table, tmp_path / "room.csv").read_text().splitlines()
    assert text[0].startswith("user,nb01.q1,") and text[0].endswith(",correct") and len(text) == 4


def test_two_kernels_checking_at_once_lose_no_check(kept):
    code = ("import sys; from labkit.exercises import nb01\n"
            "for _ in range(200): nb01.q1.check(object())")
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]
    assert all(p.wait(120) == 0 for p in procs)
    assert len(kept.read_text().splitlines()) == 400, "every line whole, none lost"
    assert labkit.progress().rows[0]["answers checked"] == 400


def test_a_check_that_cannot_be_kept_still_says_its_verdict_and_why(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_PROGRESS", str(tmp_path / "no such folder" / "p.jsonl"))
    verdict = nb01.q1.check(nb01.q1.solve())
    assert verdict.startswith("Correct!") and "progress not kept" in verdict and "No such file" in verdict


def test_the_learner_is_told_where_to_look():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    assert "labkit.progress()" in (root / "notebooks" / "START_HERE.md").read_text(encoding="utf-8")
    assert "labkit.progress()" in (root / "README.md").read_text(encoding="utf-8")
