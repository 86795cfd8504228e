"""Exercises for notebook 16 · The diagnostic clinic.

q1: a patient — the scenario under ``create_deep_agent`` on a 60,000-token model, one call
refused and rescued; the answer is ``model -> [middleware]``, passed when ``diagnose()`` finds
nothing and the job is done. q2, the capstone: an unseen variant (``VARIANT``: exports twice
their size, news in Chinese, 128k); the answer is a config of knobs (``START``), run by
:func:`capstone` and passed when every eval of :func:`eval_grid` passes — the cost eval among
them: every input token the model received, subagents and summaries included, within
``BUDGET`` — and ``diagnose()`` is clean; the checker names the failing eval and the finding.
Both check behaviour.
"""

from __future__ import annotations

import sys

from langchain.agents.middleware import AgentMiddleware, TodoListMiddleware

from labkit import evals, scenario
from labkit.diagnose import diagnose
from labkit.exercises.core import Exercise
from labkit.isolate import IsolateMiddleware, SubagentSpec
from labkit.model import PROGRESS_PROMPT, LabModel
from labkit.offload import OffloadMiddleware
from labkit.summarize import SummarizeMiddleware

__all__ = ["BUDGET", "PLAIN", "START", "VARIANT", "WINDOW", "capstone", "eval_grid", "patient", "q1", "q2",
           "sent", "treated", "what_matters"]

WINDOW = 60_000


def patient():
    """The sick run: ``(model, run)`` of the scenario under create_deep_agent's defaults. Notebook 16."""

    model = LabModel(window=WINDOW)
    return model, scenario.run(model, harness="deep")


def treated(answer):
    """``(model, run)`` of the same scenario with ``answer(model)`` as the middleware. Notebook 16."""

    model = LabModel(window=WINDOW)
    middleware = answer(model)
    if isinstance(middleware, AgentMiddleware) or not isinstance(middleware, (list, tuple)) or not all(
            isinstance(m, AgentMiddleware) for m in middleware):
        raise TypeError(f"answer(model) must return a list of middleware, got {middleware!r}")
    return model, scenario.run(model, middleware=list(middleware), harness="deep")


def _check_q1(answer) -> str | None:
    if not callable(answer):
        return ("answer with a function that takes the model and returns a list of middleware, "
                f"like `def answer(model): return [...]` — not {answer!r}")
    try:
        model, run = treated(answer)
    except TypeError as e:
        return str(e)
    except Exception as e:  # the learner's middleware broke the agent: say so, do not crash
        return f"the run could not go on with that middleware: {type(e).__name__}: {e}"
    findings = diagnose(run, model)
    if findings:
        return (f"the run is still sick: diagnose() finds {', '.join(f.key for f in findings)} — "
                f"{findings[0].evidence()}")
    score = run.score
    if not (score.goal_completed and score.needle_correct):
        return f"no finding, but the job is not done: {score}"
    return None


q1 = Exercise(
    prompt="`nb16.patient()` runs the scenario under create_deep_agent on a 60,000-token model: "
           "one call is refused and the overflow fallback rescues the run. Write "
           "`def answer(model): return [...]` — the middleware that cures it, so that diagnose() "
           "finds nothing and the report, the risks note and the needle still come out right.",
    checker=_check_q1,
    hints=[
        "The finding names the refused call, and its row names the knobs. Look at what that call "
        "carried: the tool results in patient.messages before it, and count_tokens of each.",
        "deepagents evicts a tool result only above 4 × tool_token_limit_before_evict characters "
        "(notebook 02). Compare len(scenario.export_text(t)) for each export with that; a "
        "FilesystemMiddleware you pass in middleware= replaces deepagents' own, by name.",
    ],
    solution_text="from deepagents.middleware.filesystem import FilesystemMiddleware\n\n"
                  "def answer(model):\n"
                  "    return [FilesystemMiddleware(tool_token_limit_before_evict=10_000)]  "
                  "# evicts every export over 40,000 characters, Driftwood's among them",
)


# -- q2, the capstone ---------------------------------------------------------------------------

VARIANT = {"export_scale": 2.0, "news_language": "zh", "window": 128_000, "reminders": 2}
"""The capstone's variant of the running example: exports twice their size (20k–100k tokens), the
news digests in Chinese, a 128k model, a user who re-sends a turn the agent lost (twice at most)."""

START = {"offload": None, "trigger": None, "keep": None, "anchor": "none", "subagents": False}
"""The capstone's knobs, all off: ``offload`` — labkit's OffloadMiddleware ``tool_limit`` in tokens
(None: no offloading); ``trigger``/``keep`` — labkit's SummarizeMiddleware (None: no
summarization); ``anchor`` — ``"none"``, ``"todo"`` or ``"progress"``; ``subagents`` — hand each
company's research to the researcher subagent."""


def _config(config) -> dict:
    if not isinstance(config, dict):
        raise TypeError(f"answer with a dict of knobs like nb16.START, not {type(config).__name__}")
    unknown = set(config) - set(START)
    if unknown:
        raise TypeError(f"unknown knob(s) {sorted(unknown)}; the knobs are {list(START)}")
    config = {**START, **config}
    if config["anchor"] not in evals.ANCHORS:
        raise TypeError(f"anchor must be one of {evals.ANCHORS}, not {config['anchor']!r}")
    if (config["trigger"] is None) != (config["keep"] is None):
        raise TypeError("set trigger and keep together (both None: no summarization)")
    return config


