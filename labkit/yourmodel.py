"""On your model: a lesson's key experiment on the learner's own model, at a budget named first.

Each notebook ends with one call, ``on_your_model(experiment)``. Unset ``LABKIT_MODEL``: it says how
to switch and runs nothing. Set: it names the model and the window it assumes, estimates the input
tokens from the same experiment on the lab model, refuses above ``LABKIT_BUDGET_TOKENS`` (default
100,000), then runs the scaled-down experiment on your model with one line per model call, and lays
both runs side by side. Checks are only what cannot depend on the model's choices; the rest is
reported as observations. What it leaves out: the lesson's other cells (they stay on the lab
model) and any retry of a refused call (the refusal is the observation).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import plotly.graph_objects as go
from langchain.agents.middleware import AgentMiddleware

from labkit import scenario
from labkit.diagnose import diagnose
from labkit.model import LabModel, describe, get_model
from labkit.tables import Table
from labkit.tokens import cost

__all__ = ["BUDGET_ENV", "DEFAULT_BUDGET", "Experiment", "Outcome", "active", "budget", "on_your_model"]

BUDGET_ENV = "LABKIT_BUDGET_TOKENS"
DEFAULT_BUDGET = 100_000  # about 4 cents of input at gpt-4.1-mini's list price
_HOW = ("On your model: set LABKIT_MODEL=provider:model (and its key; for an endpoint with no "
        "profile also LABKIT_WINDOW) before starting Jupyter, then run this cell again — see "
        "\"Using a real model\" in the README. Nothing was sent.")


@dataclass(frozen=True)
class Experiment:
    """A lesson's key experiment, scaled down so that it is cheap on a real model. Notebook 01.

    ``run(model, middleware)`` runs it on ``model`` with the extra middleware appended (the
    progress printer) and returns the ``scenario.Run``; ``window`` is the window the experiment
    assumes (``lab_options`` go to the lab model's run); ``checks(run)`` returns what went wrong among the
    things that do not depend on the
    model's choices (an empty list: all held); ``observe(run)`` describes what the model chose.
    """

    name: str
    run: Callable[[Any, Sequence[AgentMiddleware]], scenario.Run]
    window: int
    checks: Callable[[scenario.Run], list[str]] = lambda run: []
    observe: Callable[[scenario.Run], list[str]] = lambda run: []
    lab_options: dict = field(default_factory=dict)  # for the lab model's run, e.g. delegate_research


@dataclass
class Outcome:
    """Both runs of an experiment, and what was checked and seen. Notebook 01."""

    experiment: str
    lab: scenario.Run
    estimate: int
    yours: scenario.Run | None = None
    refused: str | None = None
    problems: list[str] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    findings: list = field(default_factory=list)  # diagnose() on your run

    def table(self) -> Table:
        """One row per run: model calls, peak request, input tokens in all, outcome."""
        runs = [("lab model", self.lab)] + ([("your model", self.yours)] if self.yours else [])
        return Table([{"run": name, "model calls": len(r.records), "peak request": r.peak,
                       "input tokens": sum(x.seen for x in r.records if not x.error),
                       "ended with": type(r.error).__name__ if r.error else "no error"}
                      for name, r in runs])

    def figure(self, window: int | None = None) -> go.Figure:
        """Tokens each model call sent, lab model (dotted) and yours (solid); refused calls as x."""
        fig = go.Figure()
        runs = [("lab model", self.lab, "dot")]
        runs += [("your model", self.yours, "solid")] if self.yours else []
        for name, run, dash in runs:
            fig.add_scatter(x=[r.index for r in run.records], y=[r.seen for r in run.records], name=name,
                            mode="lines+markers", line={"dash": dash},
                            marker={"symbol": ["x" if r.error else "circle" for r in run.records]})
        if window:
            fig.add_hline(y=window, line={"dash": "dash", "color": "grey"}, annotation_text="window")
        fig.update_layout(title=f"{self.experiment}: tokens sent per model call", xaxis_title="model call",
                          yaxis_title="tokens sent", template="plotly_white", height=380)
        return fig


class _Progress(AgentMiddleware):
    """Prints one line per model call of the real run: its number and what came back."""

    name = "labkit.Progress"

    def __init__(self, out: Callable[[str], Any]) -> None:
        super().__init__()
        self.out, self.calls = out, 0

    def wrap_model_call(self, request, handler):
        self.calls += 1
        response = handler(request)
        inner = getattr(response, "model_response", response)  # a middleware may have wrapped it
        message = inner.result[-1] if getattr(inner, "result", None) else None
        calls = [tc["name"] for tc in getattr(message, "tool_calls", None) or []]
        self.out(f"  call {self.calls}: {len(request.messages)} messages sent → "
                 + (f"tool calls {calls}" if calls else "a text reply"))
        return response


def active() -> str:
    """One line for a notebook's first cell: which model its *On your model* section will use.
    Notebook 01."""
    if not os.environ.get("LABKIT_MODEL", "").strip():
        return ("On your model: LABKIT_MODEL is not set, so every cell runs on the lab model "
                "(offline, scripted).")
    return (f"On your model: the last section runs on {describe(get_model())}; "
            "the other cells on the lab model.")


def budget() -> int:
    """The most input tokens an experiment may send to your model: ``LABKIT_BUDGET_TOKENS``."""
    raw = os.environ.get(BUDGET_ENV, "").strip()
    if not raw:
        return DEFAULT_BUDGET
    try:
        value = int(raw.replace("_", "").replace(",", ""))
    except ValueError:
        raise ValueError(f"{BUDGET_ENV} must be a whole number of tokens, got {raw!r}") from None
    if value <= 0:
        raise ValueError(f"{BUDGET_ENV} must be a positive number of tokens, got {value}")
    return value


def on_your_model(experiment: Experiment, *, model: Any = None, price: str | tuple = "lab-model",
                  out: Callable[[str], Any] = print) -> Outcome:
    """Run ``experiment`` on the lab model, then — if a model is chosen — on yours. Notebook 01.

    ``model``: your chat model (default: ``get_model()`` when ``LABKIT_MODEL`` is set, else none).
    The estimate is what the same experiment sent the lab model in all (summary calls and
    subagents included); a real model may call fewer or more tools. Returns an :class:`Outcome`; nothing
    is sent above :func:`budget`.
    """
    lab_model = LabModel(window=experiment.window, **experiment.lab_options)
    lab = experiment.run(lab_model, ())
    # every call the lab model answered — summary calls and subagents' calls included
    estimate = sum(c.input_tokens for c in lab_model.calls if not c.error)
    outcome = Outcome(experiment.name, lab, estimate)
    if model is None and not os.environ.get("LABKIT_MODEL", "").strip():
        out(_HOW)
        return outcome
    model = get_model() if model is None else model
    limit = budget()
    profile = getattr(model, "profile", None) or {}
    window = profile.get("max_input_tokens") if isinstance(profile, dict) else None
    out(f"Your model: {getattr(model, 'model_name', None) or type(model).__name__}; window "
        f"{f'{window:,}' if window else 'unknown (no profile: set LABKIT_WINDOW)'}. "
        f"Estimate: about {estimate:,} input tokens (≈ ${cost(estimate, 0, price):.3f} at {price} prices); "
        f"budget {limit:,} ({BUDGET_ENV}).")
    if estimate > limit:
        outcome.refused = (f"not run: the estimate ({estimate:,} tokens) is above the budget ({limit:,}); "
                           f"raise {BUDGET_ENV} to run it")
        out(outcome.refused)
        return outcome
    outcome.yours = experiment.run(model, (_Progress(out),))
    outcome.problems = experiment.checks(outcome.yours)
    outcome.observations = experiment.observe(outcome.yours)
    outcome.findings = diagnose(outcome.yours, model)
    for line in outcome.problems:
        out(f"✗ {line}")
    for line in outcome.observations:
        out(f"· {line}")
    for finding in outcome.findings:
        out(f"diagnose: {finding.key} — {finding.evidence()}")
    return outcome
