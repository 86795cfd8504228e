"""Used by: ``labkit.model.behaviour`` (outside the lab scenario only).

A generic prompt that names what a bound tool does gets a call to it (issue 10): the tool whose
name or description summary shares the most words with the prompt — common words ignored — and
arguments copied from the prompt. The first text argument gets the prompt's quoted text, else its
capitalised phrase ("What is the weather in San Francisco, CA?" -> ``"San Francisco, CA"``);
number arguments get the prompt's numbers in order; any other required argument a placeholder.

What it leaves out: understanding. It matches words, so "weather" in the prompt calls a weather
tool whatever was asked about it; a prompt that shares no word with a tool still gets the intro.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["named_tool", "prose_args"]

# Words too common to say what a tool does (a prompt's and a docstring's glue).
COMMON = frozenset(
    "a an and are at be by can do does for from get give has have how i in is it its me my new "
    "of on or please set show some tell that the this to tool use what when where which who why "
    "will with you your".split()
)
# a single quote opens and closes only outside a word: the apostrophe of "user's" quotes nothing
QUOTED = re.compile(r"(?<!\w)'([^']+)'(?!\w)|\"([^\"]+)\"|“([^”]+)”|「([^」]+)」")
PHRASE = re.compile(r"\b[A-Z][\w'-]*(?:(?:,\s+|\s+)[A-Z][\w'-]*)*")  # "San Francisco, CA"
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _words(text: str) -> set[str]:
    """Lower-case words of 3 or more letters, a plural ``s`` dropped, common words left out."""
    found = {w.lower() for w in re.findall(r"[^\W\d_]{3,}", text)}
    return {w[:-1] if w.endswith("s") and len(w) > 3 else w for w in found} - COMMON


def _what_it_does(schema: dict) -> set[str]:
    """The words of a tool's name and of its description's first sentence."""
    fn = schema["function"]
    summary = re.split(r"(?<=\.)\s|\n\s*\n", fn.get("description", "").strip(), maxsplit=1)[0]
    return _words(fn["name"].replace("_", " ") + " " + summary)


def _phrases(prompt: str) -> list[str]:
    """Runs of capitalised words, less a sentence's first word ("What", "Please")."""
    found = []
    for m in PHRASE.finditer(prompt):
        text = m.group()
        if not prompt[: m.start()].strip() or prompt[: m.start()].rstrip()[-1] in ".!?":
            text = re.sub(r"^\S+,?\s*", "", text)
        if text:
            found.append(text)
    return found


def named_tool(prompt: str, tools: list[dict]) -> dict | None:
    """The bound tool whose name or description shares the most words with ``prompt`` (the
    first bound on a tie), or ``None`` if none shares any. Notebook 01."""
    asked = _words(prompt)
    scored = [(len(_what_it_does(t) & asked), -i, t) for i, t in enumerate(tools)]
    best = max(scored, key=lambda s: s[:2], default=None)
    return best[2] if best and best[0] else None


def prose_args(schema: dict, prompt: str, placeholder: Any) -> dict:
    """Arguments copied from ``prompt`` (rules in the module docstring); ``placeholder(name,
    prop)`` fills a required argument the prompt gives nothing for. Notebook 01."""
    params = schema["function"].get("parameters", {})
    quoted = [next(g for g in m.groups() if g) for m in QUOTED.finditer(prompt)]
    phrases = quoted or _phrases(prompt)
    numbers = NUMBER.findall(prompt)
    args: dict[str, Any] = {}
    for name, prop in params.get("properties", {}).items():
        kind = prop.get("type")
        if kind == "string" and phrases:
            args[name] = phrases[0]
            phrases = []  # only the first text argument
        elif kind in ("integer", "number") and numbers:
            value = numbers.pop(0)
            args[name] = int(float(value)) if kind == "integer" else float(value)
        elif name in params.get("required", []):
            args[name] = placeholder(name, prop)
    return args
