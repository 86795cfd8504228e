"""Benchmark: tokens sent on the running example — naive, deepagents' defaults, labkit, and an oracle.

Run it as a plain script (the test suite asserts behaviour, not these numbers):

    .venv/bin/python bench/bench_tokens.py [--windows 128000,60000,32000]

For each window it runs the scenario (``labkit.evals.trial``: a fresh ``LabModel`` with that
window, the user re-sending a turn at most twice if the agent loses track) under

* **naive** — ``create_agent`` with the file tools and no context management: at 128,000 tokens and
  below it overflows, and the run ends there;
* **deepagents defaults** — ``create_deep_agent``'s own stack, untouched (eviction of large tool
  results, summarization at 85% of the window keeping 10%);
* **labkit recommended** — the setting ``labkit.evals`` calls recommended (``Setting(window=...)``,
  its defaults: ``OffloadMiddleware`` then ``SummarizeMiddleware`` under ``create_agent``, with only
  the file tools ``evals.RECOMMENDED_FILE_TOOLS``);

plus, once, **naive on a 1,000,000-token window**, where it completes: what the naive run sends
when nothing stops it (the "naive" of ``tokens_vs_naive``), and **the oracle lower bound**.

*tokens sent* is ``labkit.oracle.tokens_sent``: every input token the model was sent, summary calls
included, and **a refused request counted at the size that was refused** (``evals.row`` counts it as
0, as a provider bills it; a bench comparing stacks must not reward a stack for sending requests
too large to accept).

**The oracle lower bound** is ``labkit.oracle.oracle`` (its docstring defines it; notebook 15 shows
it): the least a run of the running example could send if each model call were shown only the
request and the evidence it needs — 15 calls, each with the tool schemas of the ``create_agent``
harness (read off the naive run's first request), the current user turn, the evidence lines of
the turn's done steps, and the facts the call quotes. The same at every window. **The oracle on
the tools it needs** is the same bound with each call sent only the schema of the tool it makes,
none to an answer (``oracle`` given each tool's schema tokens, read off the same request): the
least the tool schemas could cost.

Checks per window, for labkit's recommended setting: tokens sent ≤ 35% of the naive run's (1M
window), ≤ 0.5× deepagents' defaults, ≤ 2.5× the oracle, needle answered, goal kept (report and
risks note written, goal never lost); and it prints the ratio to the oracle on the tools it needs
(goal ≤ 4.0, not a check). ``measure()`` returns the worst window's four ratios.
Token counts are exact (BPE, offline) and labkit's and the naive runs are deterministic, so one run
is enough; deepagents' vary by a few tokens from run to run (its archive paths carry a uuid).
"""

from __future__ import annotations

import argparse

from labkit import LabModel, evals, scenario
from labkit.oracle import oracle, tokens_sent
from labkit.tokens import tool_schema_tokens
from labkit.trace import Recorder

WINDOWS = (128_000, 60_000, 32_000)
TABLE = [("setting", "<21"), ("done", ">5"), ("calls", ">6"), ("refused", ">8"), ("summary", ">8"),
         ("compactions", ">12"), ("tokens sent", ">12"), ("largest request", ">16"), ("needle", ">26"),
         ("goal kept", ">10")]


def recommended(window: int) -> evals.Setting:
    """labkit's recommended setting, as ``labkit.evals`` defines it (the ``Setting`` defaults)."""
    return evals.Setting("labkit recommended", window=window)


def tool_prices() -> dict[str, int]:
    """Each tool's schema tokens as the naive run's first request carried them (every file tool)."""
    rec = Recorder(keep_requests=True)
    scenario.run(LabModel(window=1_000_000), recorder=rec, turns=scenario.TURNS[:1])
    return {t.name: tool_schema_tokens([t]) for t in rec.records[0].request.tools}


def measure_setting(setting: evals.Setting) -> dict:
    """One trial and its numbers (see the module docstring)."""
    run, model = evals.trial(setting)
    row = evals.row(setting, run, model)
    refused = next((r.index for r in run.records if r.error), None)
    sent = tokens_sent(run, model)  # refused requests at their size
    return row | {
        "done": run.error is None,
        "overflow at": refused,
        "refused": sum(r.error is not None for r in run.records),
        "tokens sent": sent,
        "refused tokens": sent - row["tokens sent"],
        "largest request": max((r.seen for r in run.records), default=0),
        "goal kept": row["goal completed"] and row["goal losses"] == 0,
        "tool schemas": run.records[0].by_kind["tools"] if run.records else 0,
    }


