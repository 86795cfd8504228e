"""The harness's checkpointer (``labkit._checkpoint.SharedSaver``) keeps history honest: langgraph's
own conformance suite passes whole, as it does for ``InMemorySaver``, and on a scenario run with
compactions ``get_state_history``, replay from a checkpoint and a fork with ``update_state`` give
exactly what they give on ``InMemorySaver``."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import ProgressCallbacks
from langgraph.checkpoint.memory import InMemorySaver

from labkit import LabModel, scenario
from labkit._checkpoint import SharedSaver
from labkit.summarize import SummarizeMiddleware


def _conformance(factory, name: str):
    @checkpointer_test(name=name)
    async def saver():
        yield factory()

    return asyncio.run(validate(saver, progress=ProgressCallbacks.quiet()))


def test_langgraphs_conformance_suite_passes_whole_as_for_inmemorysaver():
    ours, theirs = _conformance(SharedSaver, "SharedSaver"), _conformance(InMemorySaver, "InMemorySaver")
    failures = {cap: r.failures for cap, r in ours.results.items() if r.failures}
    assert ours.passed_all(), f"failed: {failures}"
    assert {c: (r.tests_passed, r.tests_skipped) for c, r in ours.results.items()} == \
        {c: (r.tests_passed, r.tests_skipped) for c, r in theirs.results.items()}


CONFIG = {"configurable": {"thread_id": "t"}, "recursion_limit": 200}


def _compacted(saver):
    """The running example's three turns with labkit's summarization on a 128k window (it compacts)."""
    model = LabModel(window=128_000)
    graph = scenario.agent(model, [SummarizeMiddleware(model)], checkpointer=saver)
    run = scenario.capture(graph, scenario.TURNS, config=dict(CONFIG))
    return graph, run


def _shape(state) -> tuple:
    values = state.values
    return (len(values.get("messages", [])), state.next, len(values.get("_labkit_compactions") or ()),
            [(m.type, m.text) for m in values.get("messages", [])], state.metadata.get("step"))


@pytest.fixture(scope="module")
def both():
    return {"ours": _compacted(SharedSaver()), "theirs": _compacted(InMemorySaver())}


def test_every_older_state_is_what_inmemorysaver_keeps(both):
    ours, theirs = (list(g.get_state_history(CONFIG)) for g, _ in (both["ours"], both["theirs"]))
    assert [_shape(s) for s in ours] == [_shape(s) for s in theirs]
    assert any(_shape(s)[2] == 0 for s in ours) and any(_shape(s)[2] > 0 for s in ours), \
        "the history spans a compaction: states before it carry no event, after it one"


def _before_the_first_compaction(graph):
    return next(s for s in graph.get_state_history(CONFIG)  # newest first: the last without an event
                if not s.values.get("_labkit_compactions") and s.next == ("model",))


def test_replay_and_a_fork_from_before_a_compaction_match_inmemorysaver(both):
    outcomes = {}
    for name, (graph, _) in both.items():
        before = _before_the_first_compaction(graph)
        replayed = graph.invoke(None, {**before.config, "recursion_limit": 200})
        forked = graph.update_state(before.config, {"messages": [HumanMessage("Only the risks, please.")]})
        branch = graph.invoke(None, {**forked, "recursion_limit": 200})
        head = graph.get_state(CONFIG)
        outcomes[name] = [(len(replayed["messages"]), len(replayed.get("_labkit_compactions") or ())),
                          (len(branch["messages"]), len(branch.get("_labkit_compactions") or ())),
                          _shape(head)[:3], len(before.values["messages"])]
    assert outcomes["ours"] == outcomes["theirs"]


def test_the_deep_harness_history_with_its_files_is_inmemorysavers():
    """create_deep_agent's ``files`` is a delta channel (snapshots and writes): every older state's
    files, too, are what InMemorySaver gives."""
    def files_by_step(saver):
        graph = scenario.agent(LabModel(window=128_000), harness="deep", checkpointer=saver)
        scenario.capture(graph, scenario.TURNS, config=dict(CONFIG))
        return [(s.metadata.get("step"), len(s.values.get("messages", [])),
                 {p: d["content"] for p, d in (s.values.get("files") or {}).items()})
                for s in graph.get_state_history(CONFIG)]

    ours, theirs = files_by_step(SharedSaver()), files_by_step(InMemorySaver())
    assert ours == theirs
    assert len({len(files) for _, _, files in ours}) > 2, "the files grow over the run's history"


def test_a_compaction_that_removes_messages_keeps_every_older_state_too():
    """langchain's SummarizationMiddleware removes what it folds (RemoveMessage): the new list is
    not an extension of the old, so the saver starts a new shared list — and every older state is
    still what InMemorySaver keeps."""
    from langchain.agents.middleware.summarization import SummarizationMiddleware

    from labkit import count_tokens

    def history(saver):
        model = LabModel(window=128_000)
        graph = scenario.agent(model, [SummarizationMiddleware(
            model, trigger=("fraction", 0.85), keep=("fraction", 0.10), token_counter=count_tokens)],
            checkpointer=saver)
        scenario.capture(graph, scenario.TURNS, config=dict(CONFIG))
        return [_shape(s) for s in graph.get_state_history(CONFIG)]

    ours, theirs = history(SharedSaver()), history(InMemorySaver())
    assert ours == theirs
    sizes = [len(shape[3]) for shape in ours]  # newest first
    assert sizes[0] < max(sizes), "the head lost messages an older state still holds"


def test_the_newest_checkpoint_is_inmemorysavers_after_puts_deletes_and_a_removal():
    """``get_tuple`` without a checkpoint id answers the greatest id, as ``InMemorySaver``'s ``max``
    over every checkpoint does, though SharedSaver remembers it from ``put``: ids put out of order,
    a thread deleted and started again, the newest checkpoint removed from storage directly. (A
    direct edit of storage that keeps the count and the remembered id is not seen: the saver's
    methods are the way in.)"""
    from langgraph.checkpoint.base import empty_checkpoint

    def put(saver, cid: str, parent: str | None = None):
        checkpoint = {**empty_checkpoint(), "id": cid}
        config = {"configurable": {"thread_id": "t", "checkpoint_ns": "",
                                   **({"checkpoint_id": parent} if parent else {})}}
        saver.put(config, checkpoint, {}, {})

    def newest(saver):
        found = saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})
        return None if found is None else (found.config["configurable"]["checkpoint_id"],
                                           found.parent_config)

    ours, theirs = SharedSaver(), InMemorySaver()
    for step in (lambda s: put(s, "1f0-b"), lambda s: put(s, "1f0-d", "1f0-b"), lambda s: put(s, "1f0-c"),
                 lambda s: s.storage["t"][""].pop("1f0-d"), lambda s: put(s, "1f0-a"),
                 lambda s: s.delete_thread("t"), lambda s: put(s, "1f0-e")):
        step(ours), step(theirs)
        assert newest(ours) == newest(theirs)
    assert newest(ours)[0] == "1f0-e"
    assert SharedSaver().get_tuple({"configurable": {"thread_id": "none", "checkpoint_ns": ""}}) is None


def test_a_caller_that_edits_the_list_it_was_handed_does_not_rewrite_the_thread():
    """An application hands the thread's messages to a grader with a system message put first, or
    pops the last reply to retry it: the thread keeps what it had, as under InMemorySaver."""
    graph = scenario.agent(LabModel())
    cfg = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [HumanMessage("hello")]}, cfg)
    graph.invoke({"messages": [HumanMessage("again")]}, cfg)
    kept = [m.text for m in graph.get_state(cfg).values["messages"]]
    graph.get_state(cfg).values["messages"].insert(0, HumanMessage("You grade conversations."))
    graph.get_state(cfg).values["messages"].pop()
    older = list(graph.get_state_history(cfg))[1].values["messages"]
    older.clear()
    assert [m.text for m in graph.get_state(cfg).values["messages"]] == kept
    sizes = [len(s.values.get("messages", [])) for s in graph.get_state_history(cfg)]
    assert sizes[:2] == [len(kept), len(kept) - 1]
