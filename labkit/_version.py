"""labkit's version, from one source: pyproject.toml's ``version``.

Installed (a wheel, or ``uv sync``'s editable install), it is read from the package metadata. In a
checkout that was never installed (``PYTHONPATH=.``), from the checkout's pyproject.toml.
"""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

__all__ = ["DISTRIBUTION", "__version__", "version"]

DISTRIBUTION = "labkit-context"  # the name on PyPI; the import name is labkit
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def version() -> str:
    """The installed labkit-context's version; a checkout's pyproject.toml version when not installed;
    ``0+unknown`` when neither is found."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pass
    try:
        project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "0+unknown"
    return project["version"] if project.get("name") == DISTRIBUTION else "0+unknown"


__version__ = version()
