"""labkit.replay: the policy re-run over a recorded trajectory agrees with the real middleware.

The central test (``test_replay_matches_the_middleware``) runs the scenario under
``SummarizeMiddleware`` for several knob settings and compares, call by call, the tokens the
model saw and the events made against ``replay`` over one naive recording on a huge window —
over the calls where the two runs' histories are identical (the lab model writes a slightly
different report once a summary hides the exports, so the trajectories part near the end).

Worked example (window 60,000, default knobs): the trigger is int(0.85 × 60,000) = 51,000 tokens
and the keep budget 6,000. Call 5 is the first request over the trigger: 11 messages, the
Driftwood export (message 10, ~41,000 tokens) just added. The budget cannot hold even that one
message, but the latest message always stays, and message 10 is a tool result, so the pair-safe
cut moves back to the AI message that called it: the cut is message 9, and call 5 sees the
summary plus messages 9–10. ``test_the_worked_example_cuts`` asserts it.

No timings are asserted here: ``bench/bench_replay.py`` measures speed.
"""

from __future__ import annotations

import pytest

from labkit import LabModel, plots, scenario
from labkit.model import lab_summary, merge, summary_facts, write_summary
from labkit.replay import NEEDLE_OUTCOMES, Replay, replay, synthetic_run, trajectory
from labkit.summarize import SummarizeMiddleware, events_of, summary_message
from labkit.tokens import TokenCounter, cost, encoding, message_text
from labkit.trace import compaction_marks


def _common_prefix(a, b) -> int:
    """How many leading messages two histories share (same type, same text)."""
    k = 0
    while k < min(len(a), len(b)) and a[k].type == b[k].type and message_text(a[k]) == message_text(b[k]):
        k += 1
    return k


def _row(r):
    return (r.messages_stored, r.seen, r.messages_seen, r.by_kind, r.error is not None)


SETTINGS = [
    pytest.param(128_000, True, {}, id="128k-defaults"),
    pytest.param(60_000, True, {}, id="60k-defaults"),
    pytest.param(128_000, True, {"trigger": ("messages", 10), "keep": ("messages", 4)}, id="messages"),
    pytest.param(128_000, True, {"trigger": ("tokens", 50_000), "keep": ("tokens", 20_000)}, id="tokens"),
    pytest.param(100_000, True, {"trigger": ("fraction", 0.5), "keep": ("messages", 3)}, id="mixed"),
    pytest.param(128_000, False, {}, id="no-profile-overflow-fallback"),
    pytest.param(40_000, True, {}, id="40k-dies"),
]


@pytest.mark.parametrize("window, profile, knobs", SETTINGS)
def test_replay_matches_the_middleware(traj, recorded, window, profile, knobs):
    model = LabModel(window=window) if profile else LabModel(window=window, profile=None)
    real = scenario.run(model, middleware=[SummarizeMiddleware(model, **knobs)])
    rep = replay(traj, window=window, profile=profile, **knobs)

    same = _common_prefix(real.messages, recorded.messages)
    real_rows = [_row(r) for r in real.records if r.messages_stored <= same]
    replay_rows = [_row(r) for r in rep.records if r.messages_stored <= same]
    assert len(real_rows) >= 6, f"the runs part too early to compare ({same} messages shared)"
    assert replay_rows == real_rows

    # an event made on the call that kills the run is not kept in state (the error ends the step)
    made = [e for e, call in zip(rep.events, rep.event_calls) if call != rep.died_at]
    real_events = [e for e in events_of(real.state) if e.created_at <= same]
    mine = [e for e in made if e.created_at <= same]
    assert [(e.cut, e.created_at, e.reason, e.number) for e in mine] == \
        [(e.cut, e.created_at, e.reason, e.number) for e in real_events]
    assert [e.summary for e in mine] == [e.summary for e in real_events]
    assert all(e.archive == "/conversation_history/lab.md" for e in mine)

    # the summary calls' input tokens: an estimate, checked against what the lab model counted
    summary_calls = [c.input_tokens for c in model.calls if c.kind == "summary"]
    shared = sum(1 for e in rep.events if e.created_at <= same)
    if shared:
        real_in, replay_in = sum(summary_calls[:shared]), _summary_inputs(traj, rep, shared)
        assert abs(real_in - replay_in) <= 0.002 * real_in, (real_in, replay_in)

    assert (real.error is not None) == (rep.died_at is not None)


