"""The text of an offloaded file and of its stub: long lines wrapped, an end line, a numbered preview.

Used by: labkit.offload (which re-exports ``wrap_long_lines``, ``stored_text``, ``unwrap`` and
``preview``, notebook 04). :func:`evicted_text` makes the file and the line count and preview of
either stub (a tool result's, a human message's) without splitting the text into lines unless a
line may need wrapping: an evicted tool result is tens of thousands of characters, and counting
its lines, checking them for wrapping and previewing them used to split or scan it four times.
Same text, same stub (``tests/test_offload.py`` compares it with the plain functions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["END_MARK", "LINE_LIMIT", "WRAP_MARK", "evicted_text", "preview", "stored_text", "unwrap",
           "wrap_long_lines"]

LINE_LIMIT = 5_000  # read_file returns at most 80,000 characters at once: longer lines are wrapped
WRAP_MARK = " ↩"
END_MARK = "[end of offloaded content]"


def _wrapped(text: str, lines: list[str], limit: int) -> list[str] | None:
    """``text``'s lines (``lines``) with every long line split, or ``None``: nothing to wrap."""
    if max(map(len, lines)) <= limit and WRAP_MARK + "\n" not in text and not text.endswith(WRAP_MARK):
        return None  # nothing to wrap: no pass over its lines in Python
    out = []
    for line in lines:
        if len(line) <= limit and not line.endswith(WRAP_MARK):
            out.append(line)
            continue
        pieces = [line[i:i + limit] for i in range(0, len(line), limit)] or [""]
        if pieces[-1].endswith(WRAP_MARK) or len(pieces[-1]) == limit:
            pieces.append("")
        out.extend(p + WRAP_MARK for p in pieces[:-1])
        out.append(pieces[-1])
    return out


def wrap_long_lines(text: str, limit: int = LINE_LIMIT) -> str:
    """Split every line longer than ``limit`` characters; each piece but the last ends in
    ``WRAP_MARK``. Lines that already end in the mark are wrapped too, so :func:`unwrap` is exact.
    Notebook 04."""
    out = _wrapped(text, text.split("\n"), limit)
    return text if out is None else "\n".join(out)


def stored_text(text: str) -> str:
    """What goes into the file: long lines wrapped, then one ``END_MARK`` line. read_file shows
    lines, so without the end line a reader could not tell whether the text ended in a newline.
    Notebook 04."""
    return wrap_long_lines(text) + "\n" + END_MARK


def unwrap(text: str) -> str:
    """The exact original of a :func:`stored_text` (or :func:`wrap_long_lines`) result: drop the
    end line, and join each line ending in ``WRAP_MARK`` with the next. Notebook 04."""
    text = text.removesuffix("\n" + END_MARK)
    return text.replace(WRAP_MARK + "\n", "")


def _numbered(lines: Mapping[int, str] | Sequence[str], total: int, head: int, tail: int,
              line_chars: int) -> str:
    """The preview of a file of ``total`` lines, ``lines[i]`` holding at least each line shown."""
    shown = list(range(total)) if total <= head + tail else [*range(head), None, *range(total - tail, total)]
    width = len(str(total))
    out = []
    for i in shown:
        if i is None:
            out.append(f"... [{total - head - tail:,} lines not shown] ...")
            continue
        line = lines[i]
        more = len(line) - line_chars
        clipped = line[:line_chars] + (f" …[{more:,} more characters]" if more > 0 else "")
        out.append(f"{i + 1:>{width}}  {clipped}")
    return "\n".join(out)


def _edges(text: str, total: int, head: int, tail: int) -> dict[int, str]:
    """The first ``head`` and last ``tail`` lines of ``text`` (``total`` lines), by index, cut out
    by position: a long file is neither split whole nor copied."""
    lines: dict[int, str] = {}
    start = 0
    for i in range(min(head, total)):
        end = text.find("\n", start)
        lines[i] = text[start:] if end < 0 else text[start:end]
        start = end + 1
    end = len(text)
    for i in range(total - 1, max(total - tail, 0) - 1, -1):
        start = text.rfind("\n", 0, end) + 1
        lines[i] = text[start:end]
        end = start - 1
    return lines


def preview(text: str, head: int = 5, tail: int = 5, line_chars: int = 1000) -> str:
    """The first ``head`` and last ``tail`` lines, numbered as in the file, each clipped to
    ``line_chars`` characters, with a marker for the lines left out. Notebook 04."""
    total = text.count("\n") + 1
    return _numbered(_edges(text, total, head, tail), total, head, tail, line_chars)


def _may_wrap(text: str, limit: int = LINE_LIMIT) -> bool:
    """Whether :func:`wrap_long_lines` might change ``text``, without splitting it: ``False`` is
    exact. A line over ``limit`` characters covers a whole aligned block of ``(limit + 1) // 2``
    characters, so if each block holds a newline no line is too long; a line ending in
    ``WRAP_MARK`` needs its arrow somewhere in the text."""
    block = (limit + 1) // 2
    return WRAP_MARK.strip() in text or any(
        text.find("\n", p, p + block) < 0 for p in range(0, len(text) - block + 1, block))


def evicted_text(text: str, head: int, tail: int, line_chars: int = 1000) -> tuple[str, bool, int, str]:
    """``(stored_text(text), whether a line was wrapped, the stored file's lines, its preview)``."""
    if not _may_wrap(text):  # the common case: the file is the text and its end line, not split
        stored = text + "\n" + END_MARK
        total = text.count("\n") + 2
        return stored, False, total, _numbered(_edges(stored, total, head, tail), total, head, tail,
                                                 line_chars)
    lines = text.split("\n")
    out = _wrapped(text, lines, LINE_LIMIT)  # a list only when some line changed
    wrapped = out is not None
    stored = ("\n".join(out) if wrapped else text) + "\n" + END_MARK
    out = out if wrapped else lines  # this call's own list
    out.append(END_MARK)  # the stored file's lines
    return stored, wrapped, len(out), _numbered(out, len(out), head, tail, line_chars)
