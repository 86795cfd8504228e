"""The three defences' experiments for "On your model": offloading (04), summarization (07),
isolation (12).

Each returns an :class:`~labkit.yourmodel.Experiment`: the run (the first user turn, exports shrunk
so that a real model costs cents), the checks that hold whatever the model chooses (they test
labkit's mechanism, not the model), and the observations (what the model did). What it leaves out:
the lessons' other runs, and any judgement of the model's wording.
"""

from __future__ import annotations

from collections import Counter

from labkit import scenario
from labkit.experiments._common import FIRST_TURN, archived, call_ids, compacting, fetched
from labkit.isolate import IsolateMiddleware, SubagentSpec
from labkit.offload import OFFLOADED, OffloadMiddleware, unwrap
from labkit.summarize import events_of
from labkit.tokens import count_tokens
from labkit.yourmodel import Experiment

__all__ = ["isolation", "offloading", "summarization"]

def offloading(limit: int = 1_500, scale: float = 0.1) -> Experiment:
    """Notebook 04: results over ``limit`` tokens go to files. Checks: no result over the limit
    reached the context, and every export file holds its export word for word."""

    def checks(run: scenario.Run) -> list[str]:
        calls, problems = {tc["id"]: tc for tc in run.tool_calls()}, []
        for m in (m for m in run.messages if m.type == "tool"):
            path, call = m.additional_kwargs.get(OFFLOADED), calls.get(m.tool_call_id, {})
            if path is None and count_tokens(m.text) > limit:
                problems.append(f"a {count_tokens(m.text):,}-token result reached the context")
            ticker = (call.get("args") or {}).get("ticker")
            if path and call.get("name") == "fetch_market_data" and isinstance(ticker, str) \
                    and scenario.export_text(ticker, scale) != unwrap(run.files[path]):
                problems.append(f"{path} does not hold {ticker}'s export word for word")
        return problems

    def observe(run: scenario.Run) -> list[str]:
        reads = [tc for tc in run.tool_calls() if tc["name"] in ("read_file", "grep")]
        evicted = [p for p in run.files if p.startswith("/large_tool_results/")]
        return [fetched(run), f"{len(evicted)} results went to files; it read or grepped them back "
                f"{len(reads)} times"]

    return Experiment(
        f"offloading above {limit:,} tokens, exports at {scale:.0%}", window=32_000, checks=checks,
        observe=observe,
        run=lambda model, extra: scenario.run(
            model, middleware=[OffloadMiddleware(tool_limit=limit, args_trigger=None), *extra],
            turns=FIRST_TURN, export_scale=scale))


def summarization(trigger: int = 6_000, keep: int = 4, scale: float = 0.05) -> Experiment:
    """Notebook 07: compaction at ``trigger`` tokens, keeping ``keep`` messages; your model writes
    the summaries too. Checks: each compaction's archive holds every message it folded, word for word."""

    def observe(run: scenario.Run) -> list[str]:
        events = events_of(run.state)
        sizes = [len(e.summary.split()) for e in events]
        return [fetched(run), f"{len(events)} compactions; its summaries ran to {sizes} words"]

    return Experiment(
        f"compaction at {trigger:,} tokens keeping {keep} messages, exports at {scale:.0%}",
        window=32_000, checks=archived, observe=observe,
        run=compacting(("tokens", trigger), ("messages", keep), scale=scale))


def isolation(scale: float = 0.02) -> Experiment:
    """Notebook 12: a ``task`` tool with the researcher subagent. Checks: no child's tool result is
    in the parent's context, and each child came back as one message."""
    made: list[IsolateMiddleware] = []

    def run(model, extra):
        iso = IsolateMiddleware(model, [SubagentSpec(**scenario.researcher(export_scale=scale))])
        made.append(iso)
        return scenario.run(model, middleware=[iso, *extra], turns=scenario.FANOUT_TURNS[:1],
                            export_scale=scale)

    def checks(run: scenario.Run) -> list[str]:
        children = made[-1].children
        own = call_ids(m for m in run.messages if m.type == "ai")  # malformed calls included
        stray = [m for m in run.messages if m.type == "tool" and m.tool_call_id not in own]
        replies = Counter(m.tool_call_id for m in run.messages if m.type == "tool" and m.name == "task")
        problems = [f"{len(stray)} tool results in the parent's messages answer no call of its own"] \
            if stray else []
        unanswered = [c.subagent_type for c in children if replies[c.tool_call_id] != 1]
        if unanswered and run.error is None:  # a run stopped mid-task has children not yet answered
            problems.append(f"{len(unanswered)} of {len(children)} children did not come back as one message")
        return problems

    def observe(run: scenario.Run) -> list[str]:
        children = made[-1].children
        if not children:
            return [fetched(run) + "; it never delegated"]
        return [f"it delegated {len(children)} tasks; the parent's largest request was {run.peak:,} "
                f"tokens, the children's {max(c.peak for c in children):,}"]

    return Experiment(f"a researcher subagent, exports at {scale:.0%}", window=32_000, run=run,
                      checks=checks, observe=observe, lab_options={"delegate_research": True})