def _summary_inputs(traj, rep, n_events):
    """summary_input of a replay cut short to its first ``n_events`` events (by replaying only
    the calls up to the last of them)."""
    last_call = rep.event_calls[n_events - 1]
    short = trajectory_prefix(traj, last_call + 1)
    return replay(short, **{k: v for k, v in rep.knobs.items()}).summary_input


def trajectory_prefix(traj, calls):
    """The same trajectory, stopped after ``calls`` model calls."""
    from dataclasses import replace

    from labkit._replay_summary import Memo  # a fresh memo: the private type is what replay keeps

    return replace(traj, calls=traj.calls[:calls], fixed=traj.fixed[:calls], system=traj.system[:calls],
                   outputs=traj.outputs[:calls], turns=traj.turns[:calls],
                   tool_calls=traj.tool_calls[:calls], memo=Memo())


def test_the_worked_example_cuts(traj):
    rep = replay(traj, window=60_000)
    assert traj.calls[5] == 11 and traj.prefix[11] + traj.fixed[5] >= 51_000 > traj.prefix[9] + traj.fixed[4]
    assert rep.event_calls[0] == 5 and rep.events[0].cut == 9
    assert traj.messages[10].type == "tool" and traj.prefix[11] - traj.prefix[10] > 6_000
    summary = rep.records[5].by_kind["summary"]
    assert rep.seen[5] == traj.fixed[5] + summary + traj.prefix[11] - traj.prefix[9]
    assert [e.cut for e in rep.events] == [9, 13, 17, 19]
    assert rep.knobs["trigger"] == ("fraction", 0.85) and rep.knobs["keep"] == ("fraction", 0.1)
    assert max(rep.seen) < 60_000 and rep.overflow is None and rep.died_at is None


def test_a_huge_window_changes_nothing(traj, recorded):
    rep = replay(traj, window=1_000_000)
    assert rep.events == () and rep.overflow is None and rep.needle == "visible"
    assert list(rep.seen) == [r.seen for r in recorded.records]
    assert [_row(r) for r in rep.records] == [_row(r) for r in recorded.records]
    assert rep.tokens_sent == sum(r.seen for r in recorded.records) and rep.summary_input == 0
    assert rep.cost == pytest.approx(cost(rep.tokens_sent, sum(r.output_tokens for r in recorded.records)))


def test_compaction_keeps_every_call_under_the_trigger_or_says_why(traj):
    for window in (60_000, 80_000, 128_000):
        rep = replay(traj, window=window)
        trigger = int(window * 0.85)
        assert all(s < trigger or i in rep.event_calls for i, s in enumerate(rep.seen))
        cuts = [e.cut for e in rep.events]
        assert cuts == sorted(set(cuts)), "each new event moves the cut strictly forward"
        assert all(traj.messages[c].type != "tool" for c in cuts), "a cut never orphans a tool result"


def test_needle_outcomes(traj):
    assert replay(traj, window=128_000).needle == "archive"
    kept = replay(traj, window=128_000, keep_figures=True)
    assert kept.needle == "visible" and scenario.needle().answer in kept.events[-1].summary
    assert replay(traj, window=128_000, archive=False).needle == "lost"
    assert replay(traj, window=128_000, archive=False).events[-1].archive is None
    assert replay(traj, window=40_000).needle == "overflow"
    assert set(NEEDLE_OUTCOMES) >= {"visible", "archive", "lost", "overflow"}


def test_overflow_is_recorded_like_the_recorder_does(traj):
    rep = replay(traj, window=128_000, profile=False)  # the 170k fallback trigger never fires
    assert rep.knobs["trigger"] == ("tokens", 170_000)
    assert [e.reason for e in rep.events] == ["overflow"] and rep.died_at is None
    failed = [r for r in rep.records if r.error]
    assert len(failed) == 1 and failed[0].seen > 128_000 and failed[0].cost == 0
    retry = rep.records[failed[0].index + 1]
    assert retry.messages_stored == failed[0].messages_stored and retry.seen <= 128_000
    assert rep.overflow == rep.event_calls[0]
    assert rep.event_marks()[0][0] == retry.index  # marked where the compacted view was first seen
    assert len(rep.records) == rep.calls + 1


