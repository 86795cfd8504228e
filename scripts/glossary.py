"""Where a notebook first uses a glossary term without its Chinese name (GLOSSARY.md).

For each notebook and each term of GLOSSARY.md whose English form appears in the notebook's
markdown (code spans, code blocks and link targets left out), the first markdown cell that uses
it must also carry the term's 中文.

    python scripts/glossary.py            # every notebook; exit status 1 if anything is missing
    python scripts/glossary.py 07 12      # only these notebooks
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "GLOSSARY.md"


def terms() -> list[tuple[list[str], str]]:
    """The glossary's rows: (English forms, 中文)."""
    rows = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] not in ("English", "") and not set(cells[0]) <= {"-"}:
            rows.append(([form.strip() for form in cells[0].split(" / ")], cells[1]))
    return rows


def prose(markdown: str) -> str:
    """Markdown without code blocks, code spans and link targets: the words a learner reads."""
    text = re.sub(r"```.*?```", " ", markdown, flags=re.S)
    text = re.sub(r"`[^`]*`", " ", text)
    return re.sub(r"\]\([^)]*\)", "]", text)


def missing(path: Path) -> list[str]:
    """One line per term whose first use in this notebook lacks the Chinese name."""
    cells = [(i, c.source) for i, c in enumerate(nbformat.read(path, as_version=4).cells)
             if c.cell_type == "markdown"]
    found = []
    for forms, chinese in terms():
        pattern = re.compile(r"\b(" + "|".join(re.escape(f) for f in forms) + r")\b", re.I)
        first = next(((i, src) for i, src in cells if pattern.search(prose(src))), None)
        if first and chinese not in first[1]:
            word = pattern.search(prose(first[1])).group(0)
            found.append(f"{path.name[:2]} [{first[0]}] {word!r} needs {chinese}")
    return found


def main(argv: list[str]) -> int:
    notebooks = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    chosen = [p for p in notebooks if not argv or p.name[:2] in argv]
    problems = [line for path in chosen for line in missing(path)]
    print("\n".join(problems) or "every first use carries its Chinese name")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
