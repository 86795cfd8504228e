"""Benchmark: what context costs with a prompt cache — labkit's prediction against a server's report,
and the recommended setting against deepagents' defaults in cache-aware dollars.

    .venv/bin/python bench/bench_caching.py [--windows 128000,60000,32000]

* **cache_prediction_error_max** — the lessons' experiments (``labkit.experiments``: offloading,
  summarization, isolation, the summary itself, the wall) run on an OpenAI-compatible chat model
  pointed at the project's test server (``tests/openai_server.py``), which emulates OpenAI's
  automatic prompt caching token by token and reports ``cached_tokens``; for each run,
  |predicted − reported| / reported over all its answered calls, where *predicted* is
  ``labkit.caching`` from the Recorder's records under OpenAI's rule. The worst run.
* **cached_cost_vs_deepagents_max** — dollars with caching (``caching.run_cost``, the
  ``anthropic-like`` tier and rule: a breakpoint at each request's end, as deepagents'
  ``AnthropicPromptCachingMiddleware`` places it, reads at 0.1×, writes at 1.25×) of labkit's
  recommended setting over deepagents' defaults, on the running example (``evals.trial``), the
  worst of the three windows. Also printed: the same under the ``openai-like`` tier and rule.
Token counts are exact and the runs deterministic (deepagents' vary by a few tokens), so one run
each is enough; nothing here is timed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.openai_server, from anywhere

from langchain_openai import ChatOpenAI  # noqa: E402

from labkit import caching, evals, experiments  # noqa: E402
from tests.openai_server import OpenAIServer  # noqa: E402

WINDOWS = (128_000, 60_000, 32_000)
EXPERIMENTS = ("offloading", "summarization", "isolation", "summary_itself", "wall")


def prediction_error() -> float:
    """The worst |predicted − reported| / reported over the lessons' experiments."""
    worst = 0.0
    rule = caching.RULES["openai"]
    for name in EXPERIMENTS:
        experiment = getattr(experiments, name)()
        with OpenAIServer(window=1_000_000) as server:
            model = ChatOpenAI(model="fake-model", base_url=server.base_url, api_key="dummy",
                               stream_usage=True)
            run = experiment.run(model, ())
        sent = [r for r in run.records if not r.error and r.reported_cache_read is not None]
        predicted = sum(caching.cached_tokens(r.seen, r.shared_prefix, r.whole_prefix, rule)[0]
                        for r in sent)
        reported = sum(r.reported_cache_read for r in sent)
        error = abs(predicted - reported) / reported if reported else float(predicted > 0)
        print(f"{name:<16} calls {len(sent):>3}  predicted {predicted:>9,}  reported {reported:>9,}  "
              f"error {error:.4f}")
        worst = max(worst, error)
    return worst


def cost_ratio(windows=WINDOWS) -> float:
    """The worst window's cache-aware dollars, labkit recommended over deepagents' defaults."""
    worst = 0.0
    for window in windows:
        costs = {}
        for name, setting in (("labkit", evals.Setting("labkit recommended", window=window)),
                              ("deepagents", evals.Setting("deepagents defaults", middleware="deepagents",
                                                           window=window))):
            run, _ = evals.trial(setting)
            costs[name] = {tier: caching.run_cost(run, tier, rule)
                           for tier, rule in (("anthropic-like", "anthropic"), ("openai-like", "openai"))}
        lab, deep = costs["labkit"], costs["deepagents"]
        ratio = lab["anthropic-like"]["with caching"] / deep["anthropic-like"]["with caching"]
        plain = lab["openai-like"]["with caching"] / deep["openai-like"]["with caching"]
        print(f"window {window:>9,}: " + "; ".join(
            f"{who} ${c['anthropic-like']['with caching']:.3f} anthropic-like "
            f"({c['anthropic-like']['read from cache']:.0%} read), ${c['openai-like']['with caching']:.3f} "
            f"openai-like" for who, c in costs.items())
            + f"; labkit/deepagents {ratio:.2f} (openai-like {plain:.2f})")
        worst = max(worst, ratio)
    return worst


def measure(windows=WINDOWS) -> dict[str, float]:
    """Print the tables; return ``cache_prediction_error_max`` and ``cached_cost_vs_deepagents_max``."""
    return {"cache_prediction_error_max": prediction_error(),
            "cached_cost_vs_deepagents_max": cost_ratio(windows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", default=",".join(str(w) for w in WINDOWS))
    args = parser.parse_args()
    print(measure([int(w) for w in args.windows.split(",")]))


if __name__ == "__main__":
    main()
