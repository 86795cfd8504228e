"""Each failure mode of the course on cue, and the same run with its remedy. Notebook 16, section 3.

A recipe is a function ``fixed -> (model, run)``: with ``fixed=False`` it runs the failure as its
notebook first showed it, with ``fixed=True`` the remedy, and the two differ only in the lines that
test ``fixed`` — :func:`recipe` returns the source to show that. :data:`MODES` names them in order,
:data:`LABELS` in words; :class:`NaiveCut` is notebook 08's unsafe cut, kept for the orphan recipe.

What it leaves out: diagnosis. ``labkit.diagnose.reproduce`` and ``fix`` wrap a recipe's run in a
``Case`` whose findings ``diagnose()`` reads. Every recipe runs offline on the LabModel.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from deepagents.backends import StateBackend
from deepagents.middleware.summarization import SummarizationMiddleware
from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware import SummarizationMiddleware as LangchainSummarization
from langchain_core.messages import HumanMessage

from labkit import evals, scenario
from labkit._sizes import check_count
from labkit.caching import StampedSystemPrompt
from labkit.isolate import IsolateMiddleware, SubagentSpec
from labkit.model import LabModel
from labkit.offload import OffloadMiddleware
from labkit.summarize import SummarizeMiddleware
from labkit.tokens import count_tokens

__all__ = ["LABELS", "MODES", "NAIVE_SUMMARY", "NaiveCut", "recipe", "run_recipe"]

NAIVE_SUMMARY = "Summary of the earlier conversation: the work so far."
"""The one line :class:`NaiveCut` shows in place of everything it cuts."""


class NaiveCut(AgentMiddleware):
    """Notebook 08's bug, kept for notebook 16's clinic: above ``trigger`` messages, show the model
    a one-line summary and the last ``keep`` messages, wherever that cut falls."""

    name = "labkit.NaiveCut"

    def __init__(self, trigger: int = 8, keep: int = 5) -> None:
        super().__init__()
        for knob, n in (("trigger", trigger), ("keep", keep)):
            check_count(knob, n, "messages")
        if keep >= trigger:
            raise ValueError(f"keep ({keep}) must be below trigger ({trigger})")
        self.trigger, self.keep = trigger, keep

    def wrap_model_call(self, request, handler):
        messages = list(request.messages)
        if len(messages) > self.trigger:
            request = request.override(messages=[HumanMessage(NAIVE_SUMMARY), *messages[-self.keep:]])
        return handler(request)


# -- the recipes: fixed -> (model, run) ------------------------------------------------------------


def _hard_overflow_recipe(fixed: bool):
    """Notebook 01's naive run on a 128k window; the fix offloads big results (notebook 04)."""
    model = LabModel(window=128_000)
    middleware = [OffloadMiddleware()] if fixed else []
    return model, scenario.run(model, middleware=middleware)


def _no_profile_recipe(fixed: bool):
    """Notebook 02: create_deep_agent on a 100k model with no profile (fallback trigger 170,000
    tokens); the fix passes deepagents' SummarizationMiddleware a trigger in tokens and, like
    deepagents' factory, no trim."""
    model = LabModel(window=100_000, profile=None)
    middleware = [SummarizationMiddleware(model, backend=StateBackend(), trigger=("tokens", 50_000),
                                          keep=("messages", 6), trim_tokens_to_summarize=None)
                  ] if fixed else []
    return model, scenario.run(model, middleware=middleware, harness="deep")


def _goal_lost_recipe(fixed: bool):
    """Notebook 14: deepagents' SummarizationMiddleware built directly, every 8 messages, keep 4
    (its constructor's 4,000-token trim), a user who repeats the request; the fix: a todo list."""
    model = LabModel(window=1_000_000)
    return model, evals.forced_compaction("todo" if fixed else "none", trigger=8, keep=4, model=model)


def _needle_lost_recipe(fixed: bool):
    """Notebook 10: langchain's SummarizationMiddleware rewrites state and keeps no archive; the
    fix is labkit's, which archives what it folds and names the path in the summary."""
    model = LabModel(window=128_000)
    middleware = SummarizeMiddleware(model) if fixed else LangchainSummarization(
        model, trigger=("fraction", 0.85), keep=("fraction", 0.10), token_counter=count_tokens,
        trim_tokens_to_summarize=None)
    return model, scenario.run(model, middleware=[middleware])


def _cost_blowup_recipe(fixed: bool):
    """Notebook 01: on a 1,000,000-token model the naive run fits, and re-sends every export on
    every call; the fix offloads them (notebook 04)."""
    model = LabModel(window=1_000_000)
    middleware = [OffloadMiddleware()] if fixed else []
    return model, scenario.run(model, middleware=middleware)


