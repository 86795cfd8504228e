"""The checker of notebook 09's exercise accepts the right view and names what went wrong in wrong ones."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from labkit.exercises import nb09
from labkit.summarize import events_of, view


@pytest.fixture(scope="module")
def run():
    return nb09.recorded()[0]


def test_q1_accepts_the_view_the_model_got(run):
    """Measured: on the 60k window the run compacts four times, events made when state held 11, 15,
    19 and 21 messages (cuts 9, 13, 17, 19). Call 8 is made with 17 messages in state, so event 2
    (cut 13) is in effect: the model saw its summary and messages 13–16, five messages."""
    answer = nb09.q1.solve()
    assert [(e.cut, e.created_at) for e in events_of(run.state)] == [(9, 11), (13, 15), (17, 19), (19, 21)]
    assert run.records[nb09.CALL].messages_stored == 17 and len(answer) == 5
    assert answer[0].additional_kwargs.get("lc_source") == "summarization"
    assert nb09.q1.check(answer) == "Correct!"
    assert nb09.q1.check(tuple(answer)) == "Correct!"


def _wrong(run):
    n, messages, events = run.records[nb09.CALL].messages_stored, run.messages, events_of(run.state)
    return {
        "state at the call": (messages[:n], "everything state held at call 8 \\(17 messages\\)"),
        "final state": (messages, "the whole final state"),
        "final view": (view(messages, events[-1]), "the view at the end of the run"),
        "not cut to the call": (view(messages, events[1]), "event 2 is the right one, but .* cut state"),
        "first event": (view(messages[:n], events[0]), "event 1 was already replaced by event 2"),
        "a later event": (view(messages[:n], events[2]), "event 3 was made later, when state held 19"),
        "no summary": (messages[events[1].cut:n], "the summary message is missing"),
        "one message short": (view(messages[:n], events[1])[:-1],
                              "the model got 5 messages .* your list has 4"),
        "not messages": (["summary", "the rest"], "a list of messages"),
        "a stand-in summary": ([HumanMessage("summary"), *messages[13:n]], "the model got 5 messages"),
    }


@pytest.mark.parametrize("case", ["state at the call", "final state", "final view", "not cut to the call",
                                  "first event", "a later event", "no summary", "one message short",
                                  "not messages", "a stand-in summary"])
def test_q1_rejects_wrong_answers_with_a_reason(run, case):
    wrong, says = _wrong(run)[case]
    with pytest.raises(AssertionError, match=f"Not yet: .*{says}"):
        nb09.q1.require(wrong)


def test_the_truth_is_what_the_model_received(run):
    """The checker's reference is the lab model's own log, and it is what view() rebuilds."""
    _, calls = nb09.recorded()
    n = run.records[nb09.CALL].messages_stored
    assert calls[nb09.CALL].messages == view(run.messages[:n], events_of(run.state)[1])
