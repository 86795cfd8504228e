"""Exercises for notebook 06 · The cheapest trick: fewer tools.

The checker runs the scenario for real: ``create_deep_agent`` with the lab model at a
60,000-token window (the run whose needle must be read back from the archive), with the
learner's tools excluded through a deepagents ``HarnessProfile``. A right answer stops sending
every tool the run never calls — ``read_file`` may stay, as the fallback — and the run still
does all its work.
"""

from __future__ import annotations

from collections import Counter
from functools import cache

from deepagents import HarnessProfile, register_harness_profile

from labkit import LabModel, scenario
from labkit.exercises.core import Exercise
from labkit.model import PROVIDER
from labkit.tokens import count_tokens

__all__ = ["WINDOW", "q1"]

WINDOW = 60_000
FALLBACK = "read_file"  # may stay bound though unused: the way back into a file if grep is gone


@cache
def _run(excluded: frozenset[str]):
    """The 60k deep run with ``excluded`` hidden from the model; returns (run, model).

    A profile registration is process-wide and merges on re-registration, so each exclusion set
    gets a model name of its own and never leaks into another run.
    """

    name = "lab-model-nb06-q1" + "".join(f"-{n}" for n in sorted(excluded))
    if excluded:
        register_harness_profile(f"{PROVIDER}:{name}", HarnessProfile(excluded_tools=excluded))
    model = LabModel(window=WINDOW, model=name)
    return scenario.run(model, harness="deep"), model


def _called(run) -> Counter:
    return Counter(tc["name"] for m in run.messages if m.type == "ai" for tc in m.tool_calls)


def _tax(model) -> int:
    """Tool-schema tokens on the first call: what the model received minus the messages."""

    first = model.calls[0]
    return first.input_tokens - count_tokens(first.messages)


def _check_q1(answer) -> str | None:
    if isinstance(answer, str) or not isinstance(answer, (set, frozenset, list, tuple)) \
            or not all(isinstance(n, str) for n in answer):
        return (f"answer with a set of tool names to exclude, such as {{'ls', 'glob'}} "
                f"(not {answer!r})")
    excluded = frozenset(n.strip() for n in answer)
    base, base_model = _run(frozenset())
    bound = base_model.calls[0].tools
    unknown = sorted(excluded - set(bound))
    if unknown:
        return (f"{unknown} is not the name of a tool the agent is bound to, and deepagents "
                f"ignores an unknown name silently; the bound tools are {bound}")
    run, model = _run(excluded)
    called, wanted = _called(run), _called(base)
    for tool in ("fetch_market_data", "search_news"):
        if called[tool] < wanted[tool]:
            return (f"{tool} was called {called[tool]} times instead of {wanted[tool]}: the "
                    "report was written without the data it is about")
    score = run.score
    if not score.goal_completed:
        return f"the run did not finish its work: {'; '.join(score.missing) or score.error}"
    if not score.needle_correct:
        return ("the needle question was answered wrongly: after compaction the figure is only "
                "in the archive file, and without grep or read_file the model cannot read it back")
    idle = [n for n in model.calls[0].tools if not called[n] and n != FALLBACK]
    if idle:
        return (f"{idle} are still sent on every call and never called; this run pays "
                f"{_tax(model):,} tokens of tool schemas per call")
    return None


q1 = Exercise(
    prompt="Give the set of tool names to exclude with HarnessProfile(excluded_tools=...) so "
           f"that, on the deep run at a {WINDOW:,}-token window, no tool is sent that the run "
           "never calls (read_file may stay, as the fallback), while the report, the risks note "
           "and the needle still come out right.",
    checker=_check_q1,
    hints=[
        "Section 4's table lists, for every bound tool, how often the run called it.",
        "fetch_market_data, search_news and write_file do the work; the needle needs one way to "
        "read the archive back: grep, or read_file (section 7).",
        "Exclude every tool with 0 calls in the 60k column of section 4; you may keep read_file.",
    ],
    solution_text="answer = {'ls', 'edit_file', 'delete', 'glob', 'task'}  # read_file may go too",
)
