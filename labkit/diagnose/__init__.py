"""The diagnostic clinic: symptom → cause → remedy, a diagnosis of a recorded run, and every failure
mode on cue. Notebook 16 introduces it; it gathers what notebooks 01–14 taught.

Here: :func:`diagnose` and the thresholds it reads (change one, and the next call uses it), and
:func:`reproduce` / :func:`fix`, which run a failure mode or its remedy as a :class:`Case`. The
parts: ``rows`` (the table as data, English and Chinese), ``findings`` (the detectors and the
report), ``recipes`` (how each failure mode is made). Every name is importable from here.

What it leaves out: judgement — the detectors read numbers and the shape of replies, never a
real model's meaning. They read a run's records, messages and files — any model's run, saved and
loaded too (``scenario.load_run``) — except two that read the running example: ``needle_lost``
(its needle question) and ``repeated_work``'s per-company count (elsewhere: identical calls).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from labkit import scenario
from labkit.diagnose.findings import Finding, detect, report
from labkit.diagnose.limits import WHEN_NOT, When, when_not
from labkit.diagnose.recipes import FIXES, LABELS, MODES, NaiveCut, recipe, run_recipe
from labkit.diagnose.rows import ROWS, Knob, Row, Text, row, table
from labkit.tables import Table

__all__ = [
    "CACHE_MIN_TOKENS",
    "CACHE_READ_SHARE",
    "COST_GROWTH",
    "COST_MIN_TOKENS",
    "FIXES",
    "LABELS",
    "MODES",
    "RAW_REPLY_TOKENS",
    "ROWS",
    "TAX_MIN_TOKENS",
    "TAX_SHARE",
    "THRESHOLDS",
    "WHEN_NOT",
    "Case",
    "Finding",
    "Knob",
    "NaiveCut",
    "Row",
    "Text",
    "When",
    "compare",
    "diagnose",
    "fix",
    "recipe",
    "report",
    "reproduce",
    "row",
    "table",
    "when_not",
]

# -- thresholds: below them a run is not flagged ---------------------------------------------------

COST_MIN_TOKENS = 1_000_000
"""Cost blow-up: a run that sends fewer input tokens than this is cheap, whatever its shape."""
COST_GROWTH = 20
"""Cost blow-up: the average call carries at least this many times the first call's tokens."""
TAX_SHARE = 0.40
"""Tool-schema tax: schemas are at least this share of all the tokens sent..."""
TAX_MIN_TOKENS = 100_000
"""...and at least this many schema tokens over the run: a tenth of what makes a run's cost a
blow-up (``COST_MIN_TOKENS``). Below it, trimming tools saves cents, and a run that offloading
already keeps small (the course's recommended setting: ~20,000 at every window) is not flagged
for the schemas it still has to send."""
RAW_REPLY_TOKENS = 2_000
"""Raw dump: a ``task`` reply longer than this is raw data, not a report (reports are ~100)."""
CACHE_READ_SHARE = 0.10
"""Cache thrash: a prompt cache could serve less than this share of the input of the calls after
the first (OpenAI's rule, ``labkit.caching``) — next to nothing: a start that changes every call
reads 0%, an agent that only appends 80-90%, one that compacts every few calls about 20%..."""
CACHE_MIN_TOKENS = 50_000
"""...over calls that carried at least this many input tokens in all: below it, a cache saves
cents."""

THRESHOLDS = {
    "COST_MIN_TOKENS": "cost blow-up: tokens sent over the run, at least",
    "COST_GROWTH": "cost blow-up: average call ÷ first call, at least",
    "TAX_SHARE": "tool-schema tax: share of the tokens sent, at least",
    "TAX_MIN_TOKENS": "tool-schema tax: schema tokens over the run, at least",
    "RAW_REPLY_TOKENS": "raw dump: tokens in one task reply, more than",
    "CACHE_READ_SHARE": "cache thrash: share of the input a prompt cache could serve, below",
    "CACHE_MIN_TOKENS": "cache thrash: input tokens of the calls after the first, at least",
}
"""Each threshold's name and meaning; notebook 16 shows them as a table."""


def diagnose(run, model=None) -> list[Finding]:
    """What went wrong in a recorded ``scenario.Run``, one :class:`Finding` per symptom seen.
    Notebook 16.

    ``model`` (the chat model the run used) is needed for one symptom only: the no-profile trap,
    which a run's records cannot show by themselves. Nothing found: an empty list. The thresholds
    are read when it is called, so ``diagnose.COST_GROWTH = 30`` changes the next diagnosis.

    Example:
        >>> # diagnose(scenario.run(LabModel(window=128_000)))[0].key
        >>> # 'hard_overflow'
    """
    limits = {"COST_MIN_TOKENS": COST_MIN_TOKENS, "COST_GROWTH": COST_GROWTH, "TAX_SHARE": TAX_SHARE,
              "TAX_MIN_TOKENS": TAX_MIN_TOKENS, "RAW_REPLY_TOKENS": RAW_REPLY_TOKENS,
              "CACHE_READ_SHARE": CACHE_READ_SHARE, "CACHE_MIN_TOKENS": CACHE_MIN_TOKENS}
    return detect(run, model, limits)


# -- the failure modes, on cue ---------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Case:
    """One run of a failure mode (``fixed=False``) or of its remedy: the run and its model.
    Notebook 16."""

    mode: str
    fixed: bool
    run: Any
    model: Any

    @cached_property
    def findings(self) -> list[Finding]:
        return diagnose(self.run, self.model)

    @property
    def window(self) -> int | None:
        return getattr(self.model, "window", None)

    @property
    def label(self) -> str:
        return f"{LABELS[self.mode]}, {'with the fix' if self.fixed else 'the failure'}"


def reproduce(mode: str) -> Case:
    """Run failure mode ``mode`` (one of :data:`MODES`) as the course first showed it. Notebook 16."""
    model, run = run_recipe(mode, False)
    return Case(mode, False, run, model)


def fix(mode: str) -> Case:
    """Run the same failure mode with its remedy applied. Notebook 16."""
    model, run = run_recipe(mode, True)
    return Case(mode, True, run, model)


def compare(*cases: Case) -> Table:
    """One row per case: calls, refusals, tokens sent, peak, goal, needle and its findings.
    Notebook 16."""
    rows = []
    for c in cases:
        ok, score = [r for r in c.run.records if not r.error], scenario.score(c.run)
        rows.append({"run": c.label, "model calls": len(c.run.records),
                     "refused calls": len(c.run.records) - len(ok),
                     "tokens sent": sum(r.seen for r in ok),
                     "peak": max((r.seen for r in c.run.records), default=0),
                     "goal completed": score.goal_completed, "needle": score.needle_correct,
                     "findings": ", ".join(f.key for f in c.findings) or "none"})
    return Table(rows)
