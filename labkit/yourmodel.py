"""On your model: a lesson's key experiment on the learner's own model, at a budget that holds.

Each notebook ends with one call, ``on_your_model(experiment)``. Unset ``LABKIT_MODEL``: it says how
to switch and sends nothing. Set: it names the model and the window it assumes, estimates the input
tokens from the same experiment on the lab model (every request: the agent's, summaries',
subagents'), refuses above ``LABKIT_BUDGET_TOKENS`` (default 100,000), then runs the experiment on
your model through a ``labkit.meter.Meter``: one line per request, and no request sent that would
take the total over the budget — a model that loops stops there. Both runs side by side, with
what was sent and what the provider reported; a provider's error is its message and what to do.
Checks are only what cannot depend on the model's choices; the rest is reported as observations.
What it leaves out: the lesson's other cells (they stay on the lab model).
"""

from __future__ import annotations

from labkit._course import require

require("labkit.yourmodel", "plotly")  # before them: a missing one named with its extra
# isort: split

import itertools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import plotly.graph_objects as go
from langchain.agents.middleware import AgentMiddleware
from plotly.subplots import make_subplots

from labkit import plots, scenario
from labkit.caching import RULES, cached_tokens
from labkit.diagnose import diagnose
from labkit.errors import kind
from labkit.meter import BudgetExceeded, Meter, Sent
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

    ``run(model, middleware)`` runs it on ``model`` (metered: every request it sends is counted
    and capped) with ``middleware`` appended to the experiment's own (``on_your_model`` passes
    none; it is there for an experiment you build and run yourself), and returns the
    ``scenario.Run``; ``window``
    is the window the experiment assumes (``lab_options`` go to the lab model's run);
    ``checks(run)`` returns what went wrong among the things that do not depend on the model's
    choices (an empty list: all held); ``observe(run)`` describes what the model chose.
    """

    name: str
    run: Callable[[Any, Sequence[AgentMiddleware]], scenario.Run]
    window: int
    checks: Callable[[scenario.Run], list[str]] = lambda run: []
    observe: Callable[[scenario.Run], list[str]] = lambda run: []
    lab_options: dict = field(default_factory=dict)  # for the lab model's run, e.g. delegate_research


@dataclass
class Outcome:
    """Both runs of an experiment, every request each sent, and what was checked and seen.
    Notebook 01."""

    experiment: str
    lab: scenario.Run
    estimate: int
    yours: scenario.Run | None = None
    refused: str | None = None
    problems: list[str] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    findings: list = field(default_factory=list)  # diagnose() on your run
    lab_requests: list[Sent] = field(default_factory=list)
    requests: list[Sent] = field(default_factory=list)  # yours: every request, sent or not
    budget: int | None = None
    stopped: str | None = None  # the line that stopped your run at the budget
    cache_rule: str = "openai"  # the labkit.caching rule your model's provider follows

    @property
    def sent(self) -> int:
        """Input tokens your run sent in all (labkit's count): every request, retries included."""
        return totals(self.requests)["input tokens sent"]

    def table(self) -> Table:
        """One row per run: requests (summaries and subagents among them), input tokens sent by
        labkit's count and as the provider reported them, output tokens, the largest request, the
        input a prompt cache would serve (``labkit.caching``, under the provider's rule) beside
        the cache reads the provider reported, and how the run ended. A usage the provider did not
        report is shown as missing, never as 0."""
        runs = [("lab model", self.lab, self.lab_requests)]
        runs += [("your model", self.yours, self.requests)] if self.yours is not None else []
        return Table([{"run": name, **totals(requests), **cache_reads(requests, self.cache_rule),
                       "ended with": _ending(run.error)} for name, run, requests in runs])

    def figure(self, window: int | None = None) -> go.Figure:
        """Left, the tokens each request carried — the agent's as a line, summary calls and
        subagents' as markers, a refused or unsent request as an x; right, the input tokens sent
        in all, request by request, against the budget: a run never crosses it. Lab model dotted
        (grey), yours solid."""
        fig = make_subplots(rows=1, cols=2, column_widths=[0.6, 0.4], horizontal_spacing=0.1,
                            subplot_titles=("tokens each request carried", "input tokens sent in all"))
        runs = [("lab model", self.lab_requests, "dot", "#888888")]
        runs += [("your model", self.requests, "solid", "#d62728")] if self.yours is not None else []
        for name, requests, dash, colour in runs:
            for who, mode in (("agent", "lines+markers"), ("summary", "markers"), ("subagent", "markers")):
                shown = [r for r in requests if _request_kind(r) == who]
                if shown:
                    fig.add_scatter(x=[r.number for r in shown], y=[r.tokens for r in shown], mode=mode,
                                    name=f"{name}: {who} requests", line={"dash": dash, "color": colour},
                                    marker={"symbol": [_symbol(r) for r in shown], "size": 8,
                                            "color": colour}, legendgroup=name, row=1, col=1)
            sent = [r for r in requests if r.sent]
            fig.add_scatter(x=[r.number for r in sent], y=list(itertools.accumulate(r.tokens for r in sent)),
                            mode="lines", name=f"{name}: sent in all", line={"dash": dash, "color": colour},
                            legendgroup=name, row=1, col=2)
        for r in (r for r in self.requests if r.outcome == "not sent"):
            fig.add_annotation(x=r.number, y=r.tokens, text="not sent: over the budget", showarrow=True,
                               arrowhead=0, ay=-30, row=1, col=1)
        peaks = [max((y for t in fig.data if t.xaxis == axis for y in t.y), default=0)
                 for axis in ("x", "x2")]  # each side's data
        lines = [(1, window, "window", "grey")] if window else []
        lines += [(2, self.budget, f"budget {self.budget:,}", "black")] if self.budget else []
        for col, y, label, colour in lines:
            if plots.off_scale(y, peaks[col - 1]):  # drawn to scale it would squash the runs flat
                fig.add_annotation(text=plots.off_scale_text(label, y, peaks[col - 1]), xref="x domain",
                                   x=0.02, yref="y domain", y=1, showarrow=False, xanchor="left",
                                   yanchor="top", font={"color": colour}, row=1, col=col)  # under its title
            else:
                fig.add_hline(y=y, line={"dash": "dash", "color": colour}, annotation_text=label,
                              row=1, col=col)
        fig.update_xaxes(title_text="request", rangemode="tozero")
        fig.update_yaxes(rangemode="tozero")
        fig.update_layout(title=self.experiment, template="plotly_white", height=420,
                          legend={"orientation": "h", "y": -0.25})
        return fig


def cache_rule(model: Any) -> str:
    """Which ``labkit.caching.RULES`` entry a model's provider follows (OpenAI's by default)."""
    name = type(model).__name__.lower()
    return "anthropic" if "anthropic" in name else "gemini" if "google" in name else "openai"


def cache_reads(requests: Sequence[Sent], rule: str = "openai") -> dict[str, Any]:
    """Input tokens a prompt cache would serve over a run's answered requests, predicted under
    ``rule``, and what the provider reported reading (notebook 01)."""
    answered = [r for r in requests if r.outcome == "ok"]
    predicted = sum(cached_tokens(r.tokens, r.shared_prefix, r.whole_prefix, RULES[rule])[0]
                    for r in answered)
    known = [r.reported_cache_read for r in answered if r.reported_cache_read is not None]
    return {"cache reads, predicted": predicted,
            "cache reads, reported": sum(known) if known else "not reported"}


def totals(requests: Sequence[Sent]) -> dict[str, Any]:
    """A table row's numbers for one run's requests (notebook 01): requests sent, how many were
    summary calls and subagents' calls, how many were refused or failed, input tokens sent
    (labkit's count, every request that left), the provider's count of the answered ones and its
    output tokens (``"not reported"`` when it gave none, or how many answers it reported), and
    the largest request."""
    sent = [r for r in requests if r.sent]
    answered = [r for r in sent if r.outcome == "ok"]

    def reported(values: list[int | None]) -> str | int:
        known = [v for v in values if v is not None]
        if not answered:
            return "no answer"
        if len(known) == len(answered):
            return sum(known)
        return "not reported" if not known else f"{sum(known):,} ({len(known)} of {len(answered)} reported)"

    return {"requests": len(sent),
            "summary calls": sum(r.who.startswith("summary") for r in sent),
            "subagent calls": sum(r.who.startswith("subagent") for r in sent),
            "refused or failed": len(sent) - len(answered),
            "input tokens sent": sum(r.tokens for r in sent),
            "provider's input count": reported([r.reported_input for r in answered]),
            "output tokens": reported([r.output_tokens for r in answered]),
            "largest request": max((r.tokens for r in sent), default=0)}


def _request_kind(r: Sent) -> str:
    return next((k for k in ("summary", "subagent") if r.who.startswith(k)), "agent")


def _symbol(r: Sent) -> str:
    shapes = {"summary": "diamond", "subagent": "square"}
    return "x" if r.outcome != "ok" else shapes.get(_request_kind(r), "circle")


def _ending(error: BaseException | None) -> str:
    if error is None:
        return "no error"
    if isinstance(error, BudgetExceeded):
        return "stopped at the budget"
    return kind(error)


def active() -> str:
    """One line for a notebook's first cell: which model its *On your model* section will use.
    Notebook 01."""
    if not os.environ.get("LABKIT_MODEL", "").strip():
        return ("On your model: LABKIT_MODEL is not set, so every cell runs on the lab model "
                "(offline, scripted).")
    try:
        return (f"On your model: the last section runs on {describe(get_model())}; "
                "the other cells on the lab model.")
    except (ValueError, ImportError, RuntimeError) as e:  # said here, and again where it runs
        return f"On your model: LABKIT_MODEL is set, but {e}"


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
    subagents included); a real model may send fewer or more. Your run goes through a
    ``labkit.meter.Meter`` capped at :func:`budget`: the request that would take the input tokens
    sent over it is not sent, whatever the model does, and the run stops with one line. A
    provider's error (a bad key, a rate limit, a server that is down …) is printed as its message
    and what to do; the run so far is still shown, checked and diagnosed. Returns an :class:`Outcome`.
    """
    lab_meter = Meter(out=None)
    lab = experiment.run(lab_meter.attach(LabModel(window=experiment.window, **experiment.lab_options)), ())
    outcome = Outcome(experiment.name, lab, lab_meter.sent, lab_requests=lab_meter.requests)
    if model is None and not os.environ.get("LABKIT_MODEL", "").strip():
        out(_HOW)
        return outcome
    try:
        model = get_model() if model is None else model
        outcome.cache_rule = cache_rule(model)
        limit = outcome.budget = budget()
    except (ValueError, ImportError, RuntimeError) as e:  # a setting to fix: said, not raised
        outcome.refused = f"not run: {e}. Nothing was sent."
        out(outcome.refused)
        return outcome
    estimate = outcome.estimate
    out(f"Your model: {describe(model)}. Estimate: about {estimate:,} input tokens (≈ "
        f"${cost(estimate, 0, price):.3f} at {price} prices); budget {limit:,} ({BUDGET_ENV}), a cap "
        "on every request sent.")
    if estimate > limit:
        outcome.refused = (f"not run: the estimate ({estimate:,} tokens) is above the budget ({limit:,}); "
                           f"raise {BUDGET_ENV} to run it")
        out(outcome.refused)
        return outcome
    meter = Meter(cap=limit, out=out)
    try:
        metered = meter.attach(model)
    except TypeError as e:  # a wrapped model: said, not raised
        outcome.refused = f"not run: {e}. Nothing was sent."
        out(outcome.refused)
        return outcome
    outcome.requests = meter.requests
    outcome.yours = experiment.run(metered, ())
    outcome.stopped = meter.stopped
    _report(outcome, experiment, model, out)
    return outcome


def _report(outcome: Outcome, experiment: Experiment, model: Any, out: Callable[[str], Any]) -> None:
    """What the run sent and how it ended, then checks, observations and diagnose()."""
    row = totals(outcome.requests)
    answered = totals([r for r in outcome.requests if r.outcome == "ok"])
    theirs = row["provider's input count"]
    n = row["requests"]
    out(f"Sent {n} request{'s' * (n != 1)}, {row['input tokens sent']:,} input tokens by labkit's count, "
        f"of a {outcome.budget:,}-token budget"
        + (f"; for the {answered['requests']} answered, labkit counted {answered['input tokens sent']:,} "
           f"and the provider {f'{theirs:,}' if isinstance(theirs, int) else theirs}."
           if answered["requests"] else "."))
    error = outcome.yours.error
    if error is not None and not isinstance(error, BudgetExceeded):
        failed = next((r for r in reversed(outcome.requests)
                       if r.outcome in ("failed", "overflow", "not delivered")), None)
        where = f"request {failed.number}, above" if failed else "its last request"
        out(f"Your run ended early: {kind(error)} (see {where}).")
    outcome.problems = _safely(experiment.checks, outcome.yours, "a check")
    outcome.observations = _safely(experiment.observe, outcome.yours, "an observation")
    outcome.findings = diagnose(outcome.yours, model)
    for line in outcome.problems:
        out(f"✗ {line}")
    for line in outcome.observations:
        out(f"· {line}")
    for finding in outcome.findings:
        out(f"diagnose: {finding.key} — {finding.evidence()}")


def _safely(read: Callable[[scenario.Run], list[str]], run: scenario.Run, what: str) -> list[str]:
    """``read(run)``; a reader that cannot read this run is reported as a line, not raised."""
    try:
        return list(read(run))
    except Exception as e:
        return [f"{what} could not read your run ({type(e).__name__}: {e}): a labkit bug, please report it"]
