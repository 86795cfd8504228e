"""The first lessons' experiments for "On your model": token counts (02), hook order (03), a pasted
transcript offloaded (05), the tool tax (06) and safe cuts (08).

Each returns an :class:`~labkit.yourmodel.Experiment` on the scenario's first turn, exports shrunk
so that a real model costs cents. The checks hold whatever the model chooses: they test the
tokenizer, langchain's hook order and labkit's middleware, never the model's wording; what the
model chose is reported as observations. What it leaves out: the lessons' other runs.
"""

from __future__ import annotations

from collections import Counter

from deepagents.middleware.filesystem import FilesystemMiddleware
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from labkit import scenario
from labkit.experiments._common import FIRST_TURN, call_ids, compacting, fetched
from labkit.offload import HISTORY_DIR, OffloadMiddleware, unwrap
from labkit.summarize import events_of
from labkit.tokens import approx_tokens, count_tokens
from labkit.trace import Recorder
from labkit.yourmodel import Experiment

__all__ = ["cutting_safely", "hook_order", "pasted_transcript", "token_counts", "tool_tax"]

HOOKS = "labkit_hooks"  # where hook_order() leaves its log in the run's state


def _exports(run: scenario.Run, scale: float) -> list[tuple[str, str]]:
    """(ticker, result text) for each fetch_market_data result that is the export itself."""
    calls = {tc["id"]: tc for tc in run.tool_calls("fetch_market_data")}
    out = []
    for m in (m for m in run.messages if isinstance(m, ToolMessage) and m.tool_call_id in calls):
        ticker = (calls[m.tool_call_id].get("args") or {}).get("ticker")
        if isinstance(ticker, str) and m.text == scenario.export_text(ticker, scale):
            out.append((ticker, m.text))
    return out


def token_counts(scale: float = 0.03) -> Experiment:
    """Notebook 02: the first turn, every message counted in BPE tokens and by chars/4. Checks:
    chars/4 undercounts every export the model fetched (a CSV's digits cost more than 4 characters
    a token, whoever asked for it)."""

    def checks(run: scenario.Run) -> list[str]:
        return [f"chars/4 says {approx_tokens(text):,} tokens for {ticker}'s export, BPE "
                f"{count_tokens(text):,}" for ticker, text in _exports(run, scale)
                if approx_tokens(text) >= count_tokens(text)]

    def observe(run: scenario.Run) -> list[str]:
        results = [m for m in run.messages if isinstance(m, ToolMessage)]
        bpe, approx = sum(count_tokens(m.text) for m in results), sum(approx_tokens(m.text) for m in results)
        reported = [r.reported_input for r in run.records if r.reported_input is not None]
        seen = sum(r.seen for r in run.records if r.reported_input is not None)
        line = (f"your provider reported {sum(reported):,} input tokens over {len(reported)} calls; labkit "
                f"counted {seen:,} (o200k)") if reported else "your provider reported no token usage"
        return [fetched(run), f"its tool results: {bpe:,} BPE tokens, chars/4 says {approx:,}", line]

    return Experiment(
        f"BPE against chars/4, exports at {scale:.0%}", window=32_000, checks=checks, observe=observe,
        run=lambda model, extra: scenario.run(model, middleware=list(extra), turns=FIRST_TURN,
                                              export_scale=scale))


class _HookLog(AgentMiddleware):
    """Appends the name of each hook that fires to ``log``. Used by: hook_order()."""

    name = "labkit.HookLog"

    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self.log = log

    def before_agent(self, state, runtime):
        self.log.append("before_agent")

    def before_model(self, state, runtime):
        self.log.append("before_model")

    def wrap_model_call(self, request, handler):
        self.log.append("wrap_model_call")
        return handler(request)

    def after_model(self, state, runtime):
        self.log.append("after_model")

    def wrap_tool_call(self, request, handler):
        self.log.append("wrap_tool_call")
        return handler(request)

    def after_agent(self, state, runtime):
        self.log.append("after_agent")


def hook_order(scale: float = 0.03) -> Experiment:
    """Notebook 03: a middleware that logs every hook, first in the list. Checks: each model call
    ran before_model, wrap_model_call, after_model in that order, the agent hooks once per turn,
    and the log saw as many model calls as the Recorder."""

    def run(model, extra):
        log: list[str] = []
        result = scenario.run(model, middleware=[_HookLog(log), *extra], turns=FIRST_TURN,
                              export_scale=scale)
        result.state[HOOKS] = log
        return result

    def checks(run: scenario.Run) -> list[str]:
        log, problems = run.state.get(HOOKS, []), []
        model_hooks = [h for h in log if h.endswith("_model") or h == "wrap_model_call"]
        triples = [model_hooks[i:i + 3] for i in range(0, len(model_hooks), 3)]
        complete = triples if run.error is None else triples[:-1]  # a refused call has no after_model
        if any(t != ["before_model", "wrap_model_call", "after_model"] for t in complete):
            problems.append("a model call's hooks did not run before → wrap → after")
        if run.error is None and (log.count("before_agent"), log.count("after_agent")) != (1, 1):
            problems.append(f"the agent hooks ran {log.count('before_agent')} and {log.count('after_agent')}"
                            " times in one turn")
        if log.count("wrap_model_call") != len(run.records):
            problems.append(f"the log saw {log.count('wrap_model_call')} model calls, the Recorder "
                            f"{len(run.records)}")
        return problems

    def observe(run: scenario.Run) -> list[str]:
        counts = Counter(run.state.get(HOOKS, []))
        return [fetched(run), f"the hooks fired {sum(counts.values())} times: {dict(counts)}"]

    return Experiment(f"every hook logged, exports at {scale:.0%}", window=32_000, run=run, checks=checks,
                      observe=observe)


