"""scenario.capture: your own agent's run kept as a Run — also when a call raises, with or without a
checkpointer — so that replay and diagnose read what really happened."""

from __future__ import annotations

from deepagents.middleware.filesystem import FilesystemMiddleware
from langchain.agents import create_agent
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from labkit import LabModel, Recorder, scenario
from labkit.diagnose import diagnose


def overflowing(recorder, **kwargs):
    """An agent whose second call overflows: the first export (30k tokens) in a 16k window."""
    return create_agent(LabModel(window=16_000), tools=scenario.tools(), middleware=[recorder], **kwargs)


def test_a_failed_run_without_a_checkpointer_keeps_its_state_records_and_error():
    recorder = Recorder()
    run = scenario.capture(overflowing(recorder), scenario.REQUEST, recorder)
    assert type(run.error).__name__ == "ContextOverflowError" and run.turns_completed == 0
    assert [m.type for m in run.messages] == ["human", "ai", "tool"], "the state it had reached"
    assert run.records == recorder.records and run.records[-1].error
    found = {f.key: f for f in diagnose(run)}
    assert found["hard_overflow"].numbers["largest"] > 16_000, "the evidence is the real result"


def test_with_a_checkpointer_it_reads_the_thread_back():
    recorder = Recorder()
    agent = overflowing(recorder, checkpointer=InMemorySaver())
    run = scenario.capture(agent, scenario.REQUEST, recorder, config={"configurable": {"thread_id": "t"}})
    assert [m.type for m in run.messages] == ["human", "ai", "tool"] and run.error is not None


def test_turns_without_a_checkpointer_carry_the_conversation_and_files_on():
    recorder = Recorder()
    agent = create_agent(LabModel(window=1_000_000), tools=scenario.tools(),
                         middleware=[FilesystemMiddleware(), recorder])
    run = scenario.capture(agent, scenario.TURNS[:2], recorder, files={"/notes.md": "hello"})
    humans = [m.text for m in run.messages if m.type == "human"]
    assert humans == list(scenario.TURNS[:2]) and run.turns_completed == 2 and run.error is None
    assert run.files["/notes.md"] == "hello", "the seed files are kept"
    assert scenario.REPORT_PATH in run.files, "and what the first turn wrote is there in the second"
    assert len(recorder.turns) == 2


def test_it_reads_turns_one_at_a_time():
    """A generator of turns is read as the run goes (evals.reminded depends on it): a run that
    ends on the first turn never reads the second."""
    read = []

    def turns():
        for text in scenario.TURNS[:2]:
            read.append(text)
            yield text

    recorder = Recorder()
    scenario.capture(overflowing(recorder), turns(), recorder)
    assert read == list(scenario.TURNS[:1])


def test_without_a_checkpointer_private_channels_carry_from_turn_to_turn():
    """Compaction events live in a private channel: the second turn must see the first's, as it
    would on your own thread — the same events as scenario.run's, turn for turn."""
    from labkit.summarize import SummarizeMiddleware, events_of

    def events(run):
        return [(e.number, e.cut) for e in events_of(run.state)]

    model = LabModel(window=1_000_000)
    summarize = SummarizeMiddleware(model, trigger=("messages", 10), keep=("messages", 4))
    recorder = Recorder()
    agent = create_agent(model, tools=scenario.tools(),
                         middleware=[FilesystemMiddleware(), summarize, recorder])
    captured = scenario.capture(agent, scenario.TURNS[:2], recorder)
    reference = scenario.run(LabModel(window=1_000_000), turns=scenario.TURNS[:2], middleware=[
        SummarizeMiddleware(model, trigger=("messages", 10), keep=("messages", 4))])
    assert len(events(captured)) >= 2 and events(captured) == events(reference)


def test_one_recorder_across_captures_gives_each_run_its_own_records():
    """A Recorder kept across captures: each thread's Run has that thread's records (replay and the
    knobs read them against its messages), and a Run without a checkpointer only its own."""
    recorder = Recorder()
    agent = create_agent(LabModel(window=1_000_000), tools=scenario.tools(), middleware=[recorder],
                         checkpointer=InMemorySaver())
    def on(thread):
        return {"configurable": {"thread_id": thread}}
    a = scenario.capture(agent, scenario.TURNS[:1], recorder, config=on("a"))
    b = scenario.capture(agent, scenario.NEEDLE_QUESTION, recorder, config=on("b"))
    a2 = scenario.capture(agent, scenario.NEEDLE_QUESTION, recorder, config=on("a"))
    assert {r.thread for r in b.records} == {"b"} and len(b.records) < len(a.records)
    assert {r.thread for r in a.records} == {"a"}, "a Run's records are kept as they were"
    assert a2.records[:len(a.records)] == a.records and {r.thread for r in a2.records} == {"a"}
    assert a2.records[-1].messages_stored <= len(a2.messages)
    plain = create_agent(LabModel(window=1_000_000), tools=scenario.tools(), middleware=[recorder])
    c = scenario.capture(plain, scenario.NEEDLE_QUESTION, recorder)
    assert [r.seen for r in c.records] == [r.seen for r in recorder.records[-len(c.records):]]
    for run in (b, c, a2):  # numbered as its own run: call 0 on, turn 0 on
        assert [r.index for r in run.records] == list(range(len(run.records))) and run.records[0].turn == 0
    assert len(c.records) < len(b.records) + len(a2.records)
    from labkit import replay
    replay.replay(b, window=32_000)  # the records agree with the run's messages


