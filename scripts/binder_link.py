"""Print the links that hand the course out: Binder, and nbgitpuller for a JupyterHub.

    python scripts/binder_link.py                     # for this clone's `git remote get-url origin`
    python scripts/binder_link.py --repo https://github.com/OWNER/REPO
    python scripts/binder_link.py --hub https://hub.example.edu   # an nbgitpuller link as well

The repository's public address is not known in this checkout, so README.md's Binder link is made
for PLACEHOLDER: replace YOUR-ORG/labkit there with the published repository (or paste this
script's output). Both links open notebook 01 in JupyterLab.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, urlencode

ROOT = Path(__file__).resolve().parents[1]
PLACEHOLDER = "https://github.com/YOUR-ORG/labkit"  # README.md's links, until the repository is public
NOTEBOOK = "notebooks/01_why_context_explodes.ipynb"


def https_url(remote: str) -> str:
    """``git@host:owner/repo.git`` or ``https://host/owner/repo(.git)`` -> ``https://host/owner/repo``."""
    remote = remote.strip()
    m = re.fullmatch(r"(?:ssh://)?git@([^:/]+)[:/](.+?)(?:\.git)?/?", remote)
    if m:
        return f"https://{m[1]}/{m[2]}"
    m = re.fullmatch(r"https?://(?:[^@/]+@)?(.+?)(?:\.git)?/?", remote)
    if m:
        return f"https://{m[1]}"
    raise ValueError(f"not a git remote address: {remote!r}")


def binder_url(repo: str, ref: str = "HEAD", notebook: str = NOTEBOOK) -> str:
    """The mybinder.org link that builds ``repo`` at ``ref`` and opens ``notebook`` in JupyterLab."""
    url = https_url(repo)
    host, _, path = url.removeprefix("https://").partition("/")
    if host == "github.com":
        spec = f"gh/{path}/{ref}"
    elif host == "gitlab.com":
        spec = f"gl/{quote(path, safe='')}/{ref}"
    else:
        spec = f"git/{quote(url, safe='')}/{ref}"
    return f"https://mybinder.org/v2/{spec}?urlpath={quote('lab/tree/' + notebook, safe='')}"


def nbgitpuller_url(hub: str, repo: str, branch: str = "main", notebook: str = NOTEBOOK) -> str:
    """The link a JupyterHub user clicks: nbgitpuller clones (later: merges) ``repo`` into their home
    and opens ``notebook`` in JupyterLab."""
    url = https_url(repo)
    folder = url.rstrip("/").rsplit("/", 1)[-1]
    query = urlencode({"repo": url, "branch": branch, "urlpath": f"lab/tree/{folder}/{notebook}"})
    return f"{hub.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def origin() -> str | None:
    """This clone's ``origin`` remote, or None when there is none."""
    out = subprocess.run(["git", "remote", "get-url", "origin"], cwd=ROOT, capture_output=True, text=True)
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", help="the repository's public address (default: git remote origin)")
    parser.add_argument("--hub", help="a JupyterHub's address: also print an nbgitpuller link")
    parser.add_argument("--branch", default="main", help="the branch nbgitpuller pulls (default: main)")
    args = parser.parse_args(argv)
    repo = args.repo or origin()
    if repo is None:
        print(f"no `origin` remote: using the placeholder {PLACEHOLDER} (pass --repo)", file=sys.stderr)
        repo = PLACEHOLDER
    try:
        print(binder_url(repo))
        if args.hub:
            print(nbgitpuller_url(args.hub, repo, args.branch))
    except ValueError:
        where = "--repo" if args.repo else "this clone's `origin` remote"
        print(f"error: {where} is {repo!r}, not an address Binder or a hub can clone from (a local "
              f"folder, perhaps). Pass the published repository: --repo https://github.com/OWNER/REPO",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
