"""Tests for labkit._encode_thread: where BPE counts run, and that no count changes.

Each fact is read in a fresh Python process (whether labkit's table was claimed depends on who
loaded tiktoken's table first, which other tests in this process may have done): the process
reports, as JSON, which thread ran each count and what it counted; tiktoken's own encode is the
oracle for every count.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PROBE = textwrap.dedent("""
    import json, os, sys, threading
    import tiktoken
    if sys.argv[1] == "tiktoken first":  # someone else loads and uses the table before labkit
        tiktoken.get_encoding("o200k_base").encode("x")
    from labkit import _encode_thread, tokens

    ran = []
    real = _encode_thread._encode_len
    _encode_thread._encode_len = lambda enc, text: (ran.append(threading.current_thread().name)
                                                    or real(enc, text))
    text = "ticker,revenue\\nACME,1234567\\n<|endoftext|> 中文 " * 40

    def counted(where):
        ran.clear()
        n = (_encode_thread.count(tokens.encoding(), text) if where == "direct"
             else tokens.TokenCounter().text(text))
        tokens._TEXT_TOKENS = type(tokens._TEXT_TOKENS)()  # the next count encodes again
        return {"tokens": n, "ran on": list(ran)}

    facts = {"claimed": id(tokens.encoding()) in _encode_thread._CLAIMED}
    facts["oracle"] = len(tiktoken.get_encoding("o200k_base").encode(text, disallowed_special=()))
    facts["main thread"] = counted("counter")
    out = {}
    worker = threading.Thread(target=lambda: out.update(counted("counter")), name="tool-worker")
    worker.start(); worker.join()
    facts["worker thread"] = out
    with _encode_thread._FREE:  # another count is waiting on the counting thread
        facts["while busy"] = counted("direct")
    assert len(text) >= _encode_thread.HOP_CHARS
    long_text, text = text, text[:_encode_thread.HOP_CHARS - 1]
    oracle = len(tiktoken.get_encoding("o200k_base").encode(text, disallowed_special=()))
    facts["short text"] = dict(counted("direct"), oracle=oracle)
    text = long_text
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(w, json.dumps(counted("counter")).encode()); os._exit(0)
    os.waitpid(pid, 0)
    facts["forked child"] = json.loads(os.read(r, 100_000))
    print(json.dumps(facts))
""")


def _facts(mode: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def labkit_first() -> dict:
    return _facts("labkit first")


@pytest.fixture(scope="module")
def tiktoken_first() -> dict:
    return _facts("tiktoken first")


def test_the_table_labkit_loads_is_claimed_by_the_counting_thread(labkit_first):
    assert labkit_first["claimed"], "labkit loaded the table first, so its counting thread uses it first"


@pytest.mark.parametrize("where", ["main thread", "worker thread"])
def test_every_thread_counts_on_the_counting_thread(labkit_first, where):
    fact = labkit_first[where]
    assert fact["ran on"] == ["labkit-count_0"], f"a count asked from the {where} ran on {fact['ran on']}"
    assert fact["tokens"] == labkit_first["oracle"], "the count is tiktoken's"


@pytest.mark.parametrize("where", ["while busy", "forked child", "short text"])
def test_a_count_runs_in_place_when_the_thread_is_busy_or_gone_or_the_text_short(labkit_first, where):
    fact = labkit_first[where]
    assert fact["ran on"] == ["MainThread"], f"{where}: the count ran on {fact['ran on']}, not in place"
    assert fact["tokens"] == fact.get("oracle", labkit_first["oracle"]), "the count is tiktoken's"


def test_a_table_used_before_labkit_loaded_it_is_not_claimed(tiktoken_first):
    assert not tiktoken_first["claimed"], "another thread may own it: labkit must not send counts away"
    for where in ("main thread", "worker thread"):
        fact = tiktoken_first[where]
        assert fact["ran on"] == (["MainThread"] if where == "main thread" else ["tool-worker"]), \
            f"unclaimed: a count asked from the {where} runs where it was asked, not on {fact['ran on']}"
        assert fact["tokens"] == tiktoken_first["oracle"], "the count is tiktoken's"


def _alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of a regex (``|`` outside brackets and parentheses)."""
    parts, depth, klass, escaped, start = [], 0, False, False, 0
    for i, ch in enumerate(pattern):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif klass:
            klass = ch != "]"
        elif ch == "[":
            klass = True
        elif ch in "()":
            depth += 1 if ch == "(" else -1
        elif ch == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
    return [*parts, pattern[start:]]


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_the_claim_runs_every_alternative_of_the_split_pattern(name):
    import regex  # tiktoken's own dependency: the pattern's \p{..} classes

    from labkit import _encode_thread, tokens  # the private claim is what this test is about

    alternatives = _alternatives(tokens.encoding(name)._pat_str)
    assert len(alternatives) >= 7, alternatives
    missed = [a for a in alternatives if not regex.search(a, _encode_thread.CLAIM_TEXT)]
    assert not missed, f"the claim leaves these parts of {name}'s pattern to another thread: {missed}"


def test_count_many_gives_each_texts_count_wherever_it_runs():
    from labkit import _encode_thread
    from labkit.tokens import TokenCounter, encoding

    enc = encoding()
    texts = ["short line\n", "x" * 900 + "\n", "中文 " * 400, ""]
    want = [len(enc.encode(t, disallowed_special=())) for t in texts]
    assert _encode_thread.count_many(enc, texts) == want, "together (over HOP_CHARS): on the thread"
    assert _encode_thread.count_many(enc, texts[:1]) == want[:1], "short: in place"
    assert TokenCounter().texts(texts + texts[:1]) == want + want[:1], "cached or not, repeated or not"
