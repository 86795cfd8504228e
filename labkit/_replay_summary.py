"""The lab model's summaries in a replay, and their tokens counted piece by piece (``labkit.replay``).

A slider move replays dozens of folds; each needs its summary (written from per-message facts, kept
in the trajectory's memo by fold) and the tokens of the message that carries it. Those are counted
by pieces (``PIECES``) whose counts the memo keeps, so a cold move BPE-encodes only new lines, and
the carried message is counted as its head (which compaction, which archive) plus its tagged
summary, counted once per summary. What it leaves out: the decisions (``summarize.next_fold``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape

from langchain_core.messages import BaseMessage

from labkit.model import merge, summary_facts, write_summary
from labkit.summarize import Event, summary_parts, summary_prompt
from labkit.summarize.policy import prompt_text

__all__ = ["PIECES", "Memo", "by_pieces", "carried", "split_pieces", "summary", "xml_text"]

# Where a summary splits into pieces BPE counts apart: after a newline, before a character that is
# neither space nor "/". A pre-token of o200k (or cl100k) holds a newline only if it is all
# whitespace or punctuation followed by [\r\n/]*, so none spans such a boundary: the pieces' counts
# add up to the whole's (tests/test_replay.py checks every replayed summary), and the lines most
# summaries share are counted once (labkit._token_cache): a cold slider move counts only new lines.
PIECES = re.compile(r"(?<=\n)(?=[^\s/])")
_BREAKS = re.compile(r"\n(?=[^\s/])")  # the newline before each PIECES boundary


def split_pieces(text: str) -> list[str]:
    """``PIECES.split(text)``, found by the newlines that end each piece (a literal the regex
    engine searches for, where PIECES's look-behind is tried at every character)."""
    *whole, last = _BREAKS.split(text)
    return [piece + "\n" for piece in whole] + [last]


MEMO_SIZE = 4096  # folds, heads and carried counts kept before a long slider session starts again


@dataclass
class Memo:
    """What the replays of one trajectory remember (``replay.Trajectory.memo``): slider moves reuse it."""

    folds: dict = field(default_factory=dict)  # fold key (see summary) -> (summary, input, output tokens)
    heads: dict = field(default_factory=dict)  # event -> (tokens, facts) of the message a re-fold starts from
    templates: dict = field(default_factory=dict)  # keep_figures -> the summary prompt's own tokens
    pieces: dict = field(default_factory=dict)  # a piece of text (PIECES) -> its BPE tokens
    bodies: dict = field(default_factory=dict)  # a summary -> tokens of its tagged body
    carried: dict = field(default_factory=dict)  # event -> tokens of its summary message (carried)
    tails: dict = field(default_factory=dict)  # a summary -> its message's XML from its tags on (_head)

    def clear(self) -> None:
        """Forget everything."""
        for memo in (self.folds, self.heads, self.templates, self.pieces, self.bodies, self.carried,
                     self.tails):
            memo.clear()


def xml_text(message: BaseMessage) -> str:
    """A message as the summary prompt renders it."""
    return prompt_text(message)


def summary(t: Any, shown: list[BaseMessage], last: Event | None, cut: int,
            keep_figures: bool) -> tuple[str, int, int]:
    """The lab model's summary of ``shown[:cut]`` and the summary call's input and output tokens
    (``t`` is a ``replay.Trajectory``)."""
    first = last.cut if last else 0
    absolute = first + cut - (1 if last else 0)
    # the message a re-fold starts from names its compaction and archive too: a fold from the same
    # summary and cut under another archive knob reads other facts (an earlier slider move's)
    key = ((last.summary, last.number, last.archive) if last else None, first, absolute, keep_figures)
    memo = t.memo
    if key not in memo.folds:
        if len(memo.folds) + len(memo.heads) + len(memo.carried) > MEMO_SIZE:  # a long session: start again
            memo.clear()
        head_tokens, head_facts = _head(t, shown[0], last) if last else (0, [])
        template = memo.templates.get(keep_figures)
        if template is None:
            template = memo.templates[keep_figures] = t.counter.text(summary_prompt([], keep_figures)) + 3
        n_in = template + t.xml_prefix[absolute] - t.xml_prefix[first] + head_tokens
        folded = merge(head_facts + t.facts[first:absolute])
        text = write_summary(folded, keep_figures)
        memo.folds[key] = (text, n_in, by_pieces(t, text))
    return memo.folds[key]


def _head(t: Any, message: BaseMessage, last: Event) -> tuple[int, list]:
    """The tokens and facts of the summary message a re-fold starts from (``message``, made for
    ``last``), kept per event: every fold that starts from ``last`` reads the same message."""
    key = (last.summary, last.number, last.cut, last.archive)
    heads = t.memo.heads
    if key not in heads:
        heads[key] = _in_parts(t, message, last) or _whole(t, message)
    return heads[key]


def _whole(t: Any, message: BaseMessage) -> tuple[int, list]:
    text = xml_text(message)
    return by_pieces(t, text), [summary_facts(text)]


def _in_parts(t: Any, message: BaseMessage, last: Event) -> tuple[int, list] | None:
    """:func:`_whole` from two parts that meet at a newline: the message's XML up to its head's
    last line, and from the summary's tags on. Facts and PIECES add up across it (``merge``), and
    the second part, kept per summary, is shared by most events of a long record (new folds, the
    same summary); ``None`` where a part would not be plain text (``_whole`` then)."""
    head, body = summary_parts(last)
    if escape(head) != head or not head.endswith("\n\n"):
        return None
    if last.summary not in t.memo.tails:
        whole = xml_text(message)  # once per summary: the rendering it is checked against
        start, tail = whole[:whole.index(">") + 1], escape(body) + whole[whole.rindex("</"):]
        t.memo.tails[last.summary] = (start, tail, by_pieces(t, tail), summary_facts(tail)) \
            if whole == start + head + tail else None
    if t.memo.tails[last.summary] is None:
        return None
    start, _, tokens, facts = t.memo.tails[last.summary]
    first = start + head[:-1]  # then the newline where the two parts meet
    return by_pieces(t, first + "\n") + tokens, [summary_facts(first), facts]


def by_pieces(t: Any, text: str) -> int:
    """BPE tokens of ``text``, piece by piece (``PIECES``), each piece's count kept in the
    trajectory's memo, where the next slider move finds it."""
    lines = t.memo.pieces
    pieces = split_pieces(text)
    new = list(dict.fromkeys(p for p in pieces if p not in lines))
    if new:  # counted together: one hop to labkit's counting thread (labkit._encode_thread)
        lines.update(zip(new, t.counter.texts(new)))
    return sum(lines[piece] for piece in pieces)


def carried(t: Any, event: Event) -> int:
    """BPE tokens of the text of ``summarize.summary_message(event)``, without building it: its
    head ends in a newline and its body starts with "<", so ``PIECES`` splits the whole where the
    two meet and the counts add up; the body's count is kept per summary."""
    key = (event.summary, event.number, event.cut, event.archive)  # all the message is made of
    known = t.memo.carried.get(key)
    if known is None:
        head, body = summary_parts(event)
        bodies = t.memo.bodies
        if event.summary not in bodies:
            bodies[event.summary] = by_pieces(t, body)
        known = t.memo.carried[key] = by_pieces(t, head) + bodies[event.summary]
    return known
