"""Exercises for notebook 07 · Summarization knobs.

q1 is a design task on the no-profile trap: on a 128,000-token model with no profile, labkit's
``SummarizeMiddleware`` falls back to a ``("tokens", 170_000)`` trigger, above the window, and a
request is refused before the trigger ever fires. The learner writes the knobs (a dict of
``trigger``, ``keep``, ``window``). The window is not the bar: the checker holds the trigger to
deepagents' input budget, ``int(window * 0.95) - max_output_tokens`` (117,504 tokens here), the
most deepagents lets a request carry, keeping a 5% margin and room for the answer. It refuses a
trigger at or above that budget (even if this one run happens to slip through), then runs the
scenario: no refused call, no "overflow" event.
"""

from __future__ import annotations

from functools import lru_cache

from labkit import LabModel, scenario
from labkit._sizes import size_threshold
from labkit.exercises.core import Exercise
from labkit.summarize import SummarizeMiddleware, events_of

__all__ = ["BUDGET", "WINDOW", "outcome", "q1"]

WINDOW = 128_000
FALLBACK = 170_000
KNOBS = ("trigger", "keep", "window")
HEADROOM = 0.95  # deepagents' SummarizationMiddleware._input_budget keeps 5% of the window free
ANSWER = LabModel.model_fields["max_output_tokens"].default  # the tokens the model may answer with
BUDGET = int(WINDOW * HEADROOM) - ANSWER
"""deepagents' input budget for a 128,000-token window and the lab model's 4,096 output tokens."""


def _bare() -> LabModel:
    return LabModel(window=WINDOW, profile=None)


@lru_cache(maxsize=64)
def outcome(knobs: tuple) -> dict:
    """What a run of the scenario did under ``SummarizeMiddleware(no-profile 128k model, **knobs)``
    (``knobs`` as sorted ``(name, value)`` pairs): the refused calls ``(call, tokens)``, the
    reasons of its compactions, and whether it finished. Notebook 07."""

    model = _bare()
    run = scenario.run(model, middleware=[SummarizeMiddleware(model, **dict(knobs))])
    return {"refused": [(r.index, r.seen) for r in run.records if r.error],
            "reasons": [e.reason for e in events_of(run.state)],
            "finished": run.error is None and run.score.goal_completed}


def _names() -> dict:
    """The names notebook 07 has imported by its exercise."""

    return {"scenario": scenario, "LabModel": LabModel, "SummarizeMiddleware": SummarizeMiddleware}


def _check_q1(answer) -> str | None:
    if isinstance(answer, (tuple, list)):
        return (f"answer with a dict of knobs, such as {{'trigger': {tuple(answer)!r}}}, "
                f"not the bare {type(answer).__name__}")
    if not isinstance(answer, dict):
        return f"answer with a dict of knobs, such as {{'trigger': ('tokens', n)}}, not {answer!r}"
    unknown = sorted(set(answer) - set(KNOBS))
    if unknown:
        return f"the knobs here are trigger, keep and window; {', '.join(map(repr, unknown))} is not one"
    try:
        middleware = SummarizeMiddleware(_bare(), **answer)
    except (ValueError, TypeError) as error:
        return f"labkit refuses to build the middleware with these knobs: {error}"
    if middleware.trigger[0] == "messages":
        return ("a ('messages', n) trigger counts messages, not tokens: it cannot promise that a "
                "request fits the window (section 1: that run's largest request came before it ever "
                "compacted). Give the trigger in tokens, or as a fraction with window=")
    fires_at = size_threshold(middleware.trigger, middleware.window)
    what = "the fallback trigger" if "trigger" not in answer else "your trigger"
    told = (f" (you told the middleware window={middleware.window:,}, but the model's window is "
            f"{WINDOW:,})" if "window" in answer and middleware.window != WINDOW else "")
    rule = (f"Set the trigger below {BUDGET:,} tokens, deepagents' input budget: int({WINDOW:,} * "
            f"{HEADROOM}) = {int(WINDOW * HEADROOM):,}, the window less a 5% margin, minus the "
            f"{ANSWER:,} tokens the model may write in its answer")
    if fires_at > WINDOW:
        said = outcome(tuple(sorted(answer.items())))
        if said["refused"]:
            call, tokens = said["refused"][0]
            seen = (f"in this run call {call} asked for {tokens:,} tokens — over the window, under the "
                    "trigger — so it was sent uncompacted, refused, and only the overflow fallback "
                    "saved the run")
        else:
            seen = ("this run slipped through only because no request happened to land between the "
                    f"window and {fires_at:,}; with slightly different exports one would, and it "
                    "would be sent uncompacted and refused")
        return (f"{what} fires at {fires_at:,} tokens, above the model's {WINDOW:,}-token window{told}: "
                f"{seen}. {rule}")
    if fires_at >= BUDGET:
        return (f"{what} fires at {fires_at:,} tokens{told}: under the {WINDOW:,}-token window, but at "
                f"or above the input budget. The window is not the bar: a request just under "
                f"{fires_at:,} tokens would leave no room for the answer and no margin for a count "
                f"that is off, and deepagents compacts any request over its budget. {rule}")
    said = outcome(tuple(sorted(answer.items())))
    if said["refused"]:
        call, tokens = said["refused"][0]
        return (f"the trigger is under the window, yet call {call} asked for {tokens:,} tokens and was "
                "refused: after a compaction what is kept must also fit — keep less")
    if "overflow" in said["reasons"]:
        return "the overflow fallback had to compact: keep less, so that a compaction leaves room"
    if not said["finished"]:
        return "the run did not finish its task with these knobs"
    return None


q1 = Exercise(
    prompt=f"A model with no profile and a {WINDOW:,}-token window: SummarizeMiddleware's fallback "
           f"trigger ('tokens', {FALLBACK:_}) lets a request be refused. Design the knobs — a dict "
           "such as {'trigger': ('tokens', n)}, with keep= and window= if you like — so that no "
           "request is ever refused and the overflow fallback is never needed, with room left for the "
           "answer and a margin.",
    checker=_check_q1,
    hints=[
        "The model refuses a request only when it is over its window. The trigger is tested on the "
        "request about to be sent, before it goes out. So which requests does the middleware let "
        "through uncompacted — and can any of them be over the window?",
        "Every request that is sent uncompacted is under the trigger. Put the trigger below the "
        "window and none of them can be over it — but leave room for the answer and a margin, as "
        "deepagents does: it keeps every request under int(window * 0.95) - max output tokens "
        "(bare.max_output_tokens). A ('tokens', n) trigger needs no profile; a fraction needs "
        "window= first.",
        f"The budget is int({WINDOW:_} * {HEADROOM}) - {ANSWER:_} = {BUDGET:_} tokens. For instance "
        "{'trigger': ('tokens', 100_000)}, or tell the middleware the window and use the defaults' "
        "fractions: {'window': 128_000, 'trigger': ('fraction', 0.85), 'keep': ('fraction', 0.10)} "
        f"fires at {int(WINDOW * 0.85):_}.",
    ],
    solution_text=(
        f"# the trigger below deepagents' input budget, {BUDGET:_} tokens (the {WINDOW:,} window\n"
        f"# less a 5% margin and the {ANSWER:,} answer tokens): any request it lets through fits,\n"
        "# with room left for the answer\n"
        "answer = {'trigger': ('tokens', 100_000), 'keep': ('messages', 6)}\n"
        "# or: answer = {'window': 128_000, 'trigger': ('fraction', 0.85), 'keep': ('fraction', 0.10)}"
    ),
    given=_names,
)
