"""The clinic's figure for each failure mode: its own symptom, the failure and its fix on one
plot, the fix named in the title (``labkit.widgets.clinic_result``, notebook 16).

- the overflows (hard overflow, no profile, orphan tool message, raw subagent dump): tokens per
  model call against the window, the refused call marked;
- soft amnesia: tokens per call, with the calls where the agent asked what its task was;
- needle lost: tokens per call, with the answer to the needle question, right or wrong;
- cost blow-up: cumulative dollars;
- tool-schema tax: what each call carries, the tool schemas against everything else;
- cache thrash: the tokens of each call a prompt cache could read (OpenAI's rule).
"""

from __future__ import annotations

import plotly.graph_objects as go

from labkit import caching, plots, prompts, scenario
from labkit.diagnose import FIXES, LABELS, Case

_FAIL, _FIX = "#EF553B", "#00CC96"


def _title(case: Case, what: str) -> str:
    return f"{LABELS[case.mode]}: {what} — the fix: {FIXES[case.mode]}"


def _agent_calls(case: Case) -> list:
    """The lab model's agent calls (not summaries or graders), one per record of the run."""
    return [c for c in getattr(case.model, "calls", ()) if c.kind == "agent"]


def _marked(fig: go.Figure, case: Case, calls: list[int], name: str, color: str, symbol: str) -> None:
    records = case.run.records
    at = [i for i in calls if i < len(records)]
    fig.add_scatter(x=[records[i].index for i in at], y=[records[i].seen for i in at], mode="markers",
                    name=name, marker={"symbol": symbol, "size": 16, "color": color,
                                       "line": {"width": 2, "color": color}})


def _tokens(broken: Case, fixed: Case, what: str) -> go.Figure:
    return plots.tokens_per_turn(broken.run, window=broken.window, beside={"seen, with the fix": fixed.run},
                                 title=_title(broken, what))


def _goal_lost(broken: Case, fixed: Case) -> go.Figure:
    fig = _tokens(broken, fixed, "the calls where the agent lost its goal")
    for case, color, who in ((broken, _FAIL, "the failure"), (fixed, _FIX, "with the fix")):
        lost = [i for i, c in enumerate(_agent_calls(case))
                if c.response is not None and c.response.text == prompts.GOAL_LOST]
        _marked(fig, case, lost, f"asked what its task was ({who}: {len(lost)})", color, "circle-open")
    return fig


def _needle_lost(broken: Case, fixed: Case) -> go.Figure:
    fig = _tokens(broken, fixed, "the answer to the needle question")
    for case, color in ((broken, _FAIL), (fixed, _FIX)):
        answers = [i for i, c in enumerate(_agent_calls(case)) if c.response is not None
                   and not c.response.tool_calls and any(m.type == "human" for m in c.messages)
                   and [m for m in c.messages if m.type == "human"][-1].text == scenario.NEEDLE_QUESTION]
        right = "right" if scenario.score(case.run).needle_correct else "wrong"
        _marked(fig, case, answers[-1:], f"the needle answered {right}", color,
                "star" if right == "right" else "x-open")
    return fig


def _cost_blowup(broken: Case, fixed: Case) -> go.Figure:
    return plots.cost_curve(broken.run, fixed.run, names=["the failure", "with the fix"],
                            title=_title(broken, "cumulative cost (illustrative prices)"))


def _per_call(broken: Case, fixed: Case, what: str, ytitle: str, lines) -> go.Figure:
    """Lines per call, the failure solid and the fix dashed: ``lines`` is ``(name, record -> y)``."""
    traces = [{"type": "scatter", "x": [r.index for r in case.run.records],
               "y": [value(r) for r in case.run.records], "name": f"{name} ({who})", "mode": "lines+markers",
               "line": {"color": color, **({"dash": "dash"} if case.fixed else {})}}
              for case, who in ((broken, "the failure"), (fixed, "with the fix"))
              for (name, value), color in zip(lines, ("#AB63FA", "#636EFA"))]
    return plots._figure(traces, _title(broken, what), ytitle)


def _tool_tax(broken: Case, fixed: Case) -> go.Figure:
    return _per_call(broken, fixed, "what each call carries", "tokens",
                     [("tool schemas", lambda r: r.by_kind["tools"]),
                      ("everything else", lambda r: r.seen - r.by_kind["tools"])])


def _cache_thrash(broken: Case, fixed: Case) -> go.Figure:
    rule = caching.RULES["openai"]

    def readable(r) -> int:
        if r.shared_prefix is None or r.error:
            return 0
        return caching.cached_tokens(r.seen, r.shared_prefix, r.whole_prefix, rule)[0]

    return _per_call(broken, fixed, "what a prompt cache could read", "tokens",
                     [("a cache could read", readable), ("sent", lambda r: 0 if r.error else r.seen)])


_SYMPTOMS = {"goal_lost": _goal_lost, "needle_lost": _needle_lost, "cost_blowup": _cost_blowup,
             "tool_tax": _tool_tax, "cache_thrash": _cache_thrash}


def symptom(broken: Case, fixed: Case) -> go.Figure:
    """The figure that shows ``broken``'s failure mode, with ``fixed`` beside it."""
    draw = _SYMPTOMS.get(broken.mode)
    if draw is None:
        return _tokens(broken, fixed, "tokens per model call against the window")
    return draw(broken, fixed)
