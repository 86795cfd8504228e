"""Benchmark: token efficiency on the running example — naive vs deepagents' defaults vs labkit.

The design target: on the running example, labkit's recommended setting sends a fraction of the
naive run's tokens, at least as few as deepagents' defaults, with the needle recovered and the goal
kept. Run it as a plain script (the test suite asserts behaviour, not these numbers):

    .venv/bin/python bench/bench_tokens.py [--windows 128000,60000,32000]

For each window it runs the scenario (``labkit.evals.trial``: a fresh ``LabModel`` with that
window, the user re-sending a turn at most twice if the agent loses track) under

* **naive** — ``create_agent`` with the file tools and no context management: at 128,000 tokens and
  below it overflows, and the run ends there;
* **deepagents defaults** — ``create_deep_agent``'s own stack, untouched (eviction of large tool
  results, summarization at 85% of the window keeping 10%);
* **labkit recommended** — ``create_agent`` with ``OffloadMiddleware`` then ``SummarizeMiddleware``
  (offload first), both at their defaults;

plus, once, **naive on a 1,000,000-token window**, where it completes: what the naive run sends
when nothing stops it, the denominator of "a fraction of the naive run's tokens".

Columns: *calls* — agent calls the model answered; *refused* — requests over the window (the
naive run ends at its first; deepagents' summarizer catches one and compacts); *summary* — summary
calls; *tokens sent* — every input token the model received, summary calls included (read from
``labkit.evals.row``: the Recorder's agent calls plus the lab model's own log of summary calls);
*largest request* — the most tokens one agent request held, the refused one included (a naive run
shows the request that overflowed); *needle* — answered with the exact figure, and where it came
from; *goal kept* — report and risks note written, the goal never lost. Token counts are exact
(BPE, offline) and labkit's and the naive runs are deterministic, so one run is enough; deepagents'
vary by a few tokens from run to run (its archive paths carry a random uuid).
"""

from __future__ import annotations

import argparse

from labkit import evals

TABLE = [("setting", "<21"), ("done", ">5"), ("calls", ">6"), ("refused", ">8"), ("summary", ">8"),
         ("compactions", ">12"), ("tokens sent", ">12"), ("largest request", ">16"), ("needle", ">26"),
         ("goal kept", ">10")]


def measure(setting: evals.Setting) -> dict:
    """One trial and its numbers (see the module docstring)."""
    run, model = evals.trial(setting)
    row = evals.row(setting, run, model)
    refused = next((r.index for r in run.records if r.error), None)
    return row | {
        "done": run.error is None,
        "overflow at": refused,
        "refused": sum(r.error is not None for r in run.records),
        "largest request": max((r.seen for r in run.records), default=0),
        "goal kept": row["goal completed"] and row["goal losses"] == 0,
    }


def line(r: dict) -> str:
    needle = f"yes ({r['needle from']})" if r["needle"] else "no" + (
        f" (overflow, call {r['overflow at']})" if r["overflow at"] is not None else "")
    cells = [r["setting"], "yes" if r["done"] else "no", r["agent calls"], r["refused"], r["summary calls"],
             r["compactions"], f"{r['tokens sent']:,}", f"{r['largest request']:,}", needle,
             "yes" if r["goal kept"] else "no"]
    return "".join(f"{cell:{fmt}}" for cell, (_, fmt) in zip(cells, TABLE))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", default="128000,60000,32000",
                        help="comma-separated context windows, in tokens (default: 128000,60000,32000)")
    args = parser.parse_args()
    windows = [int(w) for w in args.windows.split(",")]

    unbounded = measure(evals.Setting("naive, 1M window", offload=False, summarize=False, window=1_000_000))
    print("naive run with room to finish (window 1,000,000 tokens):")
    print("".join(f"{name:{fmt}}" for name, fmt in TABLE))
    print(line(unbounded))
    for window in windows:
        rows = {
            "naive": measure(evals.Setting("naive", offload=False, summarize=False, window=window)),
            "deepagents": measure(evals.Setting("deepagents defaults", middleware="deepagents",
                                                window=window)),
            "labkit": measure(evals.Setting("labkit recommended", window=window)),
        }
        print()
        print(f"window {window:,} tokens")
        print("".join(f"{name:{fmt}}" for name, fmt in TABLE))
        for r in rows.values():
            print(line(r))
        lab, deep = rows["labkit"], rows["deepagents"]
        sent = {name: r["tokens sent"] / unbounded["tokens sent"] for name, r in rows.items()}
        print(f"tokens sent / naive (1M window): labkit {sent['labkit']:.2f}, deepagents "
              f"{sent['deepagents']:.2f}; labkit / deepagents: "
              f"{lab['tokens sent'] / deep['tokens sent']:.2f}")
        print(f"largest request / naive (1M window): labkit "
              f"{lab['largest request'] / unbounded['largest request']:.2f}, deepagents "
              f"{deep['largest request'] / unbounded['largest request']:.2f}; labkit / deepagents: "
              f"{lab['largest request'] / deep['largest request']:.2f}")
        checks = {
            "a fraction of the naive run's tokens": lab["tokens sent"] < unbounded["tokens sent"],
            "at least as few as deepagents' defaults": lab["tokens sent"] <= deep["tokens sent"],
            "needle recovered": lab["needle"],
            "goal kept": lab["goal kept"],
        }
        print("target: " + "; ".join(f"{what} {'yes' if ok else 'NO'}" for what, ok in checks.items()))


if __name__ == "__main__":
    main()
