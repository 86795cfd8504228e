"""The skeleton every notebook shares (STYLE.md, rule 10), read from the notebooks' sources.

Evidence, not scaffolding: a cell with ``assert`` statements is a check, so its source is
collapsed (``jupyter.source_hidden``, and the ``hide-input`` tag a static book reads); each
assert states one claim (no ``and`` inside its test) with a message in the learner's words. No
cell may raise: exercises say "not attempted" instead. Every notebook asks a predict-then-run
question, names ``.solution()``, gives each glossary term its 中文 at its first use, and states
the time the pace rule (scripts/pace.py) gives it, with a core path of at most 45 minutes.
"""

from __future__ import annotations

import ast
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pytest

from tests.conftest import script

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
pace = script("pace")


def _read(path: Path):
    return nbformat.read(path, as_version=4)


def _code(path: Path):
    return [(i, c) for i, c in enumerate(_read(path).cells) if c.cell_type == "code"]


def _asserts(source: str) -> list[ast.Assert]:
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    return [node for node in ast.walk(ast.parse("\n".join(lines))) if isinstance(node, ast.Assert)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_no_cell_may_raise(path):
    tagged = [i for i, c in _code(path) if "raises-exception" in c.metadata.get("tags", [])]
    assert not tagged, f"cells {tagged} are tagged raises-exception"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_check_cells_are_collapsed(path):
    shown = [i for i, c in _code(path) if _asserts(c.source)
             and not (c.metadata.get("jupyter", {}).get("source_hidden")
                      and "hide-input" in c.metadata.get("tags", []))]
    assert not shown, f"cells {shown} assert but their source is not hidden (source_hidden + hide-input)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_one_claim_per_assert_with_a_message(path):
    chains, silent = [], []
    for i, cell in _code(path):
        for node in _asserts(cell.source):
            if any(isinstance(n, ast.BoolOp) and isinstance(n.op, ast.And) for n in ast.walk(node.test)):
                chains.append(f"[{i}] {ast.unparse(node.test)[:80]}")
            if node.msg is None:
                silent.append(f"[{i}] {ast.unparse(node.test)[:80]}")
    assert not chains, "asserts with `and` chains (one claim each): " + "; ".join(chains)
    assert not silent, "asserts without a message: " + "; ".join(silent)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_a_predict_then_run_question_and_the_solution_named(path):
    markdown = [c.source for c in _read(path).cells if c.cell_type == "markdown"]
    assert any("**Predict.**" in text for text in markdown), "no **Predict.** question"
    assert any(".solution()" in text for text in markdown), "the exercise does not name .solution()"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_run_all_reveals_no_hint_or_solution(path):
    """Hints and solutions on request only: a learner who clicks Run All sees none (a call a cell
    runs showed hint 1 unasked, and the next Run All 'Hint 2/2'); each question's hint call is
    there, commented, for the learner to uncomment. tests/exercises/test_contract.py checks every
    hint and solution."""
    code = [c.source for c in _read(path).cells if c.cell_type == "code"]
    called = [line for text in code for line in text.splitlines()
              if re.search(r"\.(hint|solution)\(\)", line.split("#", 1)[0])]
    assert not called, f"Run All would reveal: {called}"
    checked = {m for text in code for m in re.findall(r"^(nb\d\d\.q\d+)\.check\(", text, re.M)}
    offered = {m for text in code for m in re.findall(r"^# (nb\d\d\.q\d+)\.hint\(\)", text, re.M)}
    assert checked and checked == offered, f"questions checked {checked}, hints offered {offered}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_the_stated_time_is_the_rules(path):
    m = pace.minutes(path)
    first = _read(path).cells[0].source
    assert pace.time_line(m) in first, f"the first cell should say: {pace.time_line(m)}"
    assert m["core"] <= pace.CORE_LIMIT, f"the core path takes {m['core']} minutes"


def test_the_readme_table_is_the_rules():
    times = {path.stem: pace.minutes(path) for path in NOTEBOOKS}
    readme = pace.README.read_text()
    assert pace.readme_table(times) in readme, "run: python scripts/pace.py --write"
    assert re.search(r"130 words a\s+minute", readme), "the README states the rule"


glossary = script("glossary")


def test_the_glossary_has_the_terms_the_course_needs():
    chinese = {zh for _, zh in glossary.terms()}
    assert len(chinese) >= 25, f"{len(chinese)} terms"
    for term in ("摘要", "归档", "切点", "工具调用对", "孤儿工具消息", "子智能体", "渐进式披露", "目标漂移",
                 "大海捞针", "针对性评估", "卸载", "压缩", "隔离"):
        assert term in chinese, f"{term} is missing from GLOSSARY.md"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_each_term_carries_its_chinese_name_at_its_first_use(path):
    problems = glossary.missing(path)
    assert not problems, "\n".join(problems)


FIGURES = ROOT / "notebooks" / "figures"
# the loop and its pipeline, the stub, the cut, the view and archive, the fan-out, the routes
MECHANISM_NOTEBOOKS = ("03", "04", "08", "09", "12", "13")


def _figures_shown(path: Path) -> list[str]:
    markdown = "\n".join(c.source for c in _read(path).cells if c.cell_type == "markdown")
    alt = r"(?:[^\[\]]|\[[^\[\]]*\])+"  # alt text, with balanced brackets as markdown allows
    return re.findall(rf"!\[{alt}\]\((figures/[^)\s]+\.svg)\)", markdown)


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name[:2] in MECHANISM_NOTEBOOKS],
                         ids=lambda p: p.name[:2])
