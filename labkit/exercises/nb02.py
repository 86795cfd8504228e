"""Exercises for notebook 02 · Tokens, windows and profiles.

The checkers compute the right answer from the data set and the installed deepagents when they
run, so they stay right if the data is regenerated or deepagents changes its rule.
"""

from __future__ import annotations

from deepagents.middleware.filesystem import NUM_CHARS_PER_TOKEN

from labkit import scenario
from labkit.exercises.core import Exercise, whole_number
from labkit.tokens import approx_tokens, count_tokens

__all__ = ["q1", "q2"]

EVICT_TOKENS = 20_000  # "big" means more than this many real (BPE) tokens, deepagents' default


def _names() -> dict:
    """The names notebook 02 has defined by its exercises."""

    exports = {c["ticker"]: scenario.export_text(c["ticker"]) for c in scenario.companies()}
    return {"scenario": scenario, "count_tokens": count_tokens, "approx_tokens": approx_tokens,
            "exports": exports, "NUM_CHARS_PER_TOKEN": NUM_CHARS_PER_TOKEN}


@whole_number("a whole number of tokens")
def _check_q1(answer: int) -> str | None:
    text = scenario.news_text("FERN", "zh")
    real, guess = count_tokens(text), approx_tokens(text)
    if answer == real - guess:
        return None
    if answer == guess - real:
        return "right size, wrong sign: chars/4 *under*counts Chinese, so give a positive number"
    if answer == real:
        return f"{answer:,} is the real BPE count; now subtract what chars/4 estimates"
    if answer == guess:
        return f"{answer:,} is the chars/4 estimate; the question asks how many tokens it misses"
    if answer == count_tokens(text, "cl100k_base") - guess:
        return "you counted with cl100k_base; use labkit's default ruler, o200k_base"
    return (f"{answer:,} is not the gap between count_tokens and approx_tokens on "
            "scenario.news_text('FERN', 'zh')")


@whole_number("a whole number of tokens")
def _check_q2(answer: int) -> str | None:
    if answer <= 0:
        return "a limit of 0 or less switches eviction off altogether; pick a positive limit"
    exports = {c["ticker"]: scenario.export_text(c["ticker"]) for c in scenario.companies()}
    big = {t for t, text in exports.items() if count_tokens(text) > EVICT_TOKENS}
    evicted = {t for t, text in exports.items() if len(text) > NUM_CHARS_PER_TOKEN * answer}
    if missed := sorted(big - evicted):
        sizes = ", ".join(f"{t} ({len(exports[t]):,} chars, {count_tokens(exports[t]):,} tokens)"
                          for t in missed)
        return (f"with {answer:,} deepagents keeps {sizes} inline, though they are over "
                f"{EVICT_TOKENS:,} real tokens: lower the limit")
    if extra := sorted(evicted - big):
        sizes = ", ".join(f"{t} ({len(exports[t]):,} chars, {count_tokens(exports[t]):,} tokens)"
                          for t in extra)
        return (f"with {answer:,} deepagents also evicts {sizes}, under {EVICT_TOKENS:,} real "
                "tokens: raise the limit")
    return None


q1 = Exercise(
    prompt="How many tokens does the chars/4 estimate miss on Fernhollow Labs' Chinese news "
           "digest, scenario.news_text('FERN', 'zh')? (real BPE count minus the estimate)",
    checker=_check_q1,
    hints=[
        "Two rulers: `count_tokens(text)` (real BPE) and `approx_tokens(text)` (chars/4).",
        "The answer is positive: chars/4 sees fewer tokens than there are.",
    ],
    solution_text=("text = scenario.news_text('FERN', 'zh')\n"
                   "answer = count_tokens(text) - approx_tokens(text)"),
    given=_names,
)

q2 = Exercise(
    prompt="deepagents evicts a tool result when len(text) > NUM_CHARS_PER_TOKEN * "
           "tool_token_limit_before_evict. Find a tool_token_limit_before_evict for which that "
           f"rule evicts exactly the exports that are over {EVICT_TOKENS:,} real (BPE) tokens.",
    checker=_check_q2,
    hints=[
        "The rule compares characters: an export is evicted when len(text) > 4 * limit.",
        f"The smallest export over {EVICT_TOKENS:,} tokens must be evicted, the largest one under "
        "it must stay: the limit lies between their lengths divided by 4.",
        "Take the length of the shortest big export, subtract 1, and integer-divide by 4.",
    ],
    solution_text=(
        "big = [t for t in exports if count_tokens(exports[t]) > 20_000]\n"
        "answer = (min(len(exports[t]) for t in big) - 1) // NUM_CHARS_PER_TOKEN"
    ),
    given=_names,
)
