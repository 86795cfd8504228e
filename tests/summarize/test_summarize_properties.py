"""labkit.summarize's invariants on random histories (hypothesis).

Histories are well formed, as an agent loop stores them: turns of a human message, then AI
messages with 0-3 tool calls, each followed by its results, ending in an AI text. Every message
carries a unique marker (``[m0007]``), so the archive can be counted message by message.

The invariants of issue 4, checked over a simulated run through the middleware's own
``wrap_model_call`` and its ``compact_conversation`` tool, with random trigger and keep knobs, a
model that may overflow, and a user who re-invokes once after an error:

* no orphan tool message ever reaches the model;
* every folded message is in the archive exactly once (and no message is archived twice);
* each new event moves the cut strictly forward, and no archive section is empty;
* state never loses a message (the middleware never writes ``messages``).

And the cut itself: the token budget equals a brute-force linear scan and langchain's binary
search, counting each message once; ``keep=("messages", n)`` and the pair rule equal langchain's.
"""

from __future__ import annotations

import itertools
import re
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from langchain.agents.middleware import ModelRequest
from langchain.agents.middleware.summarization import SummarizationMiddleware as LangchainSummarization
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from labkit.summarize import EVENTS_KEY, SummarizeMiddleware, cut_point, events_of, safe_cut, view
from labkit.summarize.archive import read_archive
from labkit.tokens import TokenCounter
from tests.conftest import MemoryBackend

SETTINGS = settings(derandomize=True, deadline=None, max_examples=60,
                    suppress_health_check=[HealthCheck.too_slow])
SUMMARY = "SUMMARY-TEXT (no marker)"
MARKER = re.compile(r"\[m\d{4}\]")
LC = LangchainSummarization(GenericFakeChatModel(messages=iter([])), keep=("messages", 20))
COUNTER = TokenCounter()


# -- random well-formed histories ------------------------------------------------------------------


@st.composite
def histories(draw, max_turns: int = 6, compact_tool: bool = False) -> list:
    """Turns: a human message, 0-3 AI steps with 1-3 parallel tool calls and their results
    (or, with ``compact_tool``, a call to compact_conversation), then an AI text."""
    out: list = []

    def text(role: str) -> str:
        words = draw(st.integers(0, 60))
        return f"[m{len(out):04d}] {role} " + "word " * words

    for _ in range(draw(st.integers(1, max_turns))):
        out.append(HumanMessage(text("human"), id=f"m{len(out)}"))
        for _ in range(draw(st.integers(0, 3))):
            if compact_tool and draw(st.integers(0, 5)) == 0:
                call_id = f"k{len(out)}"
                out.append(AIMessage(text("compact"), id=f"m{len(out)}", tool_calls=[
                    {"name": "compact_conversation", "args": {}, "id": call_id, "type": "tool_call"}]))
                out.append(("compact", call_id))  # the tool's own answer goes here
                continue
            ids = [f"c{len(out)}_{j}" for j in range(draw(st.integers(1, 3)))]
            ai = AIMessage(text("ai"), id=f"m{len(out)}",
                           tool_calls=[{"name": "f", "args": {"i": i}, "id": i, "type": "tool_call"}
                                       for i in ids])
            out.append(ai)
            for i in ids:
                out.append(ToolMessage(text("tool"), tool_call_id=i, id=f"m{len(out)}"))
        out.append(AIMessage(text("answer"), id=f"m{len(out)}"))
    return out


def assert_well_formed(messages) -> None:
    """Every tool result follows the AI message that called it (only results in between), and
    every call is answered before the next other message."""
    pending: set[str] = set()
    for i, m in enumerate(messages):
        if isinstance(m, ToolMessage):
            assert m.tool_call_id in pending, f"orphan tool message at view position {i}"
            pending.discard(m.tool_call_id)
            continue
        assert not pending, f"tool calls {sorted(pending)} unanswered before view position {i}"
        if isinstance(m, AIMessage):
            pending = {tc["id"] for tc in m.tool_calls}
    assert not pending, f"tool calls {sorted(pending)} unanswered at the end of the view"