def test_each_mechanism_notebook_shows_a_diagram(path):
    shown = _figures_shown(path)
    assert shown, "no ![...](figures/....svg) diagram"
    missing = [f for f in shown if not (ROOT / "notebooks" / f).is_file()]
    assert not missing, f"figures not in the repo: {missing}"


@pytest.mark.parametrize("svg", sorted(FIGURES.glob("*.svg")), ids=lambda p: p.name)
def test_a_diagram_is_self_contained_and_shown(svg):
    root = ET.parse(svg).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    assert root.tag == f"{ns}svg", "the root element is <svg> in the SVG namespace"
    assert root.get("viewBox"), "a viewBox, so it scales to the page"
    assert root.find(f"{ns}title") is not None, "a <title> (what a screen reader says)"
    assert root.find(f"{ns}desc") is not None, "a <desc> saying what it shows"
    text = svg.read_text()
    for outside in ("<script", "<image", "href=\"http", "@import", "url(http"):
        assert outside not in text, f"{outside} loads something from outside (offline, static export)"
    shown_in = [p.name for p in NOTEBOOKS if f"figures/{svg.name}" in _figures_shown(p)]
    assert shown_in, f"{svg.name} is shown by no notebook"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_a_panel_the_learner_moves_is_never_moved_by_the_notebook(path):
    """A displayed panel starts from its defaults after Run All: the notebook's own ``.set()``
    checks move a second instance, never the one it shows."""
    code = "\n".join(c.source for c in _read(path).cells if c.cell_type == "code")
    shown = {c.source.strip().splitlines()[-1] for c in _read(path).cells
             if c.cell_type == "code" and c.source.strip()}
    panels = set(re.findall(r"^(\w+) = widgets\.\w+\(", code, flags=re.M)) & shown
    moved = sorted(name for name in panels if re.search(rf"\b{name}\.set\(", code))
    assert not moved, f"the notebook moves the panel it shows: {moved}"


DRIFTED = {"留档": "归档", "超长回退": "溢出回退", "子 agent": "子智能体", "脏活": "—",
           "工具 schema": "工具定义"}


def test_no_chinese_term_drifts_from_the_glossary_anywhere_in_the_course():
    """GLOSSARY.md is the one source of the Chinese terms: no notebook, course page or labkit text
    uses a variant a reviewer found drifting from it (the clinic's rows have their own test)."""
    paths = [*NOTEBOOKS, ROOT / "README.md", ROOT / "notebooks" / "START_HERE.md",
             *(ROOT / "labkit").rglob("*.py")]
    for path in paths:
        text = path.read_text(encoding="utf-8")
        for old, new in DRIFTED.items():
            assert old not in text, f"{path.relative_to(ROOT)} says {old!r}; GLOSSARY.md says {new!r}"
