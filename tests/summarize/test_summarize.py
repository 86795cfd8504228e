"""labkit.summarize: knobs, the pair-safe cut, the event and view, the archive, the summary, the
overflow fallback, the manual tool, tagged summary calls, and standing in for deepagents' own.

Oracles: deepagents' ``compute_summarization_defaults`` for the defaults, and langchain's
``SummarizationMiddleware`` cut-point helpers where the rules are the same (the differences are
asserted and explained where they occur). The random-history invariants are in
``test_summarize_properties.py``.
"""

from __future__ import annotations

import asyncio
from xml.sax.saxutils import escape

import pytest
from deepagents.backends import FilesystemBackend
from deepagents.backends.protocol import FileDownloadResponse, WriteResult
from deepagents.middleware.filesystem import FilesystemMiddleware
from deepagents.middleware.summarization import compute_summarization_defaults
from langchain.agents import create_agent
from langchain.agents.middleware.summarization import SummarizationMiddleware as LangchainSummarization
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, get_buffer_string
from langgraph.checkpoint.memory import InMemorySaver

from labkit import LabModel, prompts, scenario
from labkit.summarize import (
    EVENTS_KEY,
    Event,
    SummarizeMiddleware,
    archive_path,
    archive_section,
    cut_point,
    defaults,
    events_of,
    safe_cut,
    should_compact,
    summary_message,
    summary_prompt,
    view,
)
from labkit.summarize.archive import read_archive
from labkit.tokens import message_text
from tests.conftest import FIXED, Scripted, assert_snapshot

FIGURE = scenario.needle().answer  # "117.4%": the exact value a summary drops
SECTIONS = [f"## {s}" for s in prompts.SUMMARY_SECTIONS]


# -- building histories and models ---------------------------------------------------------------


def H(text: str) -> HumanMessage:
    return HumanMessage(text, id=text)


def A(text: str, *calls: str, tool: str = "f") -> AIMessage:
    """An AI message; each name in ``calls`` is the id of one tool call."""
    return AIMessage(text, id=text, tool_calls=[
        {"name": tool, "args": {"n": c}, "id": c, "type": "tool_call"} for c in calls])


def T(call_id: str) -> ToolMessage:
    return ToolMessage(f"result of {call_id}", tool_call_id=call_id, id=f"t-{call_id}")


def key(message) -> tuple[str, str]:
    """What a message puts in the context: its role and its text (tool-call arguments included)."""
    return message.type, message_text(message)


def keys(messages) -> list[tuple[str, str]]:
    return [key(m) for m in messages if m.type != "system"]


def scripted(*replies, overflows: int = 0) -> Scripted:
    """A Scripted model whose first ``overflows`` calls raise ContextOverflowError."""
    return Scripted(messages=iter(replies), overflow_on=tuple(range(1, overflows + 1)))


def agent_for(model, mw, **kwargs):
    """The scenario's tools and deepagents' file tools (no eviction), with ``mw``."""
    fs = FilesystemMiddleware(tool_token_limit_before_evict=None,
                              human_message_token_limit_before_evict=None)
    return create_agent(model, tools=scenario.tools(), middleware=[fs, mw], **kwargs)


def config(thread: str) -> dict:
    return {"configurable": {"thread_id": thread}, "recursion_limit": 200}


class MemoryBackend:
    """The two backend methods the archive uses, over a dict; ``fail`` makes them misbehave."""

    def __init__(self, fail: str | None = None) -> None:
        self.files: dict[str, str] = {}
        self.fail = fail
        self.writes = 0

    def download_files(self, paths):
        if self.fail == "read":
            return [FileDownloadResponse(path=p, content=None, error="permission_denied") for p in paths]
        return [FileDownloadResponse(path=p, content=self.files[p].encode(), error=None)
                if p in self.files else FileDownloadResponse(path=p, content=None, error="file_not_found")
                for p in paths]

    def write(self, path, content):
        self.writes += 1
        if self.fail == "write":
            return WriteResult(error="disk full")
        if self.fail == "raise":
            raise OSError("the disk went away")
        self.files[path] = content
        return WriteResult(path=path)


# -- knobs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", [
    LabModel(window=60_000),
    LabModel(window=1_000_000),
    LabModel(profile=None),
    GenericFakeChatModel(messages=iter([])),
    GenericFakeChatModel(messages=iter([]), profile={"max_output_tokens": 10}),  # no window in it
], ids=["60k", "1M", "lab-no-profile", "fake-no-profile", "profile-without-window"])
def test_defaults_are_deepagents_defaults(model):
    expected = compute_summarization_defaults(model)
    assert defaults(model) == (expected["trigger"], expected["keep"])
    mw = SummarizeMiddleware(model)
    assert (mw.trigger, mw.keep) == (tuple(expected["trigger"]), tuple(expected["keep"]))


def test_defaults_with_and_without_a_profile():
    with_profile = SummarizeMiddleware(LabModel(window=60_000))
    assert (with_profile.trigger, with_profile.keep, with_profile.window) == \
        (("fraction", 0.85), ("fraction", 0.10), 60_000)
    without = SummarizeMiddleware(LabModel(window=60_000, profile=None))
    assert (without.trigger, without.keep, without.window) == (("tokens", 170_000), ("messages", 6), None)


