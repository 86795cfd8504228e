"""Prompt caching (提示缓存): what a run costs when a provider serves a request's beginning from a cache.

A request whose start repeats an earlier request's is billed at a cached-input price for that
prefix (OpenAI and Gemini automatically above a minimum length; Anthropic up to the breakpoints
a request marks, with a premium to write them). :class:`PrefixCache` finds, for each request of a
run, the longest prefix it shares with the requests before it — block by block: the tools and
system prompt, then each message — and the ``Recorder`` keeps the two numbers on every record;
:func:`call_cost` prices a record under a :class:`CacheRule` and :class:`CachePrices`.
What it leaves out: a cache evicted before its time to live or a request routed to a server
without it (the model is an upper bound on reads), a prefix inside a message (matched per block),
and storage fees. Notebook 01 introduces it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from types import SimpleNamespace
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import SystemMessage

from labkit._digest import message_digest
from labkit._same import same_head
from labkit.tokens import TokenCounter

__all__ = ["RULES", "TIERS", "CachePrices", "CacheRule", "PrefixCache", "StampedSystemPrompt",
           "cached_tokens", "call_cost", "requests_as_records", "run_cost"]


@dataclass(frozen=True)
class CacheRule:
    """How a provider caches: ``automatic`` prefix caching (every request can be read back by a
    later one) or explicit ``breakpoints`` (here one at the end of each request, as deepagents'
    ``AnthropicPromptCachingMiddleware`` places it: a later request reads up to an earlier
    request's end, and writes the rest). Nothing below ``minimum`` tokens is cached; past it,
    cached tokens come in multiples of ``step``. ``source``: where the figures come from."""

    name: str
    automatic: bool
    minimum: int
    step: int
    source: str


RULES: dict[str, CacheRule] = {
    "openai": CacheRule(
        "automatic prefix caching", True, 1024, 128,
        "OpenAI Cookbook, Prompt Caching 201: automatic for prompts of 1,024 tokens or more, "
        "cache hits in increments of 128 tokens"),
    "anthropic": CacheRule(
        "a breakpoint at each request's end", False, 1024, 1,
        "Anthropic prompt caching (cache_control): 1,024 tokens at least for Sonnet and Opus "
        "(2,048 for Haiku); up to 4 breakpoints a request"),
    "gemini": CacheRule(
        "implicit caching", True, 2048, 1,
        "Gemini API, context caching: implicit caching on Gemini 2.5 and newer, 2,048 tokens at "
        "least on 2.5 Flash and Pro (4,096 on Gemini 3 models)"),
}


@dataclass(frozen=True)
class CachePrices:
    """US dollars per million tokens: fresh input, cached input read, cache write, output."""

    input: float
    read: float
    write: float
    output: float


TIERS: dict[str, CachePrices] = {
    # Illustrative, like labkit.tokens.PRICES: the ratios are the documented ones, the levels are
    # examples. OpenAI: reads at a fraction of input (0.25x-0.5x on older models, 0.1x on newer),
    # no write fee; Anthropic: reads 0.1x, writes 1.25x (5-minute cache); Gemini: reads 0.1x.
    "openai-like": CachePrices(input=1.00, read=0.25, write=1.00, output=4.00),
    "anthropic-like": CachePrices(input=3.00, read=0.30, write=3.75, output=15.00),
    "gemini-like": CachePrices(input=1.25, read=0.125, write=1.25, output=10.00),
}


_BLOCK = itemgetter(0)


def _key(block: Any) -> str:
    """A block's identity for the cache: everything the provider would render of it."""
    if isinstance(block, str):
        return hashlib.sha256(block.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return message_digest(block)


class PrefixCache:
    """The prefixes a provider has seen in a run, request after request. Notebook 01.

    :meth:`observe` takes one request as blocks with their tokens and returns ``(shared, whole)``:
    the tokens of the longest prefix it shares with any earlier request, and of the longest
    earlier request that is a whole prefix of it (where a breakpoint at that request's end
    matches). Both count whole blocks only. The blocks at the head of a request that are the very
    objects of the last request (a sent message is not edited) keep what was found for them, so a
    call costs what is new in it. Thread-safe; one per run (or per Recorder)."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}  # chained hash of a prefix -> its tokens
        self._ends: set[str] = set()  # chained hashes of whole requests
        self._last: list[tuple] = []  # the last request: (block, chain, total, whole so far)
        self._lock = threading.Lock()

    def observe(self, blocks: Sequence[Any], tokens: Any = None) -> tuple[int, int]:
        """``blocks``: ``(block, tokens)`` pairs, or blocks and ``tokens`` a function giving a
        block's tokens (asked only for the blocks not carried over from the last request)."""
        pairs = tokens is None
        with self._lock:
            last = self._last
            firsts = [b[0] for b in blocks[:1]] if pairs else blocks[:1]
            k = int(bool(last and firsts and (firsts[0] is last[0][0] or (
                isinstance(firsts[0], str) and firsts[0] == last[0][0]))))  # the head: equal text
            if k:  # the rest: the very objects, at C speed (labkit._same)
                rest = blocks[1:] if not pairs else [b[0] for b in blocks[1:]]
                k += same_head(rest, map(_BLOCK, last[1:]), min(len(rest), len(last) - 1))
            entries = last[:k]
            chain, total, whole = entries[-1][1:] if entries else ("", 0, 0)
            if entries and k == len(last):
                whole = total  # the last request is a whole prefix of this one
                entries[-1] = (*entries[-1][:3], whole)
            shared, matching = total, True
            for item in blocks[k:]:
                block, n = item if pairs else (item, tokens(item))
                chain = hashlib.sha256(f"{chain}|{_key(block)}".encode()).hexdigest()[:16]
                total += n
                if matching and chain in self._seen:
                    shared = total
                    if chain in self._ends:
                        whole = total
                else:
                    matching = False
                entries.append((block, chain, total, whole))
            for _, c, t, _ in entries[k:]:
                self._seen.setdefault(c, t)
            if entries:
                self._ends.add(entries[-1][1])
            self._last = entries
        return shared, whole


def cached_tokens(seen: int, shared: int, whole: int, rule: CacheRule) -> tuple[int, int]:
    """``(read, written)`` tokens of one request of ``seen`` tokens under ``rule`` (a prefix not
    recorded — ``None``, a replay's or an older saved run's — as nothing shared). Notebook 01."""
    shared, whole = shared or 0, whole or 0
    if rule.automatic:
        if shared < rule.minimum:
            return 0, 0
        return rule.minimum + (shared - rule.minimum) // rule.step * rule.step, 0
    read = whole if whole >= rule.minimum else 0
    return read, (seen - read if seen >= rule.minimum else 0)


def call_cost(record: Any, prices: CachePrices, rule: CacheRule) -> float:
    """Dollars for one ``CallRecord`` (a refused call costs nothing) with caching. Notebook 01."""
    if record.error:
        return 0.0
    read, written = cached_tokens(record.seen, record.shared_prefix, record.whole_prefix, rule)
    fresh = record.seen - read - written
    return (fresh * prices.input + read * prices.read + written * prices.write
            + record.output_tokens * prices.output) / 1e6


def run_cost(records: Sequence[Any], prices: CachePrices | str = "openai-like",
             rule: CacheRule | str = "openai") -> dict[str, float]:
    """A run's dollars with and without caching, and the share of input tokens read from cache.
    ``records``: a run's (or a Recorder's) records. Notebook 01."""
    records = list(getattr(records, "records", records))
    prices = TIERS[prices] if isinstance(prices, str) else prices
    rule = RULES[rule] if isinstance(rule, str) else rule
    sent = [r for r in records if not r.error]
    reads = [cached_tokens(r.seen, r.shared_prefix, r.whole_prefix, rule)[0] for r in sent]
    plain = sum(r.seen * prices.input + r.output_tokens * prices.output for r in sent) / 1e6
    return {"without caching": plain, "with caching": sum(call_cost(r, prices, rule) for r in sent),
            "read from cache": sum(reads) / max(1, sum(r.seen for r in sent))}


def requests_as_records(requests: Iterable[Sequence[Any]], fixed: int = 0,
                        counter: TokenCounter | None = None) -> list[SimpleNamespace]:
    """Requests that were never sent — lists of messages, e.g. a middleware's ``view`` of each
    call of a recorded run — as records :func:`run_cost` and :func:`call_cost` can price: the
    tokens of each (``fixed``: the tools and system prompt, the same on every call) and the
    prefix it shares with the requests before it. No output tokens. Notebook 05."""
    counter, cache, out = counter or TokenCounter(), PrefixCache(), []
    for i, messages in enumerate(requests):
        blocks = [("tools and system prompt", fixed), *((m, counter.message(m)) for m in messages)]
        shared, whole = cache.observe(blocks)
        out.append(SimpleNamespace(index=i, seen=sum(t for _, t in blocks), shared_prefix=shared,
                                   whole_prefix=whole, output_tokens=0, error=None))
    return out


class StampedSystemPrompt(AgentMiddleware):
    """The habit that defeats a prompt cache: the time of each call written at the top of the
    system prompt, so no two requests share a first block. A clock that ticks a second per call
    keeps runs reproducible. Notebook 01."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def wrap_model_call(self, request, handler):
        self.calls += 1
        now = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=self.calls)
        system = request.system_message.text if request.system_message is not None else ""
        return handler(request.override(system_message=SystemMessage(f"Now: {now.isoformat()}\n\n{system}")))