def test_event_marks_are_read_like_a_real_runs(traj):
    """A replay's marks come from its records through ``trace.compaction_marks``, as a real run's
    do: the first record to see each event's view. An event made on the call where the run dies
    is listed, but only refused records saw it, so it has no mark — as a real run's state would
    not keep it."""
    rep = replay(traj, window=60_000)
    assert rep.died_at is None and rep.event_marks() == compaction_marks(rep)
    assert [i for i, _ in rep.event_marks()] == list(rep.event_records)
    died = replay(traj, window=40_000, trigger=("fraction", 0.3), keep=("fraction", 0.1))
    assert died.died_at is not None and died.event_calls[-1] == died.died_at
    assert [i for i, _ in died.event_marks()] == list(died.event_records[:-1])
    assert died.records[died.event_records[-1]].error


def test_a_longer_keep_compacts_more_often_and_sends_more(traj):
    """Keeping 8 messages frees little per compaction, so the trigger is hit again soon."""
    a = replay(traj, window=128_000, trigger=("fraction", 0.5), keep=("messages", 8))
    b = replay(traj, window=128_000, trigger=("fraction", 0.5), keep=("messages", 2))
    assert len(b.events) < len(a.events) and sum(b.seen) < sum(a.seen) and b.cost < a.cost


def test_bad_knobs_are_refused_by_the_middleware_rules(traj):
    with pytest.raises(ValueError, match="keep"):
        replay(traj, trigger=("fraction", 0.2), keep=("fraction", 0.3))
    with pytest.raises(ValueError, match="no profile"):
        replay(traj, trigger=("fraction", 0.5), profile=False)
    with pytest.raises(ValueError, match="window"):
        replay(traj, window=0)
    with pytest.raises(ValueError, match="price"):
        replay(traj, price="free")
    with pytest.raises(ValueError, match="recorded run"):
        replay(scenario.Run(messages=[], files={}))


def test_a_managed_run_can_be_the_recording(traj):
    """A run with an overflow retry: the failed attempt is not a call of its own."""
    model = LabModel(window=128_000, profile=None)
    run = scenario.run(model, middleware=[SummarizeMiddleware(model)])
    t = trajectory(run)
    assert len(run.records) == len(t.calls) + 1
    assert t.calls == sorted(set(r.messages_stored for r in run.records))


def test_plots_draw_a_replay(traj):
    rep = replay(traj, window=60_000)
    assert isinstance(rep, Replay)
    fig = plots.tokens_per_turn(rep, window=60_000)
    seen = next(t for t in fig.data if t.name == "seen by the model")
    assert list(seen.y) == [r.seen for r in rep.records] == list(rep.seen)
    marks = rep.event_marks()
    assert [i for i, _ in marks] == list(rep.event_calls)
    assert not [t for t in fig.data if t.name == "compaction"]  # no events asked for, none drawn
    fig = plots.tokens_per_turn(rep, window=60_000, trigger=51_000, events=marks)
    drawn = next(t for t in fig.data if t.name == "compaction")
    assert list(drawn.x) == list(rep.event_calls) and list(drawn.y) == [rep.seen[i] for i in rep.event_calls]
    assert "folded" in drawn.hovertext[0]
    with pytest.raises(ValueError, match="item 0"):
        plots.tokens_per_turn(rep, events=[(999, "nowhere")])
    assert rep.to_records() == list(rep.records)
    assert [row["cut"] for row in rep.rows()] == [e.cut for e in rep.events]


def test_the_trajectory_counts_what_the_counter_counts(traj, recorded):
    counter = TokenCounter()
    assert traj.prefix[-1] == counter.messages(recorded.messages)
    assert all(traj.prefix[r.messages_stored] == r.stored for r in recorded.records)
    assert traj.needle_at and all(scenario.needle().find(message_text(recorded.messages[i]))
                                  for i in traj.needle_at)


@pytest.fixture(scope="module")
def synthetic(recorded):
    return synthetic_run(200, source=recorded)