BAD_KNOBS = [
    ("trigger", ("fraction", 0)), ("trigger", ("fraction", 1.01)), ("trigger", ("fraction", -0.5)),
    ("keep", ("fraction", 0.0)), ("trigger", ("fraction", float("nan"))),
    ("trigger", ("tokens", 0)), ("keep", ("tokens", -1)), ("keep", ("messages", 0)),
    ("trigger", ("messages", 2.5)), ("keep", ("tokens", 100.0)), ("keep", ("tokens", "100")),
    ("trigger", ("tokens", True)), ("keep", ("messages", True)), ("trigger", ("fraction", True)),
    ("trigger", ("bytes", 100)), ("keep", ("Tokens", 100)), ("trigger", "tokens"),
    ("trigger", ("tokens",)), ("trigger", ("tokens", 100, 1)), ("keep", {"tokens": 100}),
]


@pytest.mark.parametrize(("knob", "value"), BAD_KNOBS, ids=[f"{k}={v!r}" for k, v in BAD_KNOBS])
def test_an_invalid_knob_is_refused_at_construction_by_name(knob, value):
    with pytest.raises(ValueError) as e:
        SummarizeMiddleware(LabModel(window=100_000), **{knob: value})
    assert str(e.value).startswith(knob), e.value


def test_the_knob_forms_are_accepted_as_tuples_or_lists():
    mw = SummarizeMiddleware(LabModel(window=100_000), trigger=["tokens", 50_000], keep=("messages", 3))
    assert mw.trigger == ("tokens", 50_000) and mw.keep == ("messages", 3)
    assert SummarizeMiddleware(LabModel(window=100_000), trigger=("fraction", 1)).trigger == ("fraction", 1)


@pytest.mark.parametrize("knob", ["trigger", "keep"])
def test_a_fraction_needs_a_profile_or_a_window(knob):
    model = LabModel(profile=None)
    knobs = {"trigger": ("tokens", 50_000), "keep": ("messages", 2), knob: ("fraction", 0.1)}
    with pytest.raises(ValueError, match=rf"^{knob}=.*no profile.*window="):
        SummarizeMiddleware(model, **knobs)
    mw = SummarizeMiddleware(model, **knobs, window=100_000)
    assert mw.window == 100_000


def test_a_fraction_with_window_sets_the_trigger_threshold():
    mw = SummarizeMiddleware(LabModel(profile=None), trigger=("fraction", 0.5), keep=("messages", 2),
                             window=10_000)
    assert not should_compact(4_999, 1, mw.trigger, mw.window)
    assert should_compact(5_000, 1, mw.trigger, mw.window)


KEEP_NOT_BELOW_TRIGGER = [
    (LabModel(window=100_000), {"trigger": ("messages", 6), "keep": ("messages", 6)}),
    (LabModel(window=100_000), {"trigger": ("messages", 6), "keep": ("messages", 10)}),
    (LabModel(window=100_000), {"trigger": ("tokens", 1_000), "keep": ("tokens", 1_000)}),
    (LabModel(window=100_000), {"trigger": ("tokens", 50_000), "keep": ("fraction", 0.5)}),
    (LabModel(window=100_000), {"trigger": ("fraction", 0.5), "keep": ("tokens", 60_000)}),
    (LabModel(window=100_000), {"trigger": ("fraction", 0.5), "keep": ("fraction", 0.5)}),
    (LabModel(window=100_000), {"trigger": ("tokens", 5_000)}),  # the default keep: 10% = 10,000
    (LabModel(profile=None), {"keep": ("tokens", 170_000)}),  # vs the fallback trigger
    (LabModel(profile=None), {"trigger": ("fraction", 0.5), "keep": ("tokens", 6_000), "window": 10_000}),
]


@pytest.mark.parametrize(("model", "knobs"), KEEP_NOT_BELOW_TRIGGER)
def test_keep_must_be_below_the_trigger(model, knobs):
    with pytest.raises(ValueError, match=r"^keep=.*must keep less than trigger="):
        SummarizeMiddleware(model, **knobs)


def test_keep_in_messages_and_trigger_in_tokens_cannot_be_compared_so_both_are_allowed():
    mw = SummarizeMiddleware(LabModel(window=100_000), trigger=("tokens", 1_000), keep=("messages", 50))
    assert mw.keep == ("messages", 50)


@pytest.mark.parametrize("gate", [0, -0.1, 1.01, True, "0.5", None, float("nan")])
def test_a_bad_gate_is_refused(gate):
    with pytest.raises(ValueError, match=r"^gate must be a fraction"):
        SummarizeMiddleware(LabModel(), gate=gate)


@pytest.mark.parametrize("window", [0, -1, True, 1.5, "100000"])
def test_a_bad_window_is_refused(window):
    with pytest.raises(ValueError, match=r"^window must be"):
        SummarizeMiddleware(LabModel(profile=None), window=window)


