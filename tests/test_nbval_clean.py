"""tests/nbval_clean.py is wired (pytest loads it for every run) and does what the README says: a
notebook cell whose outputs hold a stderr stream fails with the text it printed; others pass."""

from __future__ import annotations

import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import nbval_clean

ROOT = Path(__file__).resolve().parents[1]


def _run(outputs):
    hook = nbval_clean.pytest_runtest_call(SimpleNamespace(test_outputs=outputs, cell_num=7))
    next(hook)  # the cell runs here
    with pytest.raises(StopIteration) as done:
        hook.send(None)
    return done.value.value


def test_pytest_loads_the_plugin_for_every_run():
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "tests.nbval_clean" in [addopts[i + 1] for i, a in enumerate(addopts[:-1]) if a == "-p"]


def test_a_cell_that_wrote_to_stderr_fails_with_what_it_printed():
    warning = {"output_type": "stream", "name": "stderr", "text": "UserWarning: could not archive\n"}
    with pytest.raises(AssertionError, match=r"(?s)cell 7 wrote to stderr.*could not archive"):
        _run([{"output_type": "stream", "name": "stdout", "text": "fine\n"}, warning])


def test_a_cell_with_stdout_and_figures_only_passes():
    assert _run([{"output_type": "stream", "name": "stdout", "text": "fine\n"},
                 {"output_type": "display_data", "data": {}}]) is None
