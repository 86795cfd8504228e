"""What a release carries besides the code: the version in one place, the license, the changelog,
and a data set found both in a checkout and in an installed wheel (the wheel itself:
tests/test_wheel.py)."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

import labkit
from labkit import _version
from labkit.scenario import data as scenario_data

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_version_is_pyprojects():
    assert labkit.__version__ == PROJECT["version"]
    assert _version.DISTRIBUTION == PROJECT["name"] == "labkit-context"


def test_version_falls_back_to_the_checkout_then_to_unknown(monkeypatch, tmp_path):
    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(_version.metadata, "version", not_installed)
    assert _version.version() == PROJECT["version"], "a checkout never installed reads pyproject.toml"
    monkeypatch.setattr(_version, "PYPROJECT", tmp_path / "pyproject.toml")
    assert _version.version() == "0+unknown"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "someone-else"\nversion = "9"\n')
    assert _version.version() == "0+unknown", "another project's pyproject.toml is not labkit's version"


def test_changelog_names_this_version_first():
    headings = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert headings and headings[0] == PROJECT["version"], f"CHANGELOG.md's newest entry: {headings[:1]}"


def test_license_is_mit_as_pyproject_says():
    assert PROJECT["license"] == "MIT" and PROJECT["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")


def test_data_dir_prefers_labkit_data_then_the_wheels_copy_then_the_checkout(monkeypatch, tmp_path):
    packaged, env = tmp_path / "_data", tmp_path / "env"
    monkeypatch.delenv("LABKIT_DATA", raising=False)
    monkeypatch.setattr(scenario_data, "PACKAGED_DATA", packaged)
    assert scenario_data.data_dir() == ROOT / "data", "a checkout (no labkit/_data) reads data/"
    for folder in (packaged, env):
        folder.mkdir()
        (folder / "companies.json").write_text("{}")
    assert scenario_data.data_dir() == packaged, "an installed wheel reads its own copy"
    monkeypatch.setenv("LABKIT_DATA", str(env))
    assert scenario_data.data_dir() == env, "LABKIT_DATA wins"


def test_a_missing_data_set_names_every_way_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setenv("LABKIT_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"make_data\.py.*labkit/_data.*LABKIT_DATA"):
        scenario_data.data_dir()
