"""The numbers notebooks/INSTRUCTORS.md quotes, kept in step with what the notebooks print.

The guide ends with a block, an HTML comment, listing each number it quotes and the notebook
that prints it (``01 | 153,383``). ``--measure`` runs those notebooks (as the book does:
scripts/book.py, on the lab model, outputs never written back) and keeps, per notebook, every
number-like token its cells print — stream text, text/plain, text/markdown, text/html without
its tags; not the figures — in scripts/guide-outputs.json, with a sha256 of the notebook's code
cells. tests/test_instructors.py then checks, without running anything, that each listed number
is in the guide's prose and among its notebook's printed tokens, and that no notebook's code
changed since it was measured. It does not see a change in labkit itself: after one that moves
the course's numbers, measure again.

    python scripts/guide_numbers.py                      # check; exit status 1 on a problem
    python scripts/guide_numbers.py --measure            # run every notebook the guide quotes
    python scripts/guide_numbers.py --measure 04 07      # run these only (the rest is kept)
    python scripts/guide_numbers.py --measure --keep /tmp/guide   # also keep the run notebooks
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pace  # noqa: E402  (a sibling script: how the course reads an output's text)

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
GUIDE = NOTEBOOKS / "INSTRUCTORS.md"
OUTPUTS = ROOT / "scripts" / "guide-outputs.json"
BLOCK = re.compile(r"<!-- guide numbers: notebook \| the number as printed\n(.*?)-->", re.S)
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")  # 153,383 · 0.85 · 1,234.5 · 12


def notebook(number: str) -> Path:
    """The notebook whose name starts with ``number`` (``"07"``)."""
    found = sorted(NOTEBOOKS.glob(f"{number}_*.ipynb"))
    if len(found) != 1:
        raise SystemExit(f"no notebook numbered {number!r} in {NOTEBOOKS}")
    return found[0]


def listed(guide: str) -> list[tuple[str, str]]:
    """The guide's block: (notebook, number as printed), in the order written."""
    m = BLOCK.search(guide)
    if not m:
        raise ValueError(f"{GUIDE.name} has no '<!-- guide numbers: …' block")
    rows = [line.split("|") for line in m.group(1).splitlines() if line.strip()]
    return [(nb.strip(), number.strip()) for nb, number in rows]


def prose(guide: str) -> str:
    """The guide without its block: what a reader reads."""
    return BLOCK.sub("", guide)


def in_text(number: str, text: str) -> bool:
    """Whether ``number`` stands in ``text`` as a whole number (``3`` is not in ``153,383``)."""
    return re.search(rf"(?<![\d.,]){re.escape(number)}(?![\d]|[.,]\d)", text) is not None


def code_hash(path: Path) -> str:
    """sha256 of a notebook's code cells, in order: what its outputs depend on (with labkit)."""
    nb = nbformat.read(path, as_version=4)
    code = "\n\x00\n".join(c.source for c in nb.cells if c.cell_type == "code")
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


def printed(nb) -> list[str]:
    """Every number-like token the run notebook's cells print, sorted, once each."""
    found: set[str] = set()
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            texts = [out.get("text", "")] if out.get("output_type") == "stream" else []
            data = out.get("data", {})
            texts += [pace.as_text(data, kind) for kind in ("text/plain", "text/markdown", "text/html")
                      if kind in data]
            for text in texts:
                found.update(NUMBER.findall(text))
    return sorted(found)


def stored() -> dict[str, dict]:
    return json.loads(OUTPUTS.read_text(encoding="utf-8")) if OUTPUTS.exists() else {}


def measure(numbers: list[str], keep: Path | None = None) -> None:
    """Run the notebooks and store what they print in OUTPUTS (other notebooks' entries kept)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import book  # a sibling script: runs a notebook as the book and the tests do, on the lab model

    kept = stored()
    for number in numbers:
        path = notebook(number)
        nb = book.execute(nbformat.read(path, as_version=4), path.parent)
        kept[number] = {"notebook": path.name, "sha256": code_hash(path), "numbers": printed(nb)}
        if keep:
            keep.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, keep / path.name)
        OUTPUTS.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"measured {path.name}: {len(kept[number]['numbers'])} numbers", file=sys.stderr)


def problems(guide: str, kept: dict[str, dict]) -> list[str]:
    """What is out of step: a number not in the prose, not printed, or a notebook changed since."""
    out, text = [], prose(guide)
    rows = listed(guide)
    for nb in sorted({nb for nb, _ in rows}):
        if nb not in kept:
            out.append(f"{nb}: not measured: run python scripts/guide_numbers.py --measure {nb}")
        elif kept[nb]["sha256"] != code_hash(notebook(nb)):
            out.append(f"{nb}: stale (its code changed): run python scripts/guide_numbers.py --measure {nb}")
    for nb, number in rows:
        if not NUMBER.fullmatch(number):
            out.append(f"{nb} | {number}: not a number as the script reads one")
        if not in_text(number, text):
            out.append(f"{nb} | {number}: listed, but not in the guide's prose")
        if nb in kept and number not in kept[nb]["numbers"]:
            out.append(f"{nb} | {number}: notebook {nb} does not print it")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measure", nargs="*", metavar="NB",
                        help="run these notebooks (none named: every one the guide quotes)")
    parser.add_argument("--keep", type=Path, help="with --measure: also write the run notebooks here")
    args = parser.parse_args(argv)
    guide = GUIDE.read_text(encoding="utf-8")
    if args.measure is not None:
        measure(args.measure or sorted({nb for nb, _ in listed(guide)}), args.keep)
    found = problems(guide, stored())
    print("\n".join(found) or f"{len(listed(guide))} numbers in step", file=sys.stderr if found else sys.stdout)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