def words(m) -> int:
    return len(m.content.split()) + 3


# -- the cut ---------------------------------------------------------------------------------------


@SETTINGS
@given(history=histories(), budget=st.integers(1, 600), start=st.sampled_from([0, 1]))
def test_the_token_budget_keeps_within_budget_whenever_a_pair_safe_cut_fits(history, budget, start):
    """The cut is the smallest pair-safe cut whose kept suffix fits the budget (found by a linear
    scan here), the latest message always kept; only when no such cut exists does it move back to
    the AI message (over the budget, as langchain does). Each message is counted once."""
    calls = []

    def tokens(m):
        calls.append(m.id)
        return words(m)

    got = cut_point(history, ("tokens", budget), None, tokens, start=start)
    assert sorted(calls) == sorted(m.id for m in history), "exactly one count per message"
    n, sizes = len(history), [words(m) for m in history]
    fitting = [i for i in range(start, n) if sum(sizes[i:]) <= budget
               and (i == start or not isinstance(history[i], ToolMessage))]
    if fitting:
        assert got == fitting[0], "the pair-safe cut that keeps the most within the budget"
    else:
        fits = next(i for i in range(n + 1) if sum(sizes[i:]) <= budget)
        cut = min(max(fits, start), n - 1)
        while 0 < cut and isinstance(history[cut], ToolMessage):
            cut -= 1
        assert got == max(cut, start)
    assert got == start or not isinstance(history[got], ToolMessage)
    if start == 0:
        lc = LangchainSummarization(GenericFakeChatModel(messages=iter([])), keep=("tokens", budget),
                                    token_counter=lambda ms: sum(words(m) for m in ms))
        theirs = lc._find_token_based_cutoff(history)
        if sum(sizes[theirs:]) <= budget or not fitting:
            assert got == theirs, "where langchain's cut fits, or nothing fits, the two agree"
        else:
            assert got > theirs, "langchain moved back over the budget; labkit moved forward"


@SETTINGS
@given(history=histories(), keep=st.integers(1, 40))
def test_keep_messages_and_the_pair_rule_equal_langchains(history, keep):
    assert cut_point(history, ("messages", keep), None, words) == LC._find_safe_cutoff(history, keep)
    for c in range(len(history) + 1):
        got = safe_cut(history, c)
        assert got == LC._find_safe_cutoff_point(history, c)
        if got < c:  # moved back: to the AI message whose results it landed on
            assert history[got].tool_calls and all(isinstance(m, ToolMessage) for m in history[got + 1:c + 1])


# -- a simulated run through the middleware ---------------------------------------------------------


@st.composite
def knobs(draw) -> dict:
    """Random valid trigger and keep, in any of the three forms (fractions of a 4,000 window)."""
    window = 4_000
    kind = draw(st.sampled_from(["messages", "tokens", "fraction"]))
    if kind == "messages":
        trigger = ("messages", draw(st.integers(3, 40)))
    elif kind == "tokens":
        trigger = ("tokens", draw(st.integers(150, 4_000)))
    else:
        trigger = ("fraction", draw(st.sampled_from([0.1, 0.25, 0.5, 0.85, 1])))
    keep_kind = draw(st.sampled_from(["messages", "tokens", "fraction"]))
    if keep_kind == "messages":
        top = trigger[1] - 1 if kind == "messages" else 12
        keep = ("messages", draw(st.integers(1, max(1, top))))
    else:
        limit = {"messages": 2_000, "tokens": trigger[1] if kind == "tokens" else 0,
                 "fraction": int(window * trigger[1]) if kind == "fraction" else 0}[kind]
        tokens = draw(st.integers(1, max(1, limit - 1)))
        keep = ("tokens", tokens) if keep_kind == "tokens" else ("fraction", max(tokens, 1) / window)
    return {"trigger": trigger, "keep": keep, "window": window,
            "gate": draw(st.sampled_from([0.25, 0.5, 1]))}