def test_should_compact_at_the_threshold_not_before():
    assert should_compact(0, 6, ("messages", 6), None) and not should_compact(10**9, 5, ("messages", 6), None)
    assert (should_compact(1_000, 1, ("tokens", 1_000), None)
            and not should_compact(999, 99, ("tokens", 1_000), None))
    assert (should_compact(850, 1, ("fraction", 0.85), 1_000)
            and not should_compact(849, 1, ("fraction", 0.85), 1_000))
    assert not should_compact(10**9, 10**9, ("fraction", 0.85), None), "a fraction with no window never fires"


# -- the safe cut ---------------------------------------------------------------------------------

PARALLEL = [H("h0"), A("a1", "c1", "c2", "c3"), T("c1"), T("c2"), T("c3"), A("a5"), H("h6"),
            A("a7", "c4"), T("c4"), A("a9")]
LC = LangchainSummarization(GenericFakeChatModel(messages=iter([])), keep=("messages", 20))


def test_safe_cut_never_separates_parallel_tool_calls_from_their_results():
    """Cuts at 2, 3 and 4 land on the first, second and third result of a1's three calls: all
    move back to a1 (index 1); 8 is c4's result and moves back to a7; out-of-range cuts clamp."""
    got = {c: safe_cut(PARALLEL, c) for c in range(-1, len(PARALLEL) + 2)}
    assert got == {-1: 0, 0: 0, 1: 1, 2: 1, 3: 1, 4: 1, 5: 5, 6: 6, 7: 7, 8: 7, 9: 9, 10: 10, 11: 10}
    for c in range(len(PARALLEL) + 1):
        assert safe_cut(PARALLEL, c) == LC._find_safe_cutoff_point(PARALLEL, c), c


@pytest.mark.parametrize("keep", range(1, len(PARALLEL) + 3))
def test_keep_messages_cuts_where_langchain_cuts(keep):
    tokens = lambda m: pytest.fail("a message count needs no token count")  # noqa: E731
    assert cut_point(PARALLEL, ("messages", keep), None, tokens) == LC._find_safe_cutoff(PARALLEL, keep)


def test_a_cut_on_the_second_of_three_tool_results_moves_back_to_their_call():
    """keep 7 of 10 messages: the target cut is 3, c2's result; it moves to a1, keeping 9."""
    assert cut_point(PARALLEL, ("messages", 7), None, len) == 1


def test_where_labkit_and_langchain_differ_on_the_cut():
    """Two differences, both on histories a well-formed agent loop does not produce, or on a
    chained view:

    * A tool result with no AI message before it (an orphan): langchain skips *forward* past
      the results, labkit moves back (here to 0, so nothing is folded). Folding only part of a
      broken history would not mend it; labkit leaves it alone.
    * A chained view ``[summary, ...]`` where the cut can only fall right after the summary:
      langchain's cutoff 1 would re-summarize the summary alone; labkit's ``start=1`` says
      "nothing to fold" and no event is made (see the next test)."""
    orphans = [H("h0"), T("x1"), T("x2"), A("a3"), H("h4")]
    assert LC._find_safe_cutoff_point(orphans, 1) == 3
    assert safe_cut(orphans, 1) == 0


def test_a_cut_at_a_tool_result_right_after_the_summary_folds_nothing():
    """The previous event cut at a3 (index 3), so the view is [summary, a3, t-c1, h5, a6];
    keeping 3 messages targets view index 2, c1's result, which moves back to a3 = start: no new
    event, and the summarizer is never called. A budget of 30 tokens (three messages of 10) also
    lands on t-c1, but moving forward past it (to h5) keeps 20 tokens, within the budget: cut 3."""
    messages = [H("h0"), A("a1"), H("h2"), A("a3", "c1"), T("c1"), H("h5"), A("a6")]
    first = Event(cut=3, summary="S1", archive=None, created_at=5, number=1)
    shown = view(messages, first)
    assert keys(shown[1:]) == keys(messages[3:])
    assert cut_point(shown, ("messages", 3), None, len, start=1) == 1
    assert cut_point(shown, ("tokens", 30), None, lambda m: 10, start=1) == 3  # forward past t-c1
    assert LC._find_safe_cutoff(shown, 3) == 1  # langchain agrees on the index, and would fold the summary
    never = scripted()  # no replies: a summary call would fail
    mw = SummarizeMiddleware(never, trigger=("messages", 4), keep=("messages", 3), backend=MemoryBackend())
    assert mw.compact(messages, [first]) is None and never.seen == []


