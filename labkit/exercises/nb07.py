"""Exercises for notebook 07 · Summarization knobs.

q1 is a design task on the no-profile trap: on a 128,000-token model with no profile, labkit's
``SummarizeMiddleware`` falls back to a ``("tokens", 170_000)`` trigger, above the window, and a
request is refused before the trigger ever fires. The learner writes the knobs (a dict of
``trigger``, ``keep``, ``window``) so that the trigger fires below the window — then no request
the middleware lets through can be refused, and the overflow fallback has nothing to rescue. The
checker builds the middleware from the answer, refuses a trigger above the window (even if this
one run happens to slip through), and runs the scenario: no refused call, no "overflow" event.
"""

from __future__ import annotations

from functools import lru_cache

from labkit import LabModel, scenario
from labkit._sizes import size_threshold
from labkit.exercises.core import Exercise
from labkit.summarize import SummarizeMiddleware, events_of

__all__ = ["WINDOW", "outcome", "q1"]

WINDOW = 128_000
FALLBACK = 170_000
KNOBS = ("trigger", "keep", "window")


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
    if fires_at > WINDOW:
        told = (f" (you told the middleware window={middleware.window:,}, but the model's window is "
                f"{WINDOW:,})" if "window" in answer and middleware.window != WINDOW else "")
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
                f"{seen}. Set the trigger at or below the window")
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
           "request is ever refused and the overflow fallback is never needed.",
    checker=_check_q1,
    hints=[
        "The model refuses a request only when it is over its window. The trigger is tested on the "
        "request about to be sent, before it goes out. So which requests does the middleware let "
        "through uncompacted — and can any of them be over the window?",
        "Every request that is sent uncompacted is under the trigger. Put the trigger at or below "
        "the window, and no such request can be over it — whatever the run does. A ('tokens', n) "
        "trigger needs no profile; a fraction needs window= first.",
        "For instance {'trigger': ('tokens', 100_000)}, or tell the middleware the window and "
        "use the defaults' fractions: {'window': 128_000, 'trigger': ('fraction', 0.85), "
        "'keep': ('fraction', 0.10)}.",
    ],
    solution_text=(
        "# the trigger below the 128,000-token window: any request it lets through fits\n"
        "answer = {'trigger': ('tokens', 100_000), 'keep': ('messages', 6)}\n"
        "# or: answer = {'window': 128_000, 'trigger': ('fraction', 0.85), 'keep': ('fraction', 0.10)}"
    ),
    given=_names,
)