def test_synthetic_run_is_a_consistent_recording(synthetic, recorded):
    assert len(synthetic.records) == 200
    stored = [r.messages_stored for r in synthetic.records]
    assert stored == sorted(stored) and stored[-1] < len(synthetic.messages) + 1
    counter = TokenCounter()
    for r in synthetic.records[::37]:
        assert r.stored == counter.messages(synthetic.messages[:r.messages_stored])
        assert r.seen == sum(r.by_kind.values())
    ids = [c["id"] for m in synthetic.messages if m.type == "ai" for c in m.tool_calls]
    assert len(ids) == len(set(ids)), "tool-call ids are unique per week"
    pending = set()
    for m in synthetic.messages:  # every tool result answers a call made before it
        if m.type == "ai":
            pending |= {c["id"] for c in m.tool_calls}
        elif m.type == "tool":
            assert m.tool_call_id in pending
            pending.discard(m.tool_call_id)
    with pytest.raises(ValueError, match="turns"):
        synthetic_run(0, source=recorded)


def test_replay_over_200_calls(synthetic):
    t = trajectory(synthetic)
    assert replay(t, window=10_000_000).seen == tuple(r.seen for r in synthetic.records)
    rep = replay(t, window=128_000)
    assert rep.calls == 200 and rep.died_at is None and len(rep.events) > 10
    assert max(rep.seen) <= 128_000 and rep.tokens_sent < sum(r.seen for r in synthetic.records)


@pytest.mark.parametrize("keep_figures", [False, True])
def test_a_summary_counted_line_by_line_is_counted_exactly(keep_figures):
    """A cold slider move counts each new summary by its lines (shared lines cached once); the sum
    is the whole summary's BPE count, for every summary a range of settings makes."""
    t = trajectory(synthetic_run(60))
    for trigger in (0.3, 0.5, 0.85):
        for keep in (0.02, 0.1, 0.2):
            replay(t, window=128_000, trigger=("fraction", trigger), keep=("fraction", keep),
                   keep_figures=keep_figures)
    made = list(t.memo.folds.values())
    assert len(made) > 20, f"only {len(made)} summaries made"
    whole = encoding()
    for summary, _, counted in made:
        assert counted == len(whole.encode(summary, disallowed_special=())), "the lines add up to the whole"
    result = replay(t, window=128_000, trigger=("fraction", 0.3), keep=("fraction", 0.05))
    assert result.events, "the replay compacted"
    for event, at in zip(result.events, result.event_records, strict=True):
        if at < len(result.records):
            fresh = len(whole.encode(message_text(summary_message(event)), disallowed_special=())) + 3
            assert result.records[at].by_kind["summary"] == fresh, "the summary message, counted by lines"


def test_a_summary_from_each_messages_facts_is_the_lab_models_summary_of_the_whole_text():
    """replay reads each recorded message's facts once (``summary_facts``) and writes a fold's
    summary from their merge; that is ``lab_summary`` of the folded text, for any range of the
    record, with or without a previous summary at its head, with or without exact figures."""
    from labkit._replay_summary import xml_text  # how replay renders a message for the summary prompt

    t = trajectory(synthetic_run(30))
    xml = [xml_text(m) for m in t.messages]
    head = lab_summary("\n".join(xml[:40]), keep_figures=True)
    n = len(xml)
    ranges = [(a, b) for a in range(0, n, 5) for b in range(a + 1, n + 1, 7)]
    assert len(ranges) > 50, f"enough ranges to mean something, not {len(ranges)}"
    for a, b in ranges:
        for heads in ([], [head]):
            for keep_figures in (False, True):
                texts = heads + xml[a:b]
                merged = merge([summary_facts(x) for x in texts])
                assert write_summary(merged, keep_figures) == lab_summary("\n".join(texts), keep_figures), \
                    f"the summary of messages {a}:{b} (head: {bool(heads)}) differs"