def capstone(config, **variant):
    """``(model, run)`` of the capstone's variant (``VARIANT``, with any part of it changed by
    ``variant``) under ``config``. Notebook 16."""
    unknown = set(variant) - set(VARIANT)
    if unknown:
        raise TypeError(f"unknown part(s) of the variant {sorted(unknown)}; the parts are {list(VARIANT)}")
    config, v = _config(config), {**VARIANT, **variant}
    model = LabModel(window=v["window"], delegate_research=bool(config["subagents"]))
    middleware, kwargs, turns = [], {}, scenario.TURNS
    if config["anchor"] == "todo":
        middleware.append(TodoListMiddleware())
    if config["anchor"] == "progress":
        kwargs["system_prompt"] = PROGRESS_PROMPT
    if config["offload"] is not None:
        middleware.append(OffloadMiddleware(tool_limit=config["offload"]))
    if config["trigger"] is not None:
        middleware.append(SummarizeMiddleware(model, trigger=config["trigger"], keep=config["keep"]))
    if config["subagents"]:
        spec = SubagentSpec(**scenario.researcher(export_scale=v["export_scale"],
                                                  news_language=v["news_language"]))
        middleware.append(IsolateMiddleware(model, [spec]))
        turns = scenario.FANOUT_TURNS
    run = scenario.run(model, middleware=middleware, turns=evals.reminded(turns, model, v["reminders"]),
                       export_scale=v["export_scale"], news_language=v["news_language"], **kwargs)
    return model, run


BUDGET = 100_000
"""The capstone's cost eval: input tokens the model received over the whole run, at most this —
the default budget of "On your model" (``LABKIT_BUDGET_TOKENS``), so a passing design is one you
could afford to run on a real model."""


def sent(model) -> int:
    """Every input token the lab model received: the agent's calls, summary calls and subagents'
    (its own log, ``model.calls``); a refused call costs nothing. Notebook 16."""
    return sum(c.input_tokens for c in model.calls if not c.error)


def eval_grid(run, model) -> dict[str, bool]:
    """The capstone's six evals, each True when it passes. Notebook 16."""
    s = run.score
    return {"no call refused": not any(r.error for r in run.records), "report and risks note written":
            s.goal_completed, "needle answered": s.needle_correct, "goal never lost": s.goal_lost == 0,
            "no step repeated": s.steps_repeated == 0, f"within {BUDGET:,} tokens": sent(model) <= BUDGET}


PLAIN = {"export_scale": 1.0, "news_language": "en", "window": 1_000_000, "reminders": 0}
"""Each part of the variant as the running example has it (a window nothing reaches, no reminders)."""


def what_matters(config) -> list[dict]:
    """Run ``config`` on the variant with one part at a time put back as in the running example
    (``PLAIN``): which evals fail and what it sends, beside the variant itself. Notebook 16."""
    rows = []
    for part, value in [(None, None), *PLAIN.items()]:
        model, run = capstone(config, **({part: value} if part else {}))
        failed = [name for name, ok in eval_grid(run, model).items() if not ok]
        rows.append({"variant": "as given" if part is None else f"{part}={value!r}",
                     "evals failing": ", ".join(failed) or "none", "tokens sent": sent(model)})
    return rows


def _check_q2(config) -> str | None:
    try:
        model, run = capstone(config)
    except TypeError as e:
        return str(e)
    except Exception as e:  # a knob value the middleware refuses: say so, do not crash
        return f"the run could not start with that config: {type(e).__name__}: {e}"
    failed = [name for name, ok in eval_grid(run, model).items() if not ok]
    found = diagnose(run, model)
    if not failed and not found:
        return None
    said = f"eval(s) failing: {', '.join(failed)}" if failed else "every eval passes"
    if f"within {BUDGET:,} tokens" in failed:
        said += f" (it sent {sent(model):,} tokens)"
    if found:
        said += f"; diagnose() finds {', '.join(f.key for f in found)} — {found[0].evidence()}"
    return said


q2 = Exercise(
    prompt="The capstone: nb16.VARIANT is the running example with exports twice their size, news "
           "in Chinese, on a 128k model. Start from nb16.START (every knob off) and set the knobs "
           "until every eval of nb16.eval_grid passes — the job done, the needle answered, nothing "
           "refused, lost or repeated, within nb16.BUDGET input tokens in all — and diagnose() is "
           "clean.",
    checker=_check_q2,
    hints=[
        "Run it: `model, run = nb16.capstone(config)`, then `nb16.eval_grid(run, model)` and "
        "`diagnose.report(diagnose.diagnose(run, model))`. The first finding's row names the knob; "
        "`nb16.sent(model)` is what the cost eval reads.",
        "Offloading cures a refused call whose largest result is an export — and what stays in "
        "the context is re-sent on every later call. An offload limit that lets the three largest "
        "exports through (count_tokens(scenario.export_text(t, 2.0)) for each) fits the window but "
        "sends several times the budget; one that offloads every export sends a fraction.",
    ],
    solution_text='answer = {**nb16.START, "offload": 8_000}  # every export goes to a file: the '
                  'recommended setting\'s limit',
    given=lambda: {"nb16": sys.modules[__name__]},
)