def _tool_tax_recipe(fixed: bool):
    """Notebook 06 at a real toolbox's size: the recommended setting (three file tools, offloading at
    8,000 tokens, then summarization: ``evals.Setting``'s defaults) on an agent also handed thirty
    company tools it never calls (``scenario.Toolbox``), so their schemas ride on every call; the
    fix sends only the tools the task needs."""
    model = LabModel(window=128_000)
    middleware = evals.stack(evals.Setting("recommended"), model)
    return model, scenario.run(model, middleware=middleware if fixed else [scenario.Toolbox(), *middleware])


def _cache_thrash_recipe(fixed: bool):
    """Notebook 01: the course's recommended setting (three file tools, offloading at 8,000 tokens,
    then summarization) with the time of each call at the top of the system prompt, so no request
    begins as an earlier one did; the fix leaves the system prompt alone."""
    model = LabModel(window=128_000)
    middleware = evals.stack(evals.Setting("recommended"), model)
    stamped = [*middleware, StampedSystemPrompt()]
    return model, scenario.run(model, middleware=middleware if fixed else stamped)


def _orphan_recipe(fixed: bool):
    """Notebook 08: a hand-made compaction keeps the last 5 messages wherever that cuts; the fix
    is labkit's, whose cut moves back to the AI message that made the tool calls."""
    model = LabModel(window=128_000)
    middleware = SummarizeMiddleware(model, trigger=("messages", 8), keep=("messages", 5)
                                     ) if fixed else NaiveCut(trigger=8, keep=5)
    return model, scenario.run(model, middleware=[middleware])


def _raw_dump_recipe(fixed: bool):
    """Notebook 12: researcher subagents whose prompt sets no limit on the reply, so they return
    their raw data; the fix asks for a short report and the raw data in a file, named in it."""
    model = LabModel(window=128_000, delegate_research=True)
    spec = SubagentSpec(**scenario.researcher(limit=fixed, notes=fixed))
    return model, scenario.run(model, middleware=[IsolateMiddleware(model, [spec])],
                               turns=scenario.FANOUT_TURNS)


_RECIPES: dict[str, Callable[[bool], tuple]] = {
    "hard_overflow": _hard_overflow_recipe,
    "no_profile": _no_profile_recipe,
    "goal_lost": _goal_lost_recipe,
    "needle_lost": _needle_lost_recipe,
    "cost_blowup": _cost_blowup_recipe,
    "tool_tax": _tool_tax_recipe,
    "cache_thrash": _cache_thrash_recipe,
    "orphan": _orphan_recipe,
    "raw_dump": _raw_dump_recipe,
}
MODES = tuple(_RECIPES)
"""The failure modes, in the order notebook 16 visits them."""
LABELS = {"hard_overflow": "hard overflow", "no_profile": "no profile", "goal_lost": "soft amnesia",
          "needle_lost": "needle lost", "cost_blowup": "cost blow-up", "tool_tax": "tool-schema tax",
          "cache_thrash": "cache thrash",
          "orphan": "orphan tool message", "raw_dump": "raw subagent dump"}
"""Each mode in words, as the clinic's buttons show it (notebook 16)."""
FIXES = {"hard_overflow": "offload big results", "no_profile": "a trigger in tokens",
         "goal_lost": "a todo list", "needle_lost": "a summary that archives what it folds",
         "cost_blowup": "offload big results", "tool_tax": "only the tools the task needs",
         "cache_thrash": "a system prompt that stays the same",
         "orphan": "a cut that keeps tool calls with their results",
         "raw_dump": "subagents that reply with a short report"}
"""The remedy each mode's recipe applies with ``fixed=True``, in words, as the clinic's figure
titles name it (notebook 16)."""


def _recipe(mode: str) -> Callable[[bool], tuple]:
    if mode not in _RECIPES:
        raise ValueError(f"unknown failure mode {mode!r}; choose one of {', '.join(MODES)}")
    return _RECIPES[mode]


def run_recipe(mode: str, fixed: bool) -> tuple:
    """``(model, run)`` of failure mode ``mode`` (one of :data:`MODES`), with its remedy if
    ``fixed``. Notebook 16 calls it through ``diagnose.reproduce`` and ``diagnose.fix``."""
    return _recipe(mode)(fixed)


def recipe(mode: str) -> str:
    """The source of ``mode``'s recipe: what ``reproduce`` and ``fix`` run. Notebook 16."""
    return inspect.getsource(_recipe(mode))