def test_the_token_budget_counts_each_message_once_and_cuts_where_langchain_does():
    """Sizes 5, 40, 10, 10, 10, 5, 20, 20, 10, 5 (h0 … a9). Suffix sums from the end: 5, 15,
    35 (from a7), 55 (from h6) … 90 (from t-c1), 130 (from a1).

    * budget 35: the smallest fitting suffix starts at a7 (index 7), which is safe: cut 7;
    * budget 25: it starts at t-c4 (8), a tool result: moving back to a7 would keep 35 > 25, so
      the cut moves forward past the block, to a9: cut 9 (keeps 5);
    * budget 80: it starts at t-c2 (3), the 2nd of a1's three results: forward past t-c3 to a5,
      cut 5 (keeps 60); langchain moves back to a1, cut 1, and keeps 125 — over the budget;
    * budget 4: nothing fits, and the latest message always stays: cut 9;
    * a budget above the total folds nothing: cut 0.

    Where the smallest fitting suffix starts at a safe message (35, 4, the total) langchain's
    cutter agrees; inside a block of tool results it moves back, over the budget."""
    sizes = dict(zip([m.id for m in PARALLEL], [5, 40, 10, 10, 10, 5, 20, 20, 10, 5]))
    calls = []

    def tokens(m):
        calls.append(m.id)
        return sizes[m.id]

    for budget, expected, langchains in [(35, 7, 7), (25, 9, 7), (80, 5, 1), (4, 9, 9), (10**6, 0, 0)]:
        calls.clear()
        lc = LangchainSummarization(GenericFakeChatModel(messages=iter([])), keep=("tokens", budget),
                                    token_counter=lambda ms: sum(sizes[m.id] for m in ms))
        assert cut_point(PARALLEL, ("tokens", budget), None, tokens) == expected, budget
        assert lc._find_token_based_cutoff(PARALLEL) == langchains, budget
        assert sorted(calls) == sorted(sizes), "each message is counted once, no more"
    assert cut_point(PARALLEL, ("fraction", 0.035), 1_000, tokens) == 7, (
        "a fraction is a budget of the window")


# -- snapshots of the text learners read -----------------------------------------------------------

SNAPSHOT_EVENT = Event(cut=12, summary="## SESSION INTENT\n- the weekly report\n\n## SUMMARY\nNone",
                       archive="/conversation_history/lab.md", created_at=20, number=2)


@pytest.mark.parametrize(("name", "text"), [
    ("summary_message.txt", summary_message(SNAPSHOT_EVENT).content),
    ("summary_message_no_archive.txt",
     summary_message(Event(cut=3, summary="S", archive=None, created_at=5, number=1)).content),
    ("archive_section.txt", archive_section([H("h0"), A("", "c1", tool="fetch_market_data"), T("c1")],
                                            1, 0, FIXED, section="0123456789ab-1", nonce="f" * 16)),
])
def test_golden_snapshot(name, text):
    """Rewrite on purpose with ``LABKIT_UPDATE_SNAPSHOTS=1`` and commit with the change."""
    assert_snapshot(name, text)


def test_summary_message_is_tagged_and_names_its_archive():
    msg = summary_message(SNAPSHOT_EVENT)
    assert msg.additional_kwargs["lc_source"] == "summarization"
    assert "/conversation_history/lab.md" in msg.content and "first 12 messages" in msg.content
    assert "archived" not in summary_message(Event(3, "S", None, 5, 1)).content


def test_archive_paths_are_one_per_thread_and_stay_in_the_history_folder():
    assert archive_path("lab") == "/conversation_history/lab.md"
    assert archive_path("") == "/conversation_history/default.md"
    hostile = archive_path("../../etc/passwd")
    assert hostile.startswith("/conversation_history/") and hostile.count("/") == 2 and ".." not in hostile
    assert archive_path("a/b") != archive_path("a_b")


def test_events_of_an_empty_state():
    assert events_of({}) == [] and events_of({EVENTS_KEY: None}) == []


# -- the running example: non-destructive, the view, the archive, the summary ------------------------


@pytest.fixture(scope="module")
def run60():
    """The scenario at a 60k window with labkit's middleware: four compactions."""
    model = LabModel(window=60_000)
    return model, scenario.run(model, middleware=[SummarizeMiddleware(model, clock=lambda: FIXED)])


def test_the_60k_run_survives_with_several_events(run60):
    model, run = run60
    events = events_of(run.state)
    assert run.error is None and run.score.goal_completed and run.score.needle_correct
    assert len(events) >= 2 and [e.number for e in events] == list(range(1, len(events) + 1))
    assert all(e.reason == "trigger" and e.archive == "/conversation_history/lab.md" for e in events)
    assert all(a.cut < b.cut for a, b in zip(events, events[1:])), "each event moves the cut forward"
    assert all(e.cut < e.created_at <= len(run.messages) for e in events)
    assert [e.summary for e in events] == [c.response.content for c in model.calls if c.kind == "summary"]


def test_state_keeps_every_message_of_the_naive_run(run60, recorded):
    """Both runs make the same calls until the needle question (the drafts written by write_file
    differ: they are built from what is visible). Then the compacted run greps its archive —
    two extra messages — and gives the same answer. Nothing was deleted from state."""
    _, run = run60
    assert recorded.error is None and len(run.messages) == len(recorded.messages) + 2
    asked = next(i for i, m in enumerate(recorded.messages) if m.content == scenario.NEEDLE_QUESTION)
    for ours, theirs in zip(run.messages[:asked + 1], recorded.messages):
        assert ours.type == theirs.type
        if ours.type == "ai":
            assert ([(c["name"], {k: v for k, v in c["args"].items() if k != "content"})
                     for c in ours.tool_calls]
                    == [(c["name"], {k: v for k, v in c["args"].items() if k != "content"})
                        for c in theirs.tool_calls])
        else:
            assert ours.content == theirs.content
    grep, found, answer = run.messages[asked + 1:]
    assert grep.tool_calls[0]["name"] == "grep" and grep.tool_calls[0]["args"]["path"] == archive_path("lab")
    assert FIGURE in found.content and answer.content == recorded.messages[-1].content
    assert len({m.id for m in run.messages}) == len(run.messages)