@pytest.mark.parametrize("first_archive", [False, True])
def test_a_memo_shared_by_slider_moves_gives_what_a_fresh_trajectory_gives(recorded, first_archive):
    """The knobs panel replays every move over one trajectory: a re-fold from the same summary and
    cut under the other archive setting starts from another message (it names the archive or not),
    so it must not reuse the summary an earlier move made."""
    shared = trajectory(recorded)
    replay(shared, window=60_000, archive=first_archive)
    moved = replay(shared, window=60_000, archive=not first_archive)
    fresh = replay(trajectory(recorded), window=60_000, archive=not first_archive)
    assert len(fresh.events) > 1, "a re-fold happens"
    assert [e.summary for e in moved.events] == [e.summary for e in fresh.events]
    assert (moved.seen, moved.summary_input, moved.summary_output) == \
        (fresh.seen, fresh.summary_input, fresh.summary_output)


@pytest.mark.parametrize("archive", [True, False])
def test_summary_messages_are_counted_as_a_whole_would_be(archive):
    """The replay counts the message carrying a summary, and its XML in the next summary prompt, from
    pieces kept per summary (labkit._replay_summary): each equals a BPE count of the whole text, and
    the facts the next summary reads of it, taken in two parts, are the whole text's."""
    from labkit import _replay_summary as rs
    from labkit.summarize import summary_message
    from labkit.tokens import TokenCounter, message_text

    traj, counter, checked = trajectory(synthetic_run(60)), TokenCounter(), 0
    for trigger, keep in [(0.3, 0.02), (0.5, 0.1), (0.3, 0.2), (0.7, 0.05)]:
        rep = replay(traj, window=128_000, trigger=("fraction", trigger), keep=("fraction", keep),
                     archive=archive, keep_figures=trigger == 0.5)
        for event in rep.events:
            message = summary_message(event)
            assert rs.carried(traj, event) == counter.text(message_text(message)), event.number
            head = traj.memo.heads.get((event.summary, event.number, event.cut, event.archive))
            if head is not None:
                assert head[0] == counter.text(rs.xml_text(message)), event.number
                assert merge(head[1]) == summary_facts(rs.xml_text(message)), "its facts, read in two parts"
                checked += len(head[1]) == 2  # read in two parts (rs._in_parts)
    assert checked > 10, "re-folds were checked"


def test_split_pieces_is_the_pieces_regex_split():
    """``split_pieces`` (newline search) splits every text the replay counts exactly as ``PIECES``
    does: each summary, each summary message and its XML, each recorded message, and edge cases."""
    from labkit import _replay_summary as rs
    from labkit.summarize import summary_message
    from labkit.tokens import message_text

    traj = trajectory(synthetic_run(60))
    texts = ["", "\n", "\n\n", "a", "a\n", "a\nb", "a\n b", "a\n/b", "a\n\nb", "\nx", "x\n\n/y\nz\n",
             "\t\n\r\nq"]
    texts += [rs.xml_text(m) for m in traj.messages] + [message_text(m) for m in traj.messages]
    for trigger, keep in [(0.3, 0.02), (0.5, 0.1), (0.7, 0.05)]:
        for event in replay(traj, trigger=("fraction", trigger), keep=("fraction", keep)).events:
            message = summary_message(event)
            texts += [event.summary, message_text(message), rs.xml_text(message)]
    assert len(texts) > 200, len(texts)
    for text in texts:
        assert rs.split_pieces(text) == rs.PIECES.split(text), repr(text[:80])


def test_a_replayed_refusal_is_flagged_as_an_overflow(recorded):
    """Replay's only error is a request over the window: its records say so as the Recorder's do."""
    from labkit.replay import replay

    refused = [r for r in replay(recorded, window=60_000, trigger=("tokens", 1_000_000)).records if r.error]
    assert refused and all(r.overflow for r in refused)


def test_a_run_whose_messages_were_deleted_is_refused_naming_why():
    """langchain's SummarizationMiddleware deletes what it summarizes from the state: replay, which
    re-plays the whole history, says so and what to record with instead."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import SummarizationMiddleware

    from labkit import Recorder

    recorder = Recorder()
    agent = create_agent(LabModel(window=1_000_000), tools=scenario.tools(), middleware=[
        SummarizationMiddleware(LabModel(), trigger=("messages", 6), keep=("messages", 2)), recorder])
    run = scenario.capture(agent, scenario.TURNS[:1], recorder)
    assert len(run.messages) < max(r.messages_stored for r in run.records), "messages were deleted"
    with pytest.raises(ValueError, match="removed from the state.*SummarizationMiddleware deletes"):
        replay(run, window=32_000)
