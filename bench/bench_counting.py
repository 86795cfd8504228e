"""Benchmark: what the token-counting caches of ``labkit._token_cache`` buy.

None of them changes a count; each only saves time. Run it as a plain script:

    .venv/bin/python bench/bench_counting.py [--repeats 5]

* **identity fast path** (``SameObjects``): re-count a 200-call run as the Recorder does — every
  call re-counts the history it was sent (40,000 message counts over 400 messages) — with the
  fast path, and with it switched off (only the lesson's (role, text) cache left);
* **tool-schema cache** (``ToolTokens``): count the ten tools of a deepagents agent on the running
  example (eight file tools, two data tools) when they were rebuilt for a new run (a hit by
  shape), and with no cache at all (convert each tool to its JSON schema, then count).

Every number is the median of ``--repeats`` runs in CPU time (``time.process_time``); the ratios
move less than the absolute numbers. Informational: ``make bench`` prints it, no goal of its own.
"""

from __future__ import annotations

import argparse
import json

from bench_replay import median_ms  # CPU ms, the median of repeats
from deepagents.middleware.filesystem import FilesystemMiddleware
from langchain_core.utils.function_calling import convert_to_openai_tool

from labkit import scenario
from labkit._token_cache import SameObjects
from labkit.replay import synthetic_run
from labkit.tokens import TokenCounter, encoding, tool_schema_tokens


def measure(repeats: int = 5) -> dict[str, float]:
    """Both comparisons, printed; their speed-ups returned."""
    run = synthetic_run(200)
    messages, calls = run.messages, [r.messages_stored for r in run.records]

    def recount(identity: bool):
        def go():
            counter = TokenCounter()
            if not identity:
                counter._same = SameObjects(size=0)  # remembers nothing: every count builds the text key
            for n in calls:
                counter.messages(messages[:n])
        return go

    fast, slow = median_ms(recount(True), repeats), median_ms(recount(False), repeats)
    print(f"re-count a 200-call run as the Recorder does ({sum(calls):,} message counts over "
          f"{len(messages)} messages):")
    print(f"  with the identity fast path {fast:.0f} ms, without it {slow:.0f} ms ({slow / fast:.1f}x)")

    sets = [FilesystemMiddleware().tools + scenario.tools() for _ in range(repeats * 20 + 1)]
    tool_schema_tokens(sets[0])  # the first run's tools: counted once
    rebuilt = iter(sets[1:])
    cached = median_ms(lambda: [tool_schema_tokens(next(rebuilt)) for _ in range(20)], repeats) / 20
    enc = encoding()

    def uncached():
        for tool in sets[0]:
            schema = json.dumps(convert_to_openai_tool(tool)["function"], ensure_ascii=False)
            len(enc.encode(schema, disallowed_special=()))

    bare = median_ms(uncached, repeats)
    print(f"count the schemas of {len(sets[0])} tools rebuilt for a new run:")
    print(f"  from the tool-schema cache {cached * 1000:.0f} us, converted and counted afresh "
          f"{bare * 1000:.0f} us ({bare / cached:.0f}x)")
    return {"identity_speedup": slow / fast, "tool_cache_speedup": bare / cached}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    print(measure(parser.parse_args().repeats))


if __name__ == "__main__":
    main()