def _event_at(events, n_messages):
    """The event in force when state held ``n_messages``: the latest one made by then."""
    made = [e for e in events if e.created_at <= n_messages]
    return made[-1] if made else None


def test_every_call_sees_the_summary_then_the_messages_from_the_cut(run60):
    """For each agent call, find the state length L it was made at: what the model received
    (system prompt aside) is exactly ``view(messages[:L], event in force)``."""
    model, run = run60
    events, msgs = events_of(run.state), run.messages
    lengths = []
    for call in (c for c in model.calls if c.kind == "agent"):
        seen = keys(call.messages)
        matches = [L for L in range(1, len(msgs) + 1) if keys(view(msgs[:L], _event_at(events, L))) == seen]
        assert len(matches) == 1, f"call {model.calls.index(call)} saw no view of state"
        lengths.append(matches[0])
    assert lengths == sorted(lengths)
    assert {e.created_at for e in events} <= set(lengths), "each event is used by the call that made it"
    summarized = [c for c in model.calls if c.kind == "agent" and "<summary>" in keys(c.messages)[0][1]]
    assert len(summarized) == len([L for L in lengths if _event_at(events, L)])


def test_the_archive_holds_each_folded_range_once_in_dated_sections(run60):
    """The file is exactly one section per event, each the XML of messages[previous cut:cut],
    stamped with the clock's time; the first starts at message 0."""
    _, run = run60
    events, msgs = events_of(run.state), run.messages
    text = run.files[archive_path("lab")]
    cuts = [0] + [e.cut for e in events]
    sections = read_archive(text)
    assert [s.id for s in sections] == [e.section for e in events], "one section per event, with its id"
    assert [s.messages for s in sections] == [list(msgs[a:b]) for a, b in zip(cuts, cuts[1:])], \
        "each section holds exactly the messages its compaction folded"
    assert text.startswith(f"## Compaction 1 — 2025-01-02T03:04:05+00:00 — messages 0–{events[0].cut - 1}\n"
                           f'<section id="{events[0].section}" fold='), "the first heading and tag"
    assert text.count("## Compaction ") == len(events)
    assert "<summary>" not in text and "This conversation was compacted" not in text, "never a summary"


def test_the_summary_prompt_has_four_sections_and_chains_the_previous_summary(run60):
    model, run = run60
    events = events_of(run.state)
    prompts_sent = [c.messages for c in model.calls if c.kind == "summary"]
    assert all(len(p) == 1 and p[0].type == "human" for p in prompts_sent), "one human message"
    texts = [p[0].content for p in prompts_sent]
    for text in texts:
        positions = [text.index(s) for s in SECTIONS]
        assert positions == sorted(positions) and "<messages>" in text and prompts.KEEP_FIGURES not in text
    assert "<summary>" not in texts[0]
    for before, text in zip(events, texts[1:]):
        assert escape(before.summary) in text, "a chained compaction folds the previous summary in"
    assert FIGURE in texts[0] and FIGURE not in events[0].summary, "the lab summary drops the figure"


def test_summary_prompt_is_the_prompt_template_with_the_xml_history():
    history = [H("h0"), A("a1")]
    assert summary_prompt(history) == prompts.SUMMARY_PROMPT.format(
        messages=get_buffer_string(history, format="xml"), fidelity="")
    assert prompts.KEEP_FIGURES in summary_prompt(history, keep_figures=True)


@pytest.mark.parametrize("keep_figures", [False, True])
def test_keep_figures_keeps_the_needle_in_the_summary(keep_figures):
    """At 128k one compaction folds the first export. Asked to keep figures, the lab summary keeps
    117.4%, and the needle is answered from the summary without reading the archive."""
    model = LabModel(window=128_000)
    run = scenario.run(model, middleware=[SummarizeMiddleware(model, keep_figures=keep_figures)])
    (event,) = events_of(run.state)
    (prompt,) = [c.messages[0].content for c in model.calls if c.kind == "summary"]
    assert FIGURE in prompt and (prompts.KEEP_FIGURES in prompt) == keep_figures
    assert (FIGURE in event.summary) == keep_figures
    greps = [tc for m in run.messages if m.type == "ai" for tc in m.tool_calls if tc["name"] == "grep"]
    assert run.score.needle_correct and bool(greps) != keep_figures


# -- the archive, per thread ----------------------------------------------------------------------


def _report_turn(backend, threads):
    """The scenario's first turn on each thread, compacting at 4 messages and keeping 2."""
    model = LabModel(window=1_000_000)
    mw = SummarizeMiddleware(model, trigger=("messages", 4), keep=("messages", 2), backend=backend,
                             clock=lambda: FIXED)
    agent = agent_for(model, mw, checkpointer=InMemorySaver())
    states = {}
    for thread in threads:
        agent.invoke({"messages": [HumanMessage(scenario.REQUEST)]}, config(thread))
        states[thread] = agent.get_state(config(thread)).values
    return states


