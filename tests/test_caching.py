"""labkit.caching (issue 23): the prefix a provider could serve from its cache, the rules as data,
the price of a call — and the prediction held to what a server that caches reports."""

from __future__ import annotations

import datetime as dt

import pytest
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import SystemMessage
from langchain_openai import ChatOpenAI

from labkit import LabModel, caching, scenario
from labkit.offload import OffloadMiddleware
from labkit.summarize import SummarizeMiddleware
from tests.openai_server import OpenAIServer

RULE = caching.RULES["openai"]


def test_a_prefix_is_shared_block_by_block():
    cache = caching.PrefixCache()
    assert cache.observe([("tools", 500), ("a", 700)]) == (0, 0), "nothing before the first request"
    assert cache.observe([("tools", 500), ("a", 700), ("b", 50)]) == (1200, 1200), "the whole first one"
    assert cache.observe([("tools", 500), ("x", 700)]) == (500, 0), "only the shared head"


@pytest.mark.parametrize(("shared", "read"),
                         [(1023, 0), (1024, 1024), (1151, 1024), (1152, 1152), (5000, 4992)])
def test_automatic_caching_reads_from_the_minimum_in_steps(shared, read):
    assert caching.cached_tokens(6000, shared, 0, RULE) == (read, 0), "1,024 tokens, then steps of 128"


def test_a_breakpoint_reads_an_earlier_request_whole_and_writes_the_rest():
    rule = caching.RULES["anthropic"]
    assert caching.cached_tokens(5000, 4000, 3000, rule) == (3000, 2000), "read to the breakpoint"
    assert caching.cached_tokens(900, 0, 0, rule) == (0, 0), "below the minimum nothing is written"


def test_the_rules_name_their_sources():
    assert all(rule.source for rule in caching.RULES.values()), "every rule says where it comes from"
    for tier in caching.TIERS.values():
        assert tier.read < tier.input <= tier.write, "a read is cheaper than input; a write never is"


class Timestamped(AgentMiddleware):
    """Puts the time of each call at the top of the system prompt (a common habit)."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def wrap_model_call(self, request, handler):
        self.calls += 1
        stamp = dt.datetime(2026, 1, 1) + dt.timedelta(seconds=self.calls)
        text = f"Now: {stamp.isoformat()}\n\n{request.system_message.text if request.system_message else ''}"
        return handler(request.override(system_message=SystemMessage(text)))


def test_a_prefix_that_changes_every_call_is_never_read_from_cache():
    """The flip: the same run with a timestamp at the top of the system prompt reads nothing."""
    stable = scenario.run(LabModel(window=1_000_000), middleware=[OffloadMiddleware()])
    stamped = scenario.run(LabModel(window=1_000_000), middleware=[OffloadMiddleware(), Timestamped()])
    assert caching.run_cost(stable)["read from cache"] > 0.8, "a stable prefix: most input is read"
    assert caching.run_cost(stamped)["read from cache"] == 0, "a timestamp first: nothing is"


def test_a_compaction_rewrites_the_prefix():
    """The call after a compaction shares only the tools and system prompt with the calls before."""
    model = LabModel(window=128_000)
    run = scenario.run(model, middleware=[SummarizeMiddleware(model)])
    after = next(r for r in run.records if r.by_kind["summary"] and not r.error)
    assert after.shared_prefix == after.by_kind["system"] + after.by_kind["tools"], "the head only"


@pytest.mark.parametrize("setting", ["naive", "offload", "summarize"])
def test_the_prediction_is_what_a_caching_server_reports(setting):
    """The test server emulates OpenAI's automatic caching token by token; labkit predicts it from
    its records. Over a run the two agree within 1%."""
    with OpenAIServer(window=1_000_000) as server:
        model = ChatOpenAI(model="fake-model", base_url=server.base_url, api_key="dummy", stream_usage=True)
        middleware = {"naive": [], "offload": [OffloadMiddleware(tool_limit=8_000, args_trigger=None)],
                      "summarize": [SummarizeMiddleware(model, trigger=("tokens", 6_000),
                                                        keep=("messages", 4))]}
        run = scenario.run(model, middleware=middleware[setting])
    sent = [r for r in run.records if not r.error]
    predicted = sum(caching.cached_tokens(r.seen, r.shared_prefix, r.whole_prefix, RULE)[0] for r in sent)
    reported = sum(r.reported_cache_read or 0 for r in sent)
    assert reported > 0, "the server read from its cache"
    assert abs(predicted - reported) <= 0.01 * reported, f"predicted {predicted:,}, reported {reported:,}"


def test_on_your_model_shows_predicted_and_reported_cache_reads(monkeypatch):
    """The report's table puts labkit's prediction beside the provider's reported cache reads —
    against the caching test server they are the same number."""
    from labkit import experiments
    from labkit.yourmodel import on_your_model

    with OpenAIServer(window=64_000) as server:
        for key, value in {"LABKIT_MODEL": "openai:fake-model", "LABKIT_BASE_URL": server.base_url,
                           "OPENAI_API_KEY": "dummy", "LABKIT_WINDOW": "64000",
                           "LABKIT_BUDGET_TOKENS": "1000000"}.items():
            monkeypatch.setenv(key, value)
        outcome = on_your_model(experiments.offloading(), out=lambda line: None)
    table = outcome.table()
    predicted, reported = table.column("cache reads, predicted")[1], table.column("cache reads, reported")[1]
    assert reported > 0 and abs(predicted - reported) <= 0.01 * reported, (predicted, reported)
    assert outcome.cache_rule == "openai", "an OpenAI-compatible model follows OpenAI's rule"


def test_the_cache_curve_ends_at_the_run_costs():
    from labkit import plots

    run = scenario.run(LabModel(window=1_000_000))
    plain, cached = (trace.y[-1] for trace in plots.cache_curve(run).data)
    costs = caching.run_cost(run)
    assert plain == pytest.approx(costs["without caching"]), "the top line: no cache"
    assert cached == pytest.approx(costs["with caching"]), "the lower line: with the cache"


def test_a_replay_finds_the_prefixes_the_real_run_recorded():
    """The knobs panel's replays price a prompt cache too: under the run's own knobs a replay's
    shared prefixes are the recorded run's, call by call."""
    from labkit import replay

    model = LabModel(window=60_000)
    run = scenario.run(model, middleware=[SummarizeMiddleware(model)])
    again = replay.replay(run, window=60_000)
    assert [(r.shared_prefix, r.whole_prefix) for r in again.records] == \
        [(r.shared_prefix, r.whole_prefix) for r in run.records], "the same prefixes"
    assert 0 < again.cached_cost < again.cost, "a cache makes the same run cheaper"