def line(r: dict) -> str:
    needle = f"yes ({r['needle from']})" if r["needle"] else "no" + (
        f" (overflow, call {r['overflow at']})" if r["overflow at"] is not None else "")
    cells = [r["setting"], "yes" if r["done"] else "no", r["agent calls"], r["refused"], r["summary calls"],
             r["compactions"], f"{r['tokens sent']:,}", f"{r['largest request']:,}", needle,
             "yes" if r["goal kept"] else "no"]
    return "".join(f"{cell:{fmt}}" for cell, (_, fmt) in zip(cells, TABLE))


def measure(windows=WINDOWS) -> dict[str, float]:
    """Print the tables; return the worst window's ``tokens_vs_deepagents_max``,
    ``tokens_vs_naive_max``, ``tokens_vs_oracle_max`` and ``tokens_vs_oracle_needed_max`` for
    labkit's recommended setting."""
    unbounded = measure_setting(evals.Setting("naive, 1M window", offload=False, summarize=False,
                                              file_tools="all", window=1_000_000))
    bound, prices = oracle(unbounded["tool schemas"]), tool_prices()
    needed = oracle(prices)
    assert sum(prices.values()) == unbounded["tool schemas"], "the prices add up to the naive run's schemas"
    print("naive run with room to finish (window 1,000,000 tokens):")
    print("".join(f"{name:{fmt}}" for name, fmt in TABLE))
    print(line(unbounded))
    print(f"oracle lower bound: {bound['calls']} calls, {bound['tokens']:,} tokens "
          f"({bound['messages']:,} of messages, {unbounded['tool schemas']:,} of tool schemas per call)")
    print(f"oracle on the tools it needs: {needed['tokens']:,} tokens ({needed['tools']:,} of tool schemas: "
          "each call only the schema of the tool it makes, an answer none)")
    worst = {"tokens_vs_deepagents_max": 0.0, "tokens_vs_naive_max": 0.0, "tokens_vs_oracle_max": 0.0,
             "tokens_vs_oracle_needed_max": 0.0}
    for window in windows:
        rows = {
            "naive": measure_setting(evals.Setting("naive", offload=False, summarize=False, file_tools="all",
                                                   window=window)),
            "deepagents": measure_setting(evals.Setting("deepagents defaults", middleware="deepagents",
                                                        window=window)),
            "labkit": measure_setting(recommended(window)),
        }
        print()
        print(f"window {window:,} tokens (tokens sent: refused requests at their size)")
        print("".join(f"{name:{fmt}}" for name, fmt in TABLE))
        for r in rows.values():
            print(line(r))
        lab, deep = rows["labkit"], rows["deepagents"]
        ratio = {"tokens_vs_deepagents_max": lab["tokens sent"] / deep["tokens sent"],
                 "tokens_vs_naive_max": lab["tokens sent"] / unbounded["tokens sent"],
                 "tokens_vs_oracle_max": lab["tokens sent"] / bound["tokens"],
                 "tokens_vs_oracle_needed_max": lab["tokens sent"] / needed["tokens"]}
        print(f"labkit tokens sent / deepagents {ratio['tokens_vs_deepagents_max']:.2f}, / naive (1M window) "
              f"{ratio['tokens_vs_naive_max']:.2f}, / oracle {ratio['tokens_vs_oracle_max']:.2f}, "
              f"/ oracle on the tools it needs {ratio['tokens_vs_oracle_needed_max']:.2f}; labkit's tool "
              f"schemas {lab['tool schemas']:,} per call; deepagents / naive "
              f"{deep['tokens sent'] / unbounded['tokens sent']:.2f}")
        checks = {
            "<= 35% of naive": ratio["tokens_vs_naive_max"] <= 0.35,
            "<= 0.5x deepagents": ratio["tokens_vs_deepagents_max"] <= 0.5,
            "<= 2.5x the oracle": ratio["tokens_vs_oracle_max"] <= 2.5,
            "needle answered": lab["needle"],
            "goal kept": lab["goal kept"],
        }
        print("labkit recommended: " + "; ".join(f"{what} {'yes' if ok else 'NO'}"
                                                 for what, ok in checks.items()))
        worst = {k: max(v, ratio[k]) for k, v in worst.items()}
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", default=",".join(str(w) for w in WINDOWS),
                        help="comma-separated context windows, in tokens (default: 128000,60000,32000)")
    args = parser.parse_args()
    print(measure([int(w) for w in args.windows.split(",")]))


if __name__ == "__main__":
    main()
