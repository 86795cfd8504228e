"""The course extra named when one of its packages is missing, however a course module is reached.

Used by: labkit (``labkit.plots`` and the like, imported on first use) and, as their first import,
the modules that need the ``course`` extra (``plots``, ``widgets``, ``yourmodel``): ``from
labkit.widgets import knobs`` in a venv that has only the wheel says which extra to install.
"""

from __future__ import annotations

from importlib.util import find_spec

__all__ = ["COURSE_EXTRA", "missing_extra", "require"]

COURSE_EXTRA = ("plotly", "ipywidgets", "anywidget", "IPython", "ipykernel", "jupyterlab")  # [course]


def missing_extra(module: str, package: str) -> ModuleNotFoundError:
    return ModuleNotFoundError(f"{module} needs {package}, from the course extra: pip install "
                               f"'labkit-context[course]' (in a checkout of the course: make setup)",
                               name=package)


def require(module: str, *packages: str) -> None:
    """Raise :func:`missing_extra` for the first of ``packages`` that is not installed."""
    for package in packages:
        if find_spec(package) is None:
            raise missing_extra(module, package)
