"""Exercises for notebook 02 · Tokens, windows and profiles.

q1 is a configuration: the profile to give a model whose real window is 60,000 tokens, on the
scenario's CSV. The checker runs the scenario under ``create_deep_agent`` on a lab model that
refuses above 60,000 tokens and carries the learner's profile, and reads the run: a refused
request, a compaction long before the window is near, or a run that did not finish. It runs the
installed deepagents, so it stays right if deepagents changes its trigger or its estimate.
"""

from __future__ import annotations

import numbers

from deepagents.backends import StateBackend
from deepagents.middleware.summarization import (
    compute_summarization_defaults,
    create_summarization_middleware,
)

from labkit import LabModel, scenario, trace
from labkit.exercises.core import Exercise

__all__ = ["q1"]

REAL_WINDOW = 60_000  # what the provider documents, and what the lab model refuses above


def _positive_whole(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value > 0


def _first_compaction(run) -> int | None:
    return next((r.index for r in run.records if r.by_kind["summary"] > 0), None)


def _check_q1(answer) -> str | None:
    if not isinstance(answer, dict):
        return f"give the profile as a dict, such as {{'max_input_tokens': ...}}, not {answer!r}"
    if "max_input_tokens" not in answer:
        return ("the profile has no 'max_input_tokens': deepagents cannot know the window and falls "
                "back to its 170,000-token trigger, which a 60,000-token model never reaches")
    for key in ("max_input_tokens", "max_output_tokens"):
        if key in answer and not _positive_whole(answer[key]):
            return f"profile[{key!r}] must be a positive whole number of tokens, not {answer[key]!r}"
    model = LabModel(window=REAL_WINDOW, profile=dict(answer))
    try:
        run = scenario.run(model, harness="deep", recorder=trace.Recorder(keep_requests=True))
    except Exception as e:  # noqa: BLE001 — report what the profile made deepagents do, in words
        return f"with this profile the deep agent could not even run: {type(e).__name__}: {e}"
    declared = answer["max_input_tokens"]
    if refused := next((r for r in run.records if r.error), None):
        deep = create_summarization_middleware(model, StateBackend())
        estimate = deep.token_counter([refused.request.system, *refused.request.messages],
                                      tools=refused.request.tools)
        kind, value = compute_summarization_defaults(model)["trigger"]
        trigger = int(declared * value) if kind == "fraction" else value
        return (f"call {refused.index} was refused: with max_input_tokens={declared:,} deepagents "
                f"compacts at {trigger:,} tokens by its estimate, and it estimated this request at "
                f"{estimate:,}, so it sent it; "
                f"the model counted {refused.seen:,}, over its {REAL_WINDOW:,}-token window. "
                "On CSV chars/4 sees under half the tokens: declare less"
                + (" (a profile's max_output_tokens does not enter deepagents' budget: it reads the "
                   "model's own max_tokens settings)" if "max_output_tokens" in answer else ""))
    if run.error is not None or not run.score.goal_completed:
        return f"no request was refused, but the run did not finish its work: {run.score}"
    first = _first_compaction(run)
    before = max((r.seen for r in run.records[:first]), default=0) if first is not None else None
    if before is not None and before < REAL_WINDOW // 2:
        return (f"deepagents compacted at call {first}, when the model had seen at most {before:,} "
                f"tokens, under half its {REAL_WINDOW:,}-token window: with max_input_tokens="
                f"{declared:,} you pay for summaries, and lose details, long before the window is near;"
                " declare more")
    return None


q1 = Exercise(
    prompt=f"Write the profile (a dict) for an OpenAI-compatible model whose real window is "
           f"{REAL_WINDOW:,} tokens, so that under create_deep_agent the scenario runs with no "
           "request refused, and without compacting before the model has seen half its window.",
    checker=_check_q1,
    hints=[
        "{'max_input_tokens': 60_000} tells the truth and still gets a request refused (section 6 "
        "shows why: the trigger is compared with chars/4, which sees under half of a CSV's tokens). "
        "The profile is yours to write: declare the window deepagents should plan for.",
        "deepagents compacts once its estimate passes 85% of max_input_tokens, and on this CSV "
        "the estimate is about half what the model counts (section 6's table: estimate beside "
        "the count). So a declared window between about half and 85% of the real one compacts "
        "in time; far less, and it compacts a context of a few thousand tokens.",
    ],
    solution_text="answer = {'max_input_tokens': 40_000}  # any value from about 22,500 to 52,500 works",
)