def test_a_run_whose_tool_returned_documents_with_dates_is_saved_and_read_back(tmp_path):
    """A retriever-style tool's artifact (Documents whose metadata holds a date) is not JSON: the
    saved run keeps it in langchain's serialized form, nothing dropped, and loads."""
    import datetime

    from langchain_core.documents import Document
    from langchain_core.messages import AIMessage, ToolMessage

    from tests.conftest import Scripted

    @tool(response_format="content_and_artifact")
    def search(query: str):
        """Search the notes."""
        return "1 document", [Document("Brightloom grew", metadata={"published": datetime.date(2024, 5, 1)})]

    call = {"name": "search", "args": {"query": "BRLM"}, "id": "s1", "type": "tool_call"}
    recorder = Recorder()
    agent = create_agent(Scripted(messages=iter([AIMessage("", tool_calls=[call]), AIMessage("done")])),
                         tools=[search], middleware=[recorder])
    run = scenario.capture(agent, "BRLM?", recorder)
    back = scenario.load_run(run.save(tmp_path / "run.json"))
    artifact = next(m for m in back.messages if isinstance(m, ToolMessage)).artifact
    assert artifact[0]["page_content"] == "Brightloom grew"
    assert artifact[0]["metadata"]["published"]["repr"] == "datetime.date(2024, 5, 1)"
    assert [m.type for m in back.messages] == [m.type for m in run.messages] and back.records == run.records


def test_acapture_runs_an_agent_whose_tools_are_async_only():
    """An MCP adapter's tools can only be awaited: capture's invoke fails on them, acapture runs
    the agent and keeps the same Run."""
    import asyncio

    from langchain_core.messages import AIMessage

    from tests.conftest import Scripted

    @tool
    async def lookup(ticker: str) -> str:
        """Look a ticker up."""
        return f"{ticker}: 42"

    def agent(recorder):
        call = {"name": "lookup", "args": {"ticker": "BRLM"}, "id": "l1", "type": "tool_call"}
        model = Scripted(messages=iter([AIMessage("", tool_calls=[call]), AIMessage("BRLM is 42.")]))
        return create_agent(model, tools=[lookup], middleware=[recorder])

    synced = scenario.capture(agent(Recorder()), "BRLM?", None)
    assert isinstance(synced.error, NotImplementedError) and synced.turns_completed == 0
    recorder = Recorder()
    run = asyncio.run(scenario.acapture(agent(recorder), "BRLM?", recorder))
    assert run.error is None and run.turns_completed == 1 and run.messages[-1].text == "BRLM is 42."
    assert len(run.records) == 2 and run.records == recorder.records


def test_a_shared_recorder_keeps_runs_apart_at_once_and_on_fresh_checkpointers():
    """Two captures at once on one Recorder (acapture, gathered) each get their own thread's
    records; two scenario.run calls (each its own checkpointer, one thread id) each get only
    their own."""
    import asyncio

    from labkit import replay

    recorder = Recorder()
    agent = create_agent(LabModel(window=1_000_000), tools=scenario.tools(), middleware=[recorder],
                         checkpointer=InMemorySaver())

    async def both():
        def on(thread):
            return {"configurable": {"thread_id": thread}}
        needle = scenario.NEEDLE_QUESTION
        return await asyncio.gather(scenario.acapture(agent, scenario.TURNS[:1], recorder, config=on("a")),
                                    scenario.acapture(agent, needle, recorder, config=on("b")))
    a, b = asyncio.run(both())
    assert {r.thread for r in a.records} == {"a"} and {r.thread for r in b.records} == {"b"}
    shared = Recorder()
    first = scenario.run(LabModel(window=1_000_000), recorder=shared, turns=scenario.TURNS[:1])
    second = scenario.run(LabModel(window=1_000_000), recorder=shared, turns=[scenario.NEEDLE_QUESTION])
    assert len(first.records) + len(second.records) == len(shared.records)
    replay.replay(second, window=32_000)  # its records agree with its messages
