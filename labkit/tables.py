"""Small tables for notebooks: a list of dicts in, an object that renders as HTML out.

Notebook 01 introduces them; every notebook shows its results as tables rather than prints.
:func:`message_row` makes one message a row, for the "what the model saw" tables (notebook 04).
What it leaves out: a pandas dependency, sorting and filtering, any styling beyond
right-aligned numbers.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from labkit._sizes import check_count
from labkit.tokens import message_text
from labkit.trace import kind_of

__all__ = ["Table", "message_row", "table"]


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


_NONE = object()  # a row without the column: an empty cell, left-aligned
# Text: a long name with no space (a knob's code) may break anywhere rather than widen the table
# past a panel's edge.
_LEFT = "text-align:left;overflow-wrap:anywhere"


def _td(value: Any) -> str:
    """One HTML cell: a number right-aligned (a plain int, float or bool's text has nothing to
    escape: a slider's events table is mostly numbers), anything else left-aligned and escaped."""
    if type(value) in (int, float, bool):
        return f"<td style='text-align:right'>{_cell(value)}</td>"
    if value is _NONE:
        return f"<td style='{_LEFT}'></td>"
    if isinstance(value, (int, float)):
        return f"<td style='text-align:right'>{html.escape(_cell(value))}</td>"
    return f"<td style='{_LEFT}'>{html.escape(_cell(value))}</td>"


class Table:
    """Rows of dicts, shown as an HTML table in Jupyter and as aligned text elsewhere. Notebook 01."""

    def __init__(self, rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None):
        self.rows = [dict(r) for r in rows]
        self.columns = list(columns or dict.fromkeys(k for r in self.rows for k in r))

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, name: str) -> list[Any]:
        """One column's values, row by row (``KeyError`` naming the columns if it has none such)."""
        if name not in self.columns:
            raise KeyError(f"no column {name!r}; columns are {self.columns}")
        return [r.get(name) for r in self.rows]

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(_td(r.get(c, _NONE)) for c in self.columns) + "</tr>"
                       for r in self.rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def __str__(self) -> str:
        cells = [[_cell(r.get(c, "")) for c in self.columns] for r in self.rows]
        widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(self.columns)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(self.columns, widths))]
        lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
        return "\n".join(lines)

    __repr__ = __str__


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> Table:
    """Make a :class:`Table` from a list of dicts (columns default to the keys, in order).
    Notebook 01."""
    return Table(rows, columns)


def message_row(message: BaseMessage, width: int | None = None) -> dict[str, str]:
    """One message as a table row: its ``kind`` (``trace.kind_of``, so a summary reads "summary")
    and its ``content`` — what it says, or the tool calls it makes as ``name({args})`` — on one
    line (newlines become spaces), cut after ``width`` characters with " …" (``None``: whole).
    Notebook 04.

    Example:
        >>> # table([message_row(m) for m in run.messages[-4:]])
        >>> # table([{"position": i, **message_row(m, width=90)} for i, m in enumerate(request.messages)])
    """
    check_count("width", width, "characters", allow_none=True)
    calls = "; ".join(f"{tc['name']}({tc['args']})" for tc in getattr(message, "tool_calls", None) or [])
    text = (calls or message_text(message, text_only=True)).replace("\n", " ")
    if width is not None and len(text) > width:
        text = text[:width] + " …"
    return {"kind": kind_of(message), "content": text}
