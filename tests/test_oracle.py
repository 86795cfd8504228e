"""labkit.oracle: the oracle lower bound on the running example's tokens, and tokens sent with a
refused request counted at its size.

The bound is one model call per step of the scenario's tasks, then one answer per user turn, each
call shown only the request and the evidence it needs. Worked example: the report turn has 11
steps (fetch and news for five companies, then the write), so 11 + 1 calls; the risks turn 1 + 1;
the needle question 1: 15 calls. Call 3 of the report turn (fetching Corvid) is shown the request
and two tool call/result pairs whose results are the evidence lines alone — "Market data export —
Brightloom (BRLM)" and "News digest — Brightloom (BRLM)" — not the exports; the report's write is
also shown each company's first headline, the needle's answer the needle's one CSV line. With
tool schemas of S tokens, the bound is the messages' tokens plus 15 × S. On the tools it needs,
each call is sent only the schema of the tool it makes: 5 fetches, 5 news searches and 2 writes,
with the create_agent harness's schemas of 87, 71 and 167 tokens 5 × 87 + 5 × 71 + 2 × 167 = 1,124
tokens in all, against 15 × 2,157 = 32,355 for all nine tools on every call.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from labkit import LabModel, evals, scenario
from labkit.oracle import headline, oracle, tokens_sent
from labkit.tokens import TokenCounter, tool_schema_tokens
from labkit.trace import Recorder


class Seen(TokenCounter):
    """A counter that keeps every message list it was asked to count: the bound's calls."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def messages(self, messages):
        self.calls.append(list(messages))
        return super().messages(messages)


def _bound():
    seen = Seen()
    return oracle(100, counter=seen), seen.calls


def test_one_call_per_step_and_one_answer_per_turn():
    bound, calls = _bound()
    tasks = {t.key: t for t in scenario.tasks()}
    steps = len(tasks["report"].steps) + len(tasks["risks"].steps)
    assert bound["calls"] == len(calls) == steps + 3 == 15
    turns = [m.text for c in calls for m in c[:1]]
    assert turns == [scenario.REQUEST] * 12 + [scenario.FEEDBACK] * 2 + [scenario.NEEDLE_QUESTION]


def test_each_call_sees_the_turn_and_the_evidence_of_its_done_steps_only():
    """The worked example: call 3 of the report turn sees two results, the evidence lines alone."""
    _, calls = _bound()
    report = next(t for t in scenario.tasks() if t.key == "report")
    for i, call in enumerate(calls[:11]):
        results = [m.text for m in call if isinstance(m, ToolMessage)]
        assert len(results) == i
        assert all(r.startswith(s.evidence) for r, s in zip(results, report.steps))
    assert [m.text for m in calls[2] if isinstance(m, ToolMessage)] == [
        "Market data export — Brightloom (BRLM)", "News digest — Brightloom (BRLM)"]
    assert sum(len(m.text) for m in calls[10]) < len(scenario.export_text("CRVD")) // 4  # no export anywhere


def test_the_writes_see_the_headlines_they_quote_and_the_answer_the_needles_line():
    _, calls = _bound()
    write_report, write_risks, answer = calls[10], calls[12], calls[14]
    for call in (write_report, write_risks):
        text = "\n".join(m.text for m in call)
        assert all(headline(c) in text for c in scenario.companies())
    assert not any(headline(c) in m.text for c in scenario.companies() for m in calls[9])
    n = scenario.needle()
    assert any(n.find(m.text) for m in answer) and isinstance(answer[0], HumanMessage)


def test_the_bound_adds_the_tool_schemas_once_per_call():
    assert oracle(0)["tokens"] == oracle(0)["messages"]
    assert oracle(2_157)["tokens"] - oracle(0)["tokens"] == 15 * 2_157


def _prices() -> dict[str, int]:
    """Each tool's schema tokens, as the create_agent harness sends them (every file tool)."""
    rec = Recorder(keep_requests=True)
    scenario.run(LabModel(window=1_000_000), recorder=rec, turns=[scenario.NEEDLE_QUESTION])
    return {t.name: tool_schema_tokens([t]) for t in rec.records[0].request.tools}


def test_on_the_tools_it_needs_each_call_is_sent_the_schema_of_the_tool_it_makes():
    """The worked example: 1,124 tokens of schemas, the same messages, 3,838 tokens in all."""
    prices = _prices()
    assert (prices["fetch_market_data"], prices["search_news"], prices["write_file"]) == (87, 71, 167)
    assert sum(prices.values()) == 2_157, "nine tools: what the bound above sends on every call"
    everything, needed = oracle(sum(prices.values())), oracle(prices)
    assert needed["messages"] == everything["messages"] and needed["calls"] == everything["calls"] == 15
    steps = [s.tool for t in scenario.tasks() if t.key in ("report", "risks") for s in t.steps]
    assert needed["tools"] == sum(prices[tool] for tool in steps) == 5 * 87 + 5 * 71 + 2 * 167 == 1_124
    assert everything["tools"] == 15 * 2_157 == 32_355
    assert needed["tokens"] == needed["messages"] + 1_124 == 3_838


def test_a_tool_with_one_token_counts_once_per_call_that_makes_it():
    needed = oracle(dict.fromkeys(("fetch_market_data", "search_news", "write_file", "grep"), 1))
    assert needed["tools"] == 12, "12 tool calls, 3 answers that need no tool; grep is never needed"


def test_a_tool_without_its_schema_tokens_is_refused():
    with pytest.raises(ValueError, match="no schema tokens for \\['write_file'\\]"):
        oracle({"fetch_market_data": 87, "search_news": 71})


def test_tokens_sent_counts_a_refused_request_at_its_size():
    """The naive run at 128k dies on a refused request: evals.row counts it as 0, tokens_sent at size."""
    setting = evals.Setting("naive", offload=False, summarize=False, file_tools="all")
    run, model = evals.trial(setting)
    refused = [r.seen for r in run.records if r.error]
    assert len(refused) == 1 and refused[0] > setting.window
    assert tokens_sent(run, model) == evals.row(setting, run, model)["tokens sent"] + refused[0]


def test_the_bounds_are_below_what_the_recommended_setting_sends():
    """The bound sends all nine tools, as the naive run does; the recommended setting sends five."""
    run, model = evals.trial(evals.Setting("recommended"))
    prices = _prices()
    bound, needed = oracle(sum(prices.values())), oracle(prices)
    assert needed["tokens"] < bound["tokens"] < tokens_sent(run, model) <= 2.5 * bound["tokens"]
    assert run.records[0].by_kind["tools"] == sum(prices[t] for t in ("read_file", "write_file", "grep",
                                                                       "fetch_market_data", "search_news"))