def simulate(history, knob, overflow_at, flaky=frozenset()):
    """Play ``history`` as an agent loop: the model is called before each AI message, through
    ``wrap_model_call``; a compact_conversation call runs the middleware's tool. The model
    overflows above ``overflow_at`` tokens, and on the calls numbered in ``flaky``; after an
    error the user re-invokes once, and a second error ends the run. Returns (state, the
    archive files, whether the run finished)."""
    backend = MemoryBackend()
    summarizer = GenericFakeChatModel(messages=itertools.repeat(SUMMARY))
    mw = SummarizeMiddleware(summarizer, manual_tool=True, backend=backend, **knob)
    state: dict = {"messages": [], **(mw.before_agent({}, None) or {})}  # as the graph starts a thread
    calls = itertools.count()

    def handler(request):
        assert_well_formed(request.messages)
        too_long = overflow_at is not None and COUNTER.messages(request.messages) > overflow_at
        if next(calls) in flaky or too_long:
            raise ContextOverflowError("prompt is too long")
        return nxt

    for nxt in history:
        if isinstance(nxt, tuple):  # the compact_conversation tool answers its call
            runtime = SimpleNamespace(state=dict(state), tool_call_id=nxt[1])
            update = mw.tools[0].func(runtime).update
            assert set(update) <= {"messages", EVENTS_KEY} and len(update["messages"]) == 1
            state.update({k: v for k, v in update.items() if k != "messages"})
            state["messages"] = state["messages"] + update["messages"]
            continue
        if isinstance(nxt, AIMessage):
            for attempt in (1, 2):
                request = ModelRequest(model=summarizer, messages=list(state["messages"]), state=dict(state))
                try:
                    result = mw.wrap_model_call(request, handler)
                    break
                except ContextOverflowError:
                    event("re-invoked after an error")
                    if attempt == 2:
                        return state, backend.files, False
            if not isinstance(result, AIMessage):
                update = result.command.update
                assert set(update) == {EVENTS_KEY}, "the middleware never writes messages"
                state[EVENTS_KEY] = update[EVENTS_KEY]
        state["messages"] = state["messages"] + [nxt]
    return state, backend.files, True


RUNS = {
    "random knobs": st.fixed_dictionaries({
        "knob": knobs(), "overflow_at": st.one_of(st.none(), st.integers(100, 1_500)),
        "flaky": st.just(frozenset())}),
    "overflow only": st.fixed_dictionaries({  # the trigger never fires: every event is an overflow
        "knob": knobs().map(lambda k: {**k, "trigger": ("tokens", 10**6)}),
        "overflow_at": st.integers(250, 1_500), "flaky": st.just(frozenset())}),
    "flaky model": st.fixed_dictionaries({  # errors after a compaction, then a re-invoke
        "knob": knobs(), "overflow_at": st.none(),
        "flaky": st.frozensets(st.integers(0, 40), max_size=10)}),
}


@pytest.mark.parametrize("kind", RUNS)
def test_the_invariants_hold_over_a_simulated_run(kind):
    @SETTINGS
    @given(history=histories(max_turns=8, compact_tool=True), run=RUNS[kind])
    def check(history, run):
        check_run(history, **run)

    check()


