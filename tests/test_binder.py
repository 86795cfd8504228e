"""Handing the course out: the README's Binder link, nbgitpuller links (scripts/binder_link.py), and
what a JupyterHub server's environment needs for the panels and plots."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from tests.conftest import script

ROOT = Path(__file__).resolve().parent.parent
binder_link = script("binder_link")
README = (ROOT / "README.md").read_text()


def readme_section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_readme_binder_link_opens_notebook_01_in_jupyterlab():
    links = re.findall(r"\((https://mybinder\.org/[^)\s]+)\)", README)
    assert links == [binder_link.binder_url(binder_link.PLACEHOLDER)], links
    query = parse_qs(urlsplit(links[0]).query)
    assert query["urlpath"] == ["lab/tree/notebooks/01_why_context_explodes.ipynb"]
    assert (ROOT / binder_link.NOTEBOOK).is_file()
    assert "YOUR-ORG/labkit" in binder_link.PLACEHOLDER and "placeholder" in readme_section(
        "Binder, conda and JupyterHub").lower(), "the README says the link is a placeholder"


@pytest.mark.parametrize(("remote", "url"), [
    ("git@github.com:acme/labkit.git", "https://github.com/acme/labkit"),
    ("ssh://git@github.com/acme/labkit.git", "https://github.com/acme/labkit"),
    ("https://github.com/acme/labkit.git", "https://github.com/acme/labkit"),
    ("https://token@github.com/acme/labkit/", "https://github.com/acme/labkit"),
    ("https://gitlab.com/group/sub/labkit", "https://gitlab.com/group/sub/labkit"),
])
def test_remotes_become_https_addresses(remote, url):
    assert binder_link.https_url(remote) == url


def test_binder_links_per_host():
    nb = "?urlpath=lab%2Ftree%2Fnotebooks%2F01_why_context_explodes.ipynb"
    assert binder_link.binder_url("git@github.com:acme/labkit.git") == \
        f"https://mybinder.org/v2/gh/acme/labkit/HEAD{nb}"
    assert binder_link.binder_url("https://gitlab.com/group/labkit") == \
        f"https://mybinder.org/v2/gl/group%2Flabkit/HEAD{nb}"
    assert binder_link.binder_url("https://codeberg.org/acme/labkit") == \
        f"https://mybinder.org/v2/git/https%3A%2F%2Fcodeberg.org%2Facme%2Flabkit/HEAD{nb}"
    with pytest.raises(ValueError, match="not a git remote"):
        binder_link.https_url("labkit")


def test_nbgitpuller_link_clones_and_opens_notebook_01():
    url = binder_link.nbgitpuller_url("https://hub.example.edu/", "git@github.com:acme/labkit.git", "course")
    parts = urlsplit(url)
    assert parts.netloc == "hub.example.edu" and parts.path == "/hub/user-redirect/git-pull"
    query = {k: v for k, (v,) in parse_qs(parts.query).items()}
    assert query == {"repo": "https://github.com/acme/labkit", "branch": "course",
                     "urlpath": "lab/tree/labkit/notebooks/01_why_context_explodes.ipynb"}


def test_script_falls_back_to_the_placeholder_without_origin(monkeypatch, capsys):
    monkeypatch.setattr(binder_link, "origin", lambda: None)
    assert binder_link.main(["--hub", "https://hub.example.edu"]) == 0
    out, err = capsys.readouterr()
    binder, puller = out.splitlines()
    assert binder == binder_link.binder_url(binder_link.PLACEHOLDER) and "placeholder" in err
    assert unquote(puller).endswith("lab/tree/labkit/notebooks/01_why_context_explodes.ipynb")


def test_a_local_origin_is_named_not_a_traceback(monkeypatch, capsys):
    """A clone of a clone (origin is a folder): one line saying what to pass, exit status 2."""
    monkeypatch.setattr(binder_link, "origin", lambda: "/home/me/courses/labkit")
    assert binder_link.main([]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert "'/home/me/courses/labkit'" in err and "--repo https://github.com/OWNER/REPO" in err


@pytest.mark.parametrize(("dist", "extension"), [
    ("jupyterlab_widgets", "@jupyter-widgets/jupyterlab-manager"),
    ("plotly", "jupyterlab-plotly"),
    ("anywidget", "anywidget"),
])
def test_the_server_side_extensions_ship_inside_these_wheels(dist, extension):
    """README, Teaching with JupyterHub: the server's environment needs these three packages."""
    files = [str(f) for f in metadata.files(dist) or []]
    assert any(f.endswith(f"share/jupyter/labextensions/{extension}/package.json") for f in files), (
        f"{dist} no longer ships the prebuilt {extension} extension")
    assert f"`{extension}` in the `{dist.replace('_', '-')}` package" in " ".join(README.split())


def test_readme_quotes_pyprojects_ranges():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    quoted = re.findall(r"`([a-z-]+(?:>=|<)[^`]+)`", readme_section("labkit as a library"))
    assert quoted and set(quoted) <= set(deps), f"README quotes {quoted}; pyproject has {deps}"


def test_readme_wheel_commands_name_this_version():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    wheels = set(re.findall(r"labkit_context-([^-]+)-py3-none-any\.whl", README))
    assert wheels == {version}, wheels
