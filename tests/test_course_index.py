"""notebooks/START_HERE.md, the index JupyterLab can open: its course map is the pace rule's, its
commands and settings are the ones the Makefile and labkit have, and every notebook points to it.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from labkit import yourmodel
from labkit.model import providers
from tests.conftest import script

ROOT = Path(__file__).resolve().parents[1]
INDEX = ROOT / "notebooks" / "START_HERE.md"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
course_index = script("course_index")
pace = script("pace")
TEXT = INDEX.read_text(encoding="utf-8")


def test_the_course_map_is_the_pace_rules():
    times = {path.stem: pace.minutes(path) for path in NOTEBOOKS}
    assert course_index.table(times) in TEXT, "run: python scripts/pace.py --write"


def test_the_map_links_every_notebook_with_what_it_teaches():
    knowing = course_index.leaves_knowing()
    for path in NOTEBOOKS:
        assert f"]({path.name})" in TEXT, f"{path.name} is not linked"
        assert knowing.get(path.name[:2]), f"the README's course table has no row for {path.name[:2]}"


def test_the_rule_stated_is_the_scripts():
    flat = " ".join(TEXT.split())
    assert f"{pace.WORDS_PER_MINUTE} words a minute" in flat, "words a minute"
    assert f"{pace.LINES_PER_MINUTE} lines a minute" in flat, "lines a minute"
    assert f"{pace.MINUTES_PER_EXERCISE} minutes for each exercise question" in flat, "exercise minutes"
    assert f"at most {pace.CORE_LIMIT} minutes" in flat, "the core path's limit"
    assert f"scanned at {pace.OUTPUT_WORDS_PER_MINUTE} words a minute" in flat, "outputs' words a minute"
    assert f"{pace.MINUTES_PER_FIGURE} minute for each figure" in flat, "a figure's minutes"
    assert f"{pace.MINUTES_PER_PANEL} minutes for each panel" in flat, "a panel's minutes"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_what_each_cell_shows_was_measured_for_its_present_source(path):
    assert not pace.stale(path), f"run: python scripts/pace.py --measure {path.name[:2]}"


def test_the_rule_counts_what_a_run_shows():
    cell = nbformat.v4.new_code_cell("x", outputs=[
        nbformat.v4.new_output("stream", text="one two three four"),
        nbformat.v4.new_output("display_data", data={"text/html": "<table><tr><td>a b</td></tr></table>"}),
        nbformat.v4.new_output("display_data", data={"application/vnd.plotly.v1+json": {}}),
        nbformat.v4.new_output("display_data", data={"application/vnd.jupyter.widget-view+json": {}})])
    assert pace.shown(cell) == {"words": 6, "figures": 1, "panels": 1}, "words, figures and panels"
    hidden = nbformat.v4.new_code_cell("a\nb\nc", metadata={"jupyter": {"source_hidden": True}})
    assert pace.cell_minutes(hidden, {"words": 200, "figures": 0, "panels": 0}) == 1, \
        "a check cell's code is not read, what it shows is"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_the_first_cell_points_to_the_index_not_the_readme(path):
    first = nbformat.read(path, as_version=4).cells[0].source
    assert '(see "Using a real model" in [START_HERE.md](START_HERE.md))' in first, "the pointer"
    assert "## Using a real model" in TEXT, "START_HERE.md has the section the notebooks name"


def test_the_reset_commands_are_the_makefiles():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^reset:", makefile, re.MULTILINE), "make reset exists"
    assert "scripts/reset_notebooks.py $(NB)" in makefile, "NB= picks the notebook"
    assert "make reset NB=04" in TEXT, "the index shows NB="
    assert ".reset-backup/" in (ROOT / ".gitignore").read_text(), "backups stay out of git"


def test_the_real_model_commands_are_the_readmes_and_the_variables_labkit_reads():
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^LABKIT_MODEL=.*$", TEXT, re.MULTILINE)
    assert len(commands) >= 3, "the index shows how to start with a real model"
    for command in commands:
        assert command in readme, f"not in the README: {command}"
    source = Path(providers.__file__).read_text()
    for name in ("LABKIT_MODEL", "LABKIT_BASE_URL", "LABKIT_WINDOW"):
        assert name in TEXT, f"{name} is not explained"
        assert name in source, f"labkit no longer reads {name}"
    assert f"`{yourmodel.BUDGET_ENV}` (default {yourmodel.DEFAULT_BUDGET:,})" in " ".join(TEXT.split())


def test_the_files_it_names_exist():
    for name in ("README.md", "GLOSSARY.md", "labkit", "data", "scripts/nbstrip.py"):
        assert name in TEXT, f"{name} is not named"
        assert (ROOT / name).exists(), f"{name} is named but missing"


def test_the_scripts_import_each_other_without_a_cycle():
    """A sibling script imported from another (``import pace``) — at the top or inside a function —
    never leads back to the first: course_index once imported pace, which imported it back."""
    import ast

    scripts = {p.stem: p for p in (ROOT / "scripts").glob("*.py")}
    imports = {name: {alias.name for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                      if isinstance(node, ast.Import) for alias in node.names if alias.name in scripts}
               for name, path in scripts.items()}

    def reaches(start: str, seen: tuple[str, ...]) -> None:
        for other in imports[start]:
            assert other not in seen, f"an import cycle: {' -> '.join((*seen, other))}"
            reaches(other, (*seen, other))

    assert "course_index" in imports["pace"] and "pace" not in imports["course_index"]
    for name in scripts:
        reaches(name, (name,))