def check_run(history, knob, overflow_at, flaky):
    state, files, finished = simulate(history, knob, overflow_at, flaky)
    messages, events = state["messages"], events_of(state)
    played = [m for m in history if not isinstance(m, tuple)]
    event(f"reasons: {sorted({e.reason for e in events})}")
    event("finished" if finished else "ended by a second overflow")
    # state never loses a message: it holds the history played so far, in order, untouched
    ours = [m for m in messages if MARKER.search(m.content)]
    assert ours == played[:len(ours)] and (len(ours) == len(played) or not finished)
    assert all(m in ours or m.type == "tool" and m.tool_call_id.startswith("k") for m in messages)
    # (what the model saw was checked in the handler: no orphan, no unanswered call)
    # each event moves the cut strictly forward, and is numbered in order
    assert [e.number for e in events] == list(range(1, len(events) + 1))
    assert all(a.cut < b.cut for a, b in zip(events, events[1:]))
    assert all(0 < e.cut < e.created_at <= len(messages) for e in events)
    # the view is the summary, then every message from the cut on
    if events:
        shown = view(messages, events[-1])
        assert shown[0].content.endswith(f"<summary>\n{SUMMARY}\n</summary>")
        assert shown[1:] == messages[events[-1].cut:]
        assert_well_formed(shown)
    # each event's own section holds exactly the messages it folded: every folded message once
    text = files.get("/conversation_history/default.md", "")
    assert SUMMARY not in text, "a summary is never archived"
    sections = {found.id: found for found in read_archive(text)}
    cuts = [0] + [e.cut for e in events]
    for e, first, end in zip(events, cuts, cuts[1:]):
        assert first < end and sections[e.section].messages == messages[first:end], f"section {e.section}"
    # a section no event names was written by a compaction whose call then failed (its event never
    # reached state, and a redo that folds otherwise appends): it only holds copies
    extra = [found for key, found in sections.items() if key not in {e.section for e in events}]
    assert not extra or flaky or not finished, "a leftover section only after an error"
    assert all(m in messages for found in extra for m in found.messages), "nothing archived that state lacks"


# -- what applications do: remove old turns, reset the thread (issue 22) ----------------------------


def _markers(messages) -> set[str]:
    return set(MARKER.findall(" ".join(m.content for m in messages if isinstance(m.content, str))))


@pytest.mark.parametrize("actions", [("keep", "drop"), ("keep", "drop", "reset")], ids=["removals", "resets"])
def test_nothing_in_state_is_hidden_when_an_application_removes_messages(actions):
    """Before each turn the application may drop the oldest turn (RemoveMessage of its messages)
    or reset the thread (REMOVE_ALL_MESSAGES). On every model call, each message still in state
    is either sent or archived, and the request is well formed."""
    @SETTINGS
    @given(history=histories(max_turns=8), knob=knobs(),
           plan=st.lists(st.sampled_from(actions), min_size=8, max_size=8))
    def check(history, knob, plan):
        backend = MemoryBackend()
        summarizer = GenericFakeChatModel(messages=itertools.repeat(SUMMARY))
        mw = SummarizeMiddleware(summarizer, backend=backend, **knob)
        state: dict = {"messages": [], **(mw.before_agent({}, None) or {})}
        turns = iter(plan)

        def handler(request):
            assert_well_formed(request.messages)
            archived = set(MARKER.findall("".join(backend.files.values())))
            hidden = _markers(state["messages"]) - _markers(request.messages) - archived
            assert not hidden, f"in state, but neither sent nor archived: {sorted(hidden)}"
            return nxt

        for nxt in history:
            if isinstance(nxt, HumanMessage) and state["messages"]:
                act = next(turns)
                event(f"application: {act}")
                humans = [i for i, m in enumerate(state["messages"]) if isinstance(m, HumanMessage)]
                if act == "drop" and len(humans) > 1:
                    state["messages"] = state["messages"][humans[1]:]
                elif act == "reset":
                    state["messages"] = []
            if isinstance(nxt, AIMessage):
                request = ModelRequest(model=summarizer, messages=list(state["messages"]), state=dict(state))
                result = mw.wrap_model_call(request, handler)
                if not isinstance(result, AIMessage):
                    state[EVENTS_KEY] = result.command.update[EVENTS_KEY]
            state["messages"] = state["messages"] + [nxt]

    check()
