"""labkit.oracle: the oracle lower bound on the running example's tokens, and tokens sent with a
refused request counted at its size.

The bound is one model call per step of the scenario's tasks, then one answer per user turn, each
call shown only the request and the evidence it needs. Worked example: the report turn has 11
steps (fetch and news for five companies, then the write), so 11 + 1 calls; the risks turn 1 + 1;
the needle question 1: 15 calls. Call 3 of the report turn (fetching Corvid) is shown the request
and two tool call/result pairs whose results are the evidence lines alone — "Market data export —
Brightloom (BRLM)" and "News digest — Brightloom (BRLM)" — not the exports; the report's write is
also shown each company's first headline, the needle's answer the needle's one CSV line. With
tool schemas of S tokens, the bound is the messages' tokens plus 15 × S.
"""

from __future__ import annotations

from langchain_core.messages import HumanMessage, ToolMessage

from labkit import evals, scenario
from labkit.oracle import headline, oracle, tokens_sent
from labkit.tokens import TokenCounter


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


def test_tokens_sent_counts_a_refused_request_at_its_size():
    """The naive run at 128k dies on a refused request: evals.row counts it as 0, tokens_sent at size."""
    setting = evals.Setting("naive", offload=False, summarize=False)
    run, model = evals.trial(setting)
    refused = [r.seen for r in run.records if r.error]
    assert len(refused) == 1 and refused[0] > setting.window
    assert tokens_sent(run, model) == evals.row(setting, run, model)["tokens sent"] + refused[0]


def test_the_bound_is_below_what_the_recommended_setting_sends():
    run, model = evals.trial(evals.Setting("recommended"))
    bound = oracle(run.records[0].by_kind["tools"])
    assert bound["tokens"] < tokens_sent(run, model) <= 2.5 * bound["tokens"]
