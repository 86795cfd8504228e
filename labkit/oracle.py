"""The oracle lower bound on the running example's tokens, and tokens sent counted for comparison.

:func:`oracle` is the least a run of the running example could send if every model call were shown
only the request and the evidence it needs; :func:`tokens_sent` is what a finished run sent, a
refused request counted at the size that was refused. Notebook 15 shows both beside the naive run,
deepagents' defaults and labkit's recommended setting; bench/bench_tokens.py divides by the bound,
sent every tool schema on every call as the harness sends them, and by the bound sent only the
schema of the tool each call makes (notebook 06's lesson taken to its limit).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from labkit import scenario
from labkit.tokens import TokenCounter

__all__ = ["headline", "oracle", "tokens_sent"]


def headline(company: dict) -> str:
    """The first ``## date: Company …`` line of a company's news digest (what a report quotes)."""
    pattern = rf"^## \d{{4}}-\d\d-\d\d: {re.escape(company['name'])} .*$"
    return re.search(pattern, scenario.news_text(company["ticker"]), re.M).group(0)


def _pair(i: int, tool: str, args: dict, result: str) -> list:
    return [AIMessage("", tool_calls=[{"name": tool, "args": args, "id": f"o{i}"}]),
            ToolMessage(result, tool_call_id=f"o{i}")]


def oracle(tool_schemas: int | Mapping[str, int], counter: TokenCounter | None = None) -> dict:
    """The oracle lower bound: ``{"calls", "messages", "tools", "tokens"}`` — its model calls, the
    tokens of their messages, of the tool schemas they are sent, and both. Notebook 15.

    The least a run of the running example could send if each model call were shown only the
    request and the evidence it needs, read off the scenario's own definition of done
    (``scenario.tasks()``: a step is done when its evidence is visible). The run is the tasks' steps
    in order, one tool call per model call, then one answer per turn (12 + 2 + 1 = 15 calls). Each
    call is sent tool schemas — ``tool_schemas`` tokens on every call (an int: what the harness sends,
    read off a run's first record, ``run.records[0].by_kind["tools"]``), or only the schema of the one
    tool the call makes and none to an answer (a mapping of each tool's schema tokens by name: the
    tools each step needs, notebook 06) —; the current user turn only; for each
    step already done in this turn, its tool call and, as its result, the step's evidence line alone
    (``Step.evidence``); and the facts the call's own action quotes — the five news headlines
    (:func:`headline`) for the call that writes the report or the risks note, the needle's one CSV
    line for the call that answers it. Each message costs its BPE text plus 3 tokens, as everywhere
    in the lab. The bound is the same at every window. It leaves out the system prompt (the
    ``create_agent`` harness sends none), the words of a file the model writes (they are its
    output), and any retry.
    """
    counter = counter or TokenCounter()
    tasks = {t.key: t for t in scenario.tasks()}
    headlines = {f"news:{c['ticker']}": headline(c) for c in scenario.companies()}  # by news step
    n = scenario.needle()
    needle_line = next(line for line in scenario.export_text(n.ticker).splitlines()
                       if line.startswith(f"kpi,{n.ticker},{n.kpi},"))
    calls: list[tuple[int, str | None]] = []  # (message tokens, the tool it calls or None)
    for key, turn in (("report", scenario.REQUEST), ("risks", scenario.FEEDBACK)):
        done: list = []
        for i, step in enumerate(tasks[key].steps):
            quoted = step.tool == "write_file"  # a write quotes the headlines
            shown = []
            for j, s in enumerate(tasks[key].steps[:i]):
                found = headlines.get(s.key)
                result = f"{s.evidence}\n{found}" if quoted and found else s.evidence
                shown += _pair(j, s.tool, s.args, result)
            if quoted and key == "risks":  # the headlines were found in an earlier turn
                shown += [ToolMessage("\n".join(headlines.values()), tool_call_id="carried")]
            calls.append((counter.messages([HumanMessage(turn), *shown]), step.tool))
            done += _pair(i, step.tool, step.args, step.evidence)
        calls.append((counter.messages([HumanMessage(turn), *done]), None))  # the answer: all in view
    fetch = next(s for s in tasks["report"].steps if s.key == f"fetch:{n.ticker}")
    calls.append((counter.messages([HumanMessage(scenario.NEEDLE_QUESTION), *_pair(
        0, fetch.tool, fetch.args, f"{fetch.evidence}\n{needle_line}")]), None))
    if isinstance(tool_schemas, Mapping):
        if missing := {tool for _, tool in calls if tool} - set(tool_schemas):
            raise ValueError(f"oracle: no schema tokens for {sorted(missing)}, a tool the tasks call")
        tools = sum(tool_schemas[tool] for _, tool in calls if tool)
    else:
        tools = len(calls) * tool_schemas
    messages = sum(size for size, _ in calls)
    return {"calls": len(calls), "messages": messages, "tools": tools, "tokens": messages + tools}


def tokens_sent(run, model) -> int:
    """Every input token ``model`` was sent during ``run``, summary calls included, a refused
    request counted at the size that was refused. Notebook 15.

    ``evals.row``'s ``tokens sent`` counts a refused request as 0, as a provider bills it; a
    comparison of settings must not reward one for sending requests too large to accept. Agent
    calls are the Recorder's counts, summary calls the lab model's own log (``model.calls``).
    """
    agent = sum(r.seen for r in run.records)
    summaries = sum(c.input_tokens for c in getattr(model, "calls", []) if c.kind == "summary")
    return agent + summaries