def test_one_archive_file_per_thread(tmp_path):
    """Call 3 sees [h, ai, tool, ai, tool]: 5 >= 4, so the cut is 5 - 2 = 3 (an AI message) and the
    first section holds messages 0–2. Each thread appends to its own file only."""
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    states = _report_turn(backend, ["alpha", "beta"])
    assert sorted(p.name for p in (tmp_path / "conversation_history").iterdir()) == ["alpha.md", "beta.md"]
    for thread, state in states.items():
        events, msgs = events_of(state), state["messages"]
        assert len(events) >= 3 and all(e.archive == f"/conversation_history/{thread}.md" for e in events)
        text = (tmp_path / "conversation_history" / f"{thread}.md").read_text(encoding="utf-8")
        assert text.startswith("## Compaction 1 — 2025-01-02T03:04:05+00:00 — messages 0–2\n<section")
        cuts = [0] + [e.cut for e in events]
        assert [s.messages for s in read_archive(text)] == [list(msgs[a:b]) for a, b in zip(cuts, cuts[1:])]
        assert "<summary>" not in text
        assert state["messages"][-1].type == "ai" and not state["messages"][-1].tool_calls


def test_with_the_state_backend_each_thread_keeps_its_own_archive():
    states = _report_turn(None, ["alpha", "beta"])
    for thread, state in states.items():
        history = [p for p in state["files"] if p.startswith("/conversation_history/")]
        assert history == [f"/conversation_history/{thread}.md"]


@pytest.mark.parametrize("fail", ["write", "raise", "read"])
def test_a_failing_archive_warns_and_the_run_goes_on(fail):
    """A write that reports an error, a write that raises, or an archive that cannot be read (it
    must not be overwritten): each compaction warns, its event has no archive, and the summary
    message does not point to one. The run completes."""
    backend = MemoryBackend(fail=fail)
    with pytest.warns(UserWarning, match="could not archive"):
        states = _report_turn(backend, ["t"])
    events = events_of(states["t"])
    assert events and all(e.archive is None for e in events)
    assert all("archived" not in summary_message(e).content for e in events)
    assert states["t"]["messages"][-1].content.startswith("The weekly competitor report is written")
    assert backend.files == {}
    if fail == "read":
        assert backend.writes == 0, "an archive that cannot be read is never overwritten"


def test_a_compaction_redone_after_a_failed_call_replaces_its_section():
    """The trigger folds h0..h2 (section 1), then the call fails; the event never reaches state.
    Re-invoking the thread redoes compaction 1: the archive still has one section, not two."""
    backend, summarizer = MemoryBackend(), LabModel()
    agent_model = scripted(AIMessage("ok"), overflows=1)
    mw = SummarizeMiddleware(summarizer, trigger=("messages", 5), keep=("messages", 2), backend=backend,
                             clock=lambda: FIXED)
    agent = create_agent(agent_model, tools=[], middleware=[mw], checkpointer=InMemorySaver())
    with pytest.raises(ContextOverflowError, match="nothing is left to compact"):
        agent.invoke({"messages": _history()}, config("t"))
    assert backend.files[archive_path("t")].count("## Compaction 1 — ") == 1
    agent.invoke(None, config("t"))
    (event,) = events_of(agent.get_state(config("t")).values)
    (section,) = read_archive(backend.files[archive_path("t")])
    assert section.id == event.section and section.messages == _history()[:3], "one section, redone in place"
    assert event.cut == 3 and len(summarizer.calls) == 2


# -- the overflow fallback ------------------------------------------------------------------------


def test_the_no_profile_run_survives_its_overflow_with_one_compaction_and_one_retry():
    """No profile: the fallback trigger (170,000 tokens) is above the 128k window, so the first
    sign is an overflow. labkit compacts once (reason "overflow") and retries once."""
    model = LabModel(window=128_000, profile=None)
    run = scenario.run(model, middleware=[SummarizeMiddleware(model)])
    (event,) = events_of(run.state)
    assert event.reason == "overflow" and run.error is None and run.score.needle_correct
    (failed,) = [i for i, c in enumerate(model.calls) if c.error]
    summary, retry = model.calls[failed + 1:failed + 3]
    assert summary.kind == "summary" and retry.kind == "agent" and retry.error is None
    assert keys(retry.messages) == keys(view(run.messages[:event.created_at], event))
    assert keys(model.calls[failed].messages) == keys(run.messages[:event.created_at])


def _history():
    return [H("h0"), A("a1"), H("h2"), A("a3"), H("h4")]


def test_one_overflow_compacts_and_retries_once():
    agent_model, summarizer = scripted(AIMessage("ok"), overflows=1), LabModel()
    mw = SummarizeMiddleware(summarizer, trigger=("tokens", 10**6), keep=("messages", 1))
    agent = create_agent(agent_model, tools=[], middleware=[mw], checkpointer=InMemorySaver())
    agent.invoke({"messages": _history()}, config("t"))
    (event,) = events_of(agent.get_state(config("t")).values)
    assert (event.reason, event.cut, event.number, event.created_at) == ("overflow", 4, 1, 5)
    assert len(agent_model.seen) == 2 and len(summarizer.calls) == 1
    assert keys(agent_model.seen[1]) == keys(view(_history(), event))


