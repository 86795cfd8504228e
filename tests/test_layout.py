"""labkit's layout, read from the code (nothing is imported): no import cycle among its modules
(function-level imports included), no module over 400 lines, a module docstring of at most 12
lines in every module, and no notebook reaching for a private name (STYLE.md, rules 1-2).

Worked example (``test_a_function_level_import_closes_a_cycle``): ``a`` imports ``b`` at the
top and ``b`` imports ``a`` inside a function. Python runs that, but the two modules still
depend on each other, so it is a cycle: ``{a, b}``. A package's ``__init__`` re-exporting its own
children is not an edge, or every subpackage would be a cycle with its modules.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 400
MAX_DOCSTRING_LINES = 12
# ``from labkit... import _x``, ``labkit.x._y``, or ``module._x`` on a labkit module a notebook imported
PRIVATE = re.compile(r"from labkit[\w.]* import [^\n]*\b(_[a-z]\w*)|labkit\.[\w.]*\b(_[a-z]\w*)|"
                     r"\b(?:summarize|offload|isolate|scenario|replay|evals|diagnose|widgets|trace|tokens)"
                     r"\.(_[a-z]\w*)")


def modules(root: Path, package: str = "labkit") -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``package`` under ``root``."""
    found = {}
    for f in sorted((root / package).rglob("*.py")):
        parts = list(f.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = f
    return found


def import_edges(mods: dict[str, Path], package: str = "labkit") -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its code (functions included)."""
    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges = {m: set() for m in mods}
    for m, f in mods.items():
        is_pkg = f.name == "__init__.py"
        base = m if is_pkg else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                if node.level:
                    b = base
                    for _ in range(node.level - 1):
                        b = b.rpartition(".")[0]
                    mod = f"{b}.{node.module}" if node.module else b
                targets = [f"{mod}.{a.name}" for a in node.names] + [mod]
            else:
                continue
            for t in targets:
                r = resolve(t) if t.split(".")[0] == package else None
                if r and r != m and not (is_pkg and r.startswith(m + ".")):
                    edges[m].add(r)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in edges:
        if v not in index:
            visit(v)
    return found


MODULES = modules(ROOT)
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_a_function_level_import_closes_a_cycle(tmp_path):
    pkg = tmp_path / "labkit"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""The package."""\nfrom labkit import a\n')
    (pkg / "a.py").write_text('"""A."""\nfrom labkit.b import helper\n')
    (pkg / "b.py").write_text('"""B."""\ndef helper():\n    from labkit import a\n    return a\n')
    (pkg / "sub" / "__init__.py").write_text('"""Sub."""\nfrom .leaf import x\n')
    (pkg / "sub" / "leaf.py").write_text('"""Leaf."""\nfrom labkit.sub import y\nx = 1\n')
    edges = import_edges(modules(tmp_path))
    assert edges["labkit.a"] == {"labkit.b"}
    assert edges["labkit.b"] == {"labkit", "labkit.a"}, "from labkit import a runs labkit's __init__ too"
    assert edges["labkit.sub"] == set(), "a package re-exporting its child is not an edge"
    assert cycles(edges) == [["labkit.a", "labkit.b"]]


def test_no_import_cycle_among_labkit_modules():
    assert len(MODULES) > 40, "labkit's modules were not found"
    found = cycles(import_edges(MODULES))
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize("name", MODULES)
def test_module_is_at_most_400_lines(name):
    lines = len(MODULES[name].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{MODULES[name].relative_to(ROOT)} has {lines} lines (at most {MAX_LINES})"


@pytest.mark.parametrize("name", MODULES)
def test_module_docstring_is_at_most_12_lines(name):
    doc = ast.get_docstring(ast.parse(MODULES[name].read_text(encoding="utf-8")))
    assert doc, f"{MODULES[name].relative_to(ROOT)} has no module docstring"
    lines = len(doc.splitlines())
    assert lines <= MAX_DOCSTRING_LINES, \
        f"{MODULES[name].relative_to(ROOT)}'s docstring has {lines} lines (at most {MAX_DOCSTRING_LINES})"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_notebook_imports_no_private_labkit_name(notebook):
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    private = [f"cell {i}: {''.join(hit)}" for i, c in enumerate(cells) if c["cell_type"] == "code"
               for hit in PRIVATE.findall("".join(c["source"]))]
    assert not private, f"{notebook.name} reaches for private labkit names: {private}"


def test_the_private_name_pattern_catches_each_form():
    caught = ["from labkit.model import _writing", "from labkit._sizes import x", "labkit.model._context.f()",
              "summarize._cut(history)"]
    allowed = ["from labkit.model import lab_summary", "labkit.model.__all__", "nb01.q1.check(answer)"]
    assert all(PRIVATE.search(s) for s in caught) and not any(PRIVATE.search(s) for s in allowed)


@pytest.mark.parametrize("name", MODULES)
def test_no_import_inside_a_function_without_a_reason(name):
    """Rule 6: an import inside a function must say why on its line or the line above (a cycle it
    breaks, or a heavy import it defers)."""
    source = MODULES[name].read_text(encoding="utf-8")
    lines = source.splitlines()
    bare = [f"line {n.lineno}: {ast.unparse(n)}" for fn in ast.walk(ast.parse(source))
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(fn)
            if isinstance(n, (ast.Import, ast.ImportFrom))
            and "#" not in lines[n.lineno - 1] and not lines[n.lineno - 2].strip().startswith("#")]
    assert not bare, f"{MODULES[name].relative_to(ROOT)} imports inside functions: {bare}"