def _human_sizes(run: scenario.Run) -> list[int]:
    """The largest human message of each request the model was sent, in tokens."""
    return [max((count_tokens(m.text) for m in r.request.messages if isinstance(m, HumanMessage)),
                default=0) for r in run.records if r.request is not None]


def pasted_transcript(limit: int = 2_000, scale: float = 0.03) -> Experiment:
    """Notebook 05: the first request with a meeting transcript pasted in, human messages over
    ``limit`` tokens offloaded. Checks: the state keeps the pasted message word for word, a file
    under /conversation_history/ holds it, and no request carried a human message over the limit."""
    pasted = scenario.with_transcript()

    def checks(run: scenario.Run) -> list[str]:
        problems = []
        if not run.messages or run.messages[0].text != pasted:
            problems.append("the state lost the pasted message")
        saved = [unwrap(text) for path, text in run.files.items() if path.startswith(HISTORY_DIR)]
        if pasted not in saved:
            problems.append(f"no file under {HISTORY_DIR}/ holds the pasted message word for word")
        if any(size > limit for size in _human_sizes(run)):
            problems.append(f"a request carried a {max(_human_sizes(run)):,}-token human message")
        return problems

    def observe(run: scenario.Run) -> list[str]:
        back = [tc for tc in run.tool_calls() if tc["name"] in ("read_file", "grep")
                and HISTORY_DIR in str(tc.get("args"))]
        return [fetched(run), f"it read or grepped the transcript back {len(back)} times; its largest "
                f"human message sent was {max(_human_sizes(run), default=0):,} tokens"]

    return Experiment(
        f"a {count_tokens(pasted):,}-token paste offloaded above {limit:,} tokens, exports at {scale:.0%}",
        window=32_000, checks=checks, observe=observe,
        run=lambda model, extra: scenario.run(
            model, middleware=[OffloadMiddleware(human_limit=limit, args_trigger=None), *extra],
            turns=(pasted,), export_scale=scale, recorder=Recorder(keep_requests=True)))


def tool_tax(keep: tuple[str, ...] = ("read_file", "write_file", "edit_file", "grep"),
             scale: float = 0.02) -> Experiment:
    """Notebook 06: deepagents' full harness with ``FilesystemMiddleware(tools=keep)``. Checks: no
    request offered a file tool outside ``keep``. Observes the tax per call and the tools called."""
    dropped = sorted(t.name for t in FilesystemMiddleware().tools if t.name not in keep)

    def checks(run: scenario.Run) -> list[str]:
        offered = {n for r in run.records if r.request is not None for n in r.request.tool_names}
        return [f"a request offered {n}, which was dropped" for n in dropped if n in offered]

    def observe(run: scenario.Run) -> list[str]:
        tax = run.records[0].by_kind["tools"] if run.records else 0
        called = Counter(tc["name"] for tc in run.tool_calls())
        return [fetched(run), f"tool schemas cost {tax:,} tokens per call; it called {dict(called)}"]

    return Experiment(
        f"the deep harness without {', '.join(dropped)}, exports at {scale:.0%}", window=32_000,
        checks=checks, observe=observe,
        run=lambda model, extra: scenario.run(
            model, harness="deep", middleware=[FilesystemMiddleware(tools=list(keep)), *extra],
            turns=FIRST_TURN, export_scale=scale, recorder=Recorder(keep_requests=True)))


def _orphans(messages: list[BaseMessage]) -> int:
    """Tool results that answer no tool call among ``messages`` (a malformed call counts as a
    call: langchain answers it with an error, and it is sent with its arguments as they came)."""
    calls = call_ids(messages)
    return sum(1 for m in messages if isinstance(m, ToolMessage) and m.tool_call_id not in calls)


def cutting_safely(trigger: int = 4_000, keep: int = 1_500, scale: float = 0.05) -> Experiment:
    """Notebook 08: compaction at ``trigger`` tokens keeping ``("tokens", keep)``; your model writes
    the summaries. Checks: no cut fell on a tool result, and every tool result a request carried
    came with the call it answers."""

    def checks(run: scenario.Run) -> list[str]:
        problems = [f"compaction {e.number} cut at a tool result (message {e.cut})"
                    for e in events_of(run.state)
                    if e.cut < len(run.messages) and isinstance(run.messages[e.cut], ToolMessage)]
        bad = [r.index for r in run.records if r.request is not None and _orphans(r.request.messages)]
        if bad:
            problems.append(f"calls {bad} were sent a tool result without its call")
        return problems

    def observe(run: scenario.Run) -> list[str]:
        events = events_of(run.state)
        kept = [len(run.messages[:e.created_at]) - e.cut for e in events]
        return [fetched(run), f"{len(events)} compactions; they kept {kept} messages"]

    return Experiment(
        f"compaction at {trigger:,} tokens keeping {keep:,} tokens, exports at {scale:.0%}",
        window=32_000, checks=checks, observe=observe,
        run=compacting(("tokens", trigger), ("tokens", keep), scale=scale, keep_requests=True))