def test_a_second_overflow_on_the_retry_propagates():
    agent_model, summarizer = scripted(AIMessage("never"), overflows=2), LabModel()
    mw = SummarizeMiddleware(summarizer, trigger=("tokens", 10**6), keep=("messages", 1))
    agent = create_agent(agent_model, tools=[], middleware=[mw])
    with pytest.raises(ContextOverflowError, match="prompt is too long") as e:
        agent.invoke({"messages": _history()})
    assert "nothing is left" not in str(e.value)
    assert len(agent_model.seen) == 2 and len(summarizer.calls) == 1, "one compaction, one retry"


def test_an_overflow_with_nothing_to_compact_says_so():
    agent_model, summarizer = scripted(AIMessage("never"), overflows=1), LabModel()
    mw = SummarizeMiddleware(summarizer, trigger=("tokens", 10**6), keep=("messages", 1))
    with pytest.raises(ContextOverflowError, match=r"nothing is left to compact \(keep=\('messages', 1\)\)"):
        create_agent(agent_model, tools=[], middleware=[mw]).invoke({"messages": [H("h0")]})
    assert summarizer.calls == []


def test_an_overflow_right_after_a_trigger_compaction_has_nothing_more_to_fold():
    """The trigger already folded all but the kept messages; the same keep cannot fold more."""
    agent_model, summarizer = scripted(AIMessage("never"), overflows=1), LabModel()
    mw = SummarizeMiddleware(summarizer, trigger=("messages", 5), keep=("messages", 2))
    with pytest.raises(ContextOverflowError, match="nothing is left to compact"):
        create_agent(agent_model, tools=[], middleware=[mw]).invoke({"messages": _history()})
    assert len(summarizer.calls) == 1 and keys(agent_model.seen[0])[1:] == keys(_history()[3:])


# -- manual compaction ----------------------------------------------------------------------------


def compact_call(call_id: str = "k1") -> AIMessage:
    return AIMessage("", id=f"ai-{call_id}", tool_calls=[
        {"name": "compact_conversation", "args": {}, "id": call_id, "type": "tool_call"}])


def test_the_manual_tool_is_there_only_when_asked_for():
    assert SummarizeMiddleware(LabModel()).tools == []
    assert ([t.name for t in SummarizeMiddleware(LabModel(), manual_tool=True).tools]
            == ["compact_conversation"])
    for manual in (False, True):
        model = LabModel()
        agent_for(model, SummarizeMiddleware(model, manual_tool=manual)).invoke(
            {"messages": [HumanMessage("hello")]})
        assert ("compact_conversation" in model.calls[0].tools) == manual


def _manual(agent_model, summarizer, messages, **knobs):
    mw = SummarizeMiddleware(summarizer, manual_tool=True, backend=MemoryBackend(), **knobs)
    agent = create_agent(agent_model, tools=[], middleware=[mw], checkpointer=InMemorySaver())
    agent.invoke({"messages": messages}, config("t1"))
    return agent, agent.get_state(config("t1")).values


def test_below_the_gate_the_manual_tool_refuses():
    """Trigger 10 messages, gate 0.5: the tool needs 5 messages; it sees [h0, its own call]."""
    summarizer = LabModel()
    _, state = _manual(scripted(compact_call(), AIMessage("done")), summarizer, [H("h0")],
                       trigger=("messages", 10), keep=("messages", 2))
    tool = next(m for m in state["messages"] if m.type == "tool")
    assert tool.content == prompts.COMPACT_REFUSED.format(
        why="the context holds 2 messages, below the gate of 5 (50% of the trigger)")
    assert events_of(state) == [] and summarizer.calls == []


def test_below_a_token_gate_the_refusal_names_the_tokens():
    mw = SummarizeMiddleware(LabModel(), trigger=("tokens", 10_000), keep=("messages", 2), manual_tool=True)
    _, state = _manual(scripted(compact_call(), AIMessage("done")), LabModel(), [H("h0")],
                       trigger=("tokens", 10_000), keep=("messages", 2))
    tokens = mw.request_tokens(state["messages"][:2])
    tool = next(m for m in state["messages"] if m.type == "tool")
    assert tool.content == prompts.COMPACT_REFUSED.format(
        why=f"the context holds {tokens:,} tokens of messages, below the gate of 5,000 (50% of the trigger)")


def test_above_the_gate_with_nothing_old_enough_it_refuses():
    _, state = _manual(scripted(compact_call(), AIMessage("done")), LabModel(), [H("h0")],
                       trigger=("messages", 4), keep=("messages", 3))
    tool = next(m for m in state["messages"] if m.type == "tool")
    assert tool.content == prompts.COMPACT_REFUSED.format(why="nothing old enough to fold")
    assert events_of(state) == []