def test_the_knobs_panel_shows_dollars_with_a_cache():
    from labkit import widgets

    model = LabModel(window=60_000)
    run = scenario.run(model, middleware=[SummarizeMiddleware(model)])
    shown = widgets.knobs_result(run, window=60_000)
    assert shown["totals"].column("with a prompt cache ($)")[0] < shown["totals"].column("cost ($)")[0]
    assert "with a prompt cache" in shown["status"], "the status line says it too"


def test_the_tiers_have_the_ratios_the_notebooks_state():
    """Notebook 01 and 07 say: Anthropic reads at 0.1x and writes at 1.25x the input price;
    notebook 07's panel: OpenAI-like reads at a quarter, with no write fee."""
    anthropic, openai = caching.TIERS["anthropic-like"], caching.TIERS["openai-like"]
    assert anthropic.read / anthropic.input == pytest.approx(0.1), "Anthropic reads at a tenth"
    assert anthropic.write / anthropic.input == pytest.approx(1.25), "Anthropic writes at 1.25x"
    assert openai.read / openai.input == pytest.approx(0.25), "OpenAI-like reads at a quarter"
    assert openai.write == openai.input, "OpenAI charges no write fee"


def test_requests_never_sent_are_priced_like_a_recorded_run():
    """``requests_as_records`` gives the recorded prefixes for the requests a run did send."""
    model = LabModel(window=1_000_000)
    run = scenario.run(model, turns=(scenario.BRIEFINGS,))
    fixed = run.records[0].by_kind["tools"]
    priced = caching.requests_as_records([c.messages for c in model.calls], fixed=fixed)
    assert [(r.seen, r.shared_prefix, r.whole_prefix) for r in priced] == \
        [(r.seen, r.shared_prefix, r.whole_prefix) for r in run.records]


def _reference_observe(seen: dict, ends: set, blocks) -> tuple[int, int]:
    """The prefix cache without carrying anything over: every block hashed, every chain looked up."""
    import hashlib as h
    chain, total, shared, whole, chains = "", 0, 0, 0, []
    for block, n in blocks:
        chain = h.sha256(f"{chain}|{caching._key(block)}".encode()).hexdigest()[:16]
        total += n
        chains.append((chain, total))
    for c, t in chains:
        if c not in seen:
            break
        shared, whole = t, (t if c in ends else whole)
    for c, t in chains:
        seen.setdefault(c, t)
    if chains:
        ends.add(chains[-1][0])
    return shared, whole


def test_carrying_the_last_request_over_finds_what_hashing_everything_finds():
    """``PrefixCache.observe`` reuses what it found for the blocks the last request shared by
    identity; on requests that append, rewrite, go back to an older request, copy messages or
    alternate between two threads it answers as a cache that hashes every block every time."""
    import random

    from langchain_core.messages import HumanMessage
    rng = random.Random(7)
    pool = [HumanMessage(f"m{i}", id=str(i)) for i in range(40)]
    requests, threads = [], {0: [], 1: []}
    for _ in range(300):
        t = rng.choice((0, 0, 0, 1))
        history = threads[t]
        move = rng.random()
        if move < 0.6 or not history:
            history = [*history, rng.choice(pool)]
        elif move < 0.75:
            i = rng.randrange(len(history))
            history = [*history[:i], rng.choice(pool), *history[i + 1:]]  # a rewrite
        elif move < 0.85:
            history = history[:rng.randrange(len(history) + 1)]  # back to an older request
        else:
            history = [m.model_copy() for m in history]  # equal messages, new objects
        threads[t] = history
        requests.append(["tools", *history])
    cache, seen, ends = caching.PrefixCache(), {}, set()
    for request in requests:
        tokens = {id(b): (100 if isinstance(b, str) else 10 + int(b.id)) for b in request}
        got = cache.observe(request, tokens=lambda b: tokens[id(b)])
        assert got == _reference_observe(seen, ends, [(b, tokens[id(b)]) for b in request])
