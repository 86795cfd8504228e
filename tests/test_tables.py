"""labkit.tables: a list of dicts renders as a table, and a message becomes one row of the
"what the model saw" tables (notebooks 04, 09, 14).

Worked example (``test_message_row_clips_at_width_on_one_line``): a 12-character text at
``width=5`` keeps its first five characters and marks the cut with " …" — 7 characters in all; at
``width=12`` it is whole. "a,b\n1,2\n" at ``width=6`` is "a,b 1," and the mark: newlines become
spaces before the cut.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from labkit.tables import Table, message_row, table
from tests.conftest import ai_call


@pytest.mark.parametrize("message, row", [
    (HumanMessage("Research five companies."), {"kind": "human", "content": "Research five companies."}),
    (SystemMessage("Be brief."), {"kind": "system", "content": "Be brief."}),
    (ToolMessage("kpi,BRLM,nrr_q3,118%", tool_call_id="c1"),
     {"kind": "tool", "content": "kpi,BRLM,nrr_q3,118%"}),
    (AIMessage("The answer is 118%."), {"kind": "ai", "content": "The answer is 118%."}),
    (ai_call("grep", {"pattern": "nrr_q3", "path": "/a.md"}, "c2"),
     {"kind": "ai", "content": "grep({'pattern': 'nrr_q3', 'path': '/a.md'})"}),
    (HumanMessage("## SESSION INTENT", additional_kwargs={"lc_source": "summarization"}),
     {"kind": "summary", "content": "## SESSION INTENT"}),
], ids=["human", "system", "tool", "ai text", "ai tool call", "summary"])
def test_message_row_names_the_kind_and_what_it_says(message, row):
    assert message_row(message) == row


def test_message_row_lists_every_tool_call_and_reads_text_blocks():
    two = AIMessage("", tool_calls=[{"name": "read_file", "args": {"file_path": "/x"}, "id": "1"},
                                    {"name": "ls", "args": {}, "id": "2"}])
    assert message_row(two)["content"] == "read_file({'file_path': '/x'}); ls({})"
    blocks = AIMessage([{"type": "reasoning", "reasoning": "hidden"}, {"type": "text", "text": "shown"}])
    assert message_row(blocks)["content"] == "shown", "what the message says, not its reasoning"


def test_message_row_clips_at_width_on_one_line():
    text = HumanMessage("abcdefghijkl")
    assert message_row(text, width=5)["content"] == "abcde …"
    assert message_row(HumanMessage("a,b\n1,2\n"), width=6)["content"] == "a,b 1, …"
    assert message_row(text, width=12)["content"] == message_row(text)["content"] == "abcdefghijkl"


@pytest.mark.parametrize("width", [0, -3, 2.5, True, "90"])
def test_message_row_refuses_a_width_that_is_not_a_positive_count(width):
    with pytest.raises(ValueError, match="width must be a positive whole number of characters"):
        message_row(HumanMessage("hi"), width=width)


def test_a_table_shows_rows_as_text_and_html():
    t = table([{"call": 1, "tokens": 12_345, "refused": False}, {"call": 2, "share": 0.25}])
    assert isinstance(t, Table) and len(t) == 2 and t.columns == ["call", "tokens", "refused", "share"]
    assert str(t).splitlines()[1].split() == ["1", "12,345", "no"]
    assert "<td style='text-align:right'>12,345</td>" in t._repr_html_()
    assert t.column("share") == [None, 0.25]
    with pytest.raises(KeyError, match="no column 'cost'"):
        t.column("cost")


def test_html_cells_are_what_escaping_every_cell_gives():
    """``_repr_html_`` escapes only cells whose text can need it (not a plain int, float or bool):
    the HTML is what escaping and aligning every cell gives, for every kind of value, a missing
    column included."""
    import html
    from enum import IntEnum

    from labkit.tables import _cell

    class Level(IntEnum):
        LOW = 1

    class Odd(int):
        def __format__(self, spec):
            return "<&>"

    values = [0, -1_234_567, 3.5, -0.000123, 12_345.678, float("nan"), float("inf"), True, False, None,
              "", "a<b & 'c' \"d\"", "plain", Level.LOW, Odd(5), b"x", [1, "<"], 2**70]
    rows = [{"a": v, "b": w} for v in values for w in values[::3]] + [{"a": 1}, {"b": "<x>"}, {}]
    t = table(rows, columns=["a", "b", "c"])

    def reference(r, c):  # the former cell: every value aligned by its type and escaped
        number = isinstance(r.get(c), (int, float))
        return (f"<td style='{'text-align:right' if number else 'text-align:left;overflow-wrap:anywhere'}'>"
                f"{html.escape(_cell(r.get(c, '')))}</td>")

    body = "".join("<tr>" + "".join(reference(r, c) for c in t.columns) + "</tr>" for r in t.rows)
    head = "".join(f"<th>{c}</th>" for c in t.columns)
    assert t._repr_html_() == f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