def test_manual_compaction_shares_the_event_list_with_the_automatic_path():
    """The tool sees [h0, a1, h2, a3, h4, its call] (6 >= 5): keep 2 cuts at 4, folding h0..a3.
    The next call sees [summary, h4, call, result]. Three more turns grow the view to
    [summary, h4, call, result, done, h8, r2, h10, r3, h12] = 10 = the trigger: keep 2 cuts the view
    at 8, i.e. state index 4 + (8 - 1) = 11 — event 2, automatic, further on."""
    agent_model = scripted(compact_call(), AIMessage("done", id="done"), AIMessage("r2", id="r2"),
                           AIMessage("r3", id="r3"), AIMessage("r4", id="r4"))
    summarizer = LabModel()
    agent, state = _manual(agent_model, summarizer, _history(), trigger=("messages", 10),
                           keep=("messages", 2))
    (event,) = events_of(state)
    assert (event.number, event.cut, event.reason, event.created_at) == (1, 4, "manual", 6)
    tool = state["messages"][6]
    assert tool.type == "tool" and tool.content == prompts.COMPACT_DONE.format(n=4, path=archive_path("t1"))
    assert keys(agent_model.seen[1]) == keys(view(state["messages"][:7], event))
    for text in ("h8", "h10", "h12"):
        agent.invoke({"messages": [H(text)]}, config("t1"))
    state = agent.get_state(config("t1")).values
    first, second = events_of(state)
    assert first == event and (second.number, second.cut, second.reason) == (2, 11, "trigger")
    assert state["messages"][11].content == "r3"
    prompts_sent = [c.messages[0].content for c in summarizer.calls]
    assert len(prompts_sent) == 2 and escape(first.summary) in prompts_sent[1]


# -- tagged summary calls ---------------------------------------------------------------------------


def test_a_message_stream_never_shows_summary_tokens():
    """The lab model streams word by word; the summary call's "nostream" tag keeps it out."""
    model = LabModel(window=60_000, streaming=True)
    agent = agent_for(model, SummarizeMiddleware(model), checkpointer=InMemorySaver())
    chunks = list(agent.stream({"messages": [HumanMessage(scenario.REQUEST)]}, config("s"),
                               stream_mode="messages"))
    events = events_of(agent.get_state(config("s")).values)
    assert events and any(c.kind == "summary" for c in model.calls)
    ai_chunks = [c for c, _ in chunks if c.type in ("ai", "AIMessageChunk")]
    assert ai_chunks, "the agent's own replies are streamed"
    streamed = "".join(c.text for c, _ in chunks)
    assert "SESSION INTENT" not in streamed
    assert all("labkit:summary" not in meta.get("tags", []) for _, meta in chunks)


class StartSpy(BaseCallbackHandler):
    def __init__(self):
        self.starts = []

    def on_chat_model_start(self, serialized, messages, *, run_id, tags=None, metadata=None, **kw):
        self.starts.append((list(tags or []), dict(metadata or {}), messages[0][-1].text))


def test_a_callback_sees_the_summary_call_tagged():
    model, spy = LabModel(window=60_000), StartSpy()
    agent = agent_for(model, SummarizeMiddleware(model))
    agent.invoke({"messages": [HumanMessage(scenario.REQUEST)]}, {"callbacks": [spy]})
    summaries = [(t, m) for t, m, text in spy.starts if "<messages>" in text]
    agents = [(t, m) for t, m, text in spy.starts if "<messages>" not in text]
    assert summaries and agents
    assert all({"nostream", "labkit:summary"} <= set(t) and m["lc_source"] == "summarization"
               for t, m in summaries)
    assert all("labkit:summary" not in t and m.get("lc_source") != "summarization" for t, m in agents)


def test_async_runs_compact_too_and_tag_the_summary_call():
    """ainvoke / astream_events go through awrap_model_call: the same events, the same tags."""
    model = LabModel(window=60_000)
    agent = agent_for(model, SummarizeMiddleware(model), checkpointer=InMemorySaver())

    async def go():
        return [e async for e in agent.astream_events({"messages": [HumanMessage(scenario.REQUEST)]},
                                                      config("a"), version="v2")]

    stream = asyncio.run(go())
    events = events_of(agent.get_state(config("a")).values)
    assert events and all(e.archive == archive_path("a") for e in events)
    starts = [e for e in stream if e["event"] == "on_chat_model_start"]
    summary_starts = [e for e in starts if "labkit:summary" in e["tags"]]
    assert len(summary_starts) == len(events)
    assert all(e["metadata"]["lc_source"] == "summarization" for e in summary_starts)


# -- standing in for deepagents' own ----------------------------------------------------------------


def test_in_the_deep_harness_it_replaces_deepagents_summarization_by_name():
    model = LabModel(window=60_000)
    run = scenario.run(model, middleware=[SummarizeMiddleware(model)], harness="deep")
    assert run.error is None and run.score.goal_completed and run.score.needle_correct
    assert events_of(run.state) and run.state.get("_summarization_event") is None
    assert not any(p.startswith("/conversation_history/session_") for p in run.files)
    assert archive_path("lab") in run.files
    assert sum(c.kind == "summary" for c in model.calls) == len(events_of(run.state)), \
        "every summary call is labkit's"


def test_its_name_is_the_name_deepagents_gives_its_own():
    from deepagents.backends import StateBackend
    from deepagents.middleware.summarization import create_summarization_middleware

    theirs = create_summarization_middleware(LabModel(), StateBackend())
    assert SummarizeMiddleware(LabModel()).name == theirs.name == "SummarizationMiddleware"
