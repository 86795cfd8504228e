"""Nothing lost, round two (issue 22): what applications do to a thread — remove messages, reset
it, reuse ids, fork it, build a backend per request, run several processes on one folder — and
what real messages hold (thinking blocks, names, statuses, quotes, ampersands).

Each case failed on the code before it: the cut was a position, the conversation a hash of the
first message's id, the write lock keyed by the backend object, the archive escaped XML.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import pytest
from deepagents.backends import FilesystemBackend
from langchain.agents import create_agent
from langchain.agents.middleware.types import ModelRequest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from labkit import LabModel
from labkit.summarize import SummarizeMiddleware, archive_path, archive_section, events_of, read_archive
from labkit.summarize.archive import write_section
from tests.conftest import FIXED, MemoryBackend, Scripted


def config(thread: str) -> dict:
    return {"configurable": {"thread_id": thread}, "recursion_limit": 50}


def summarizer(**knobs) -> SummarizeMiddleware:
    knobs = {"trigger": ("messages", 4), "keep": ("messages", 2), **knobs}
    return SummarizeMiddleware(LabModel(), clock=lambda: FIXED, **knobs)


def turns(*words: str) -> list:
    return [HumanMessage(w, id=f"id-{w}") if i % 2 == 0 else AIMessage(w, id=f"id-{w}")
            for i, w in enumerate(words)]


def texts(messages) -> list[str]:
    return [m.text for m in messages]


# -- 1. the cut is found by identity ---------------------------------------------------------------


def test_removing_the_first_message_keeps_every_unfolded_message_in_view():
    """Compaction 1 folds h0..h2; the application removes h0. Every message in state must still
    be archived or sent — before, the cut (an index) now skipped a3: never sent again, and never
    archived by the next compaction either."""
    model = Scripted(messages=iter([AIMessage("ok", id=f"r{i}") for i in range(5)]))
    backend = MemoryBackend()
    agent = create_agent(model, tools=[], middleware=[summarizer(backend=backend)],
                         checkpointer=InMemorySaver())
    agent.invoke({"messages": turns("h0", "a1", "h2", "a3", "h4")}, config("rm"))
    agent.update_state(config("rm"), {"messages": [RemoveMessage(id="id-h0")]})
    agent.invoke({"messages": [HumanMessage("h6", id="id-h6")]}, config("rm"))
    state = agent.get_state(config("rm")).values
    archived = {m.id for s in read_archive(backend.files[archive_path("rm")]) for m in s.messages}
    sent = {m.id for m in model.seen[-1]}
    lost = [m.text for m in state["messages"][:-1] if m.id not in archived | sent]
    assert not lost, f"neither archived nor sent: {lost}"


def test_a_reset_thread_sends_the_new_question():
    """REMOVE_ALL_MESSAGES and a new question — how many apps reset a thread: the old summary
    no longer applies, and the new question reaches the model."""
    model = Scripted(messages=iter([AIMessage("ok", id=f"r{i}") for i in range(5)]))
    agent = create_agent(model, tools=[], middleware=[summarizer()], checkpointer=InMemorySaver())
    agent.invoke({"messages": turns("h0", "a1", "h2", "a3", "h4")}, config("reset"))
    assert events_of(agent.get_state(config("reset")).values), "a compaction happened first"
    agent.invoke({"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage("a new question")]},
                 config("reset"))
    assert texts(model.seen[-1]) == ["a new question"], "the model is sent the new conversation only"


def test_shared_ids_are_refused_with_the_id_named():
    """Outside a graph nothing stops two messages sharing an id; a cut found by id could not tell
    them apart, so the middleware refuses them by name."""
    mw = summarizer()
    history = [HumanMessage("a", id="same"), AIMessage("b", id="x"), HumanMessage("c", id="same")]
    request = ModelRequest(model=LabModel(), messages=history, state={"messages": history})
    with pytest.raises(ValueError, match="share the id 'same'"):
        mw.wrap_model_call(request, lambda r: AIMessage("ok"))


# -- 2. conversations that cannot collide ---------------------------------------------------------


def test_two_runs_whose_first_messages_share_an_application_id_keep_both_sections(tmp_path):
    """Two runs on one thread id, each with a fresh checkpointer, a shared folder, and an
    application's id "q1" on both first messages: both sections stay."""
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    for run in ("a", "b"):
        model = Scripted(messages=iter([AIMessage("ok")]))
        agent = create_agent(model, tools=[], checkpointer=InMemorySaver(),
                             middleware=[summarizer(backend=backend)])
        history = [HumanMessage(f"{run} question", id="q1"),
                   *[(AIMessage if i % 2 else HumanMessage)(f"{run}{i}") for i in range(1, 5)]]
        agent.invoke({"messages": history}, config("t"))
    sections = read_archive((tmp_path / "conversation_history" / "t.md").read_text(encoding="utf-8"))
    held = [m.text for s in sections for m in s.messages]
    assert len(sections) == 2 and {"a question", "b question"} <= set(held), held


def test_a_fork_keeps_both_branches_sections():
    """Branch from the checkpoint after compaction 1, and compact again in both branches: each
    branch's compaction 2 is in the archive, under its own conversation id."""
    model = Scripted(messages=iter([AIMessage("ok", id=f"r{i}") for i in range(9)]))
    backend = MemoryBackend()
    agent = create_agent(model, tools=[], checkpointer=InMemorySaver(),
                         middleware=[summarizer(backend=backend)])
    agent.invoke({"messages": turns("h0", "a1", "h2", "a3", "h4")}, config("f"))
    fork_point = agent.get_state(config("f")).config
    agent.invoke({"messages": turns("main1", "main2", "main3")}, config("f"))
    agent.invoke({"messages": turns("branch1", "branch2", "branch3")}, fork_point)
    sections = read_archive(backend.files[archive_path("f")])
    numbers = sorted(s.id.rsplit("-", 1)[1] for s in sections)
    assert numbers.count("2") == 2, f"both branches' compaction 2: {[s.id for s in sections]}"
    assert len({s.id for s in sections}) == len(sections), "no section replaced another"


# -- 3. writes across backend objects and processes -----------------------------------------------


class SlowDisk(FilesystemBackend):
    """A FilesystemBackend whose reads take a while: a lost update shows every time."""

    def download_files(self, paths):
        found = super().download_files(paths)
        time.sleep(0.01)
        return found


def eight_writers(make_backend, path: str) -> None:
    """Eight threads, each with a backend of its own from ``make_backend()``, five sections each."""
    def writer(k: int) -> None:
        backend = make_backend()
        for n in range(1, 6):
            section = f"{k:012x}-{n}"
            assert write_section(backend, path, section, archive_section(
                [HumanMessage(f"w{k} s{n}")], n, 0, FIXED, section=section)) is None

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_a_backend_per_writer_on_one_folder_keeps_every_section(tmp_path):
    """Eight threads, each with its own FilesystemBackend object on one folder (an app that builds
    a backend per request), five sections each: all forty stay."""
    eight_writers(lambda: SlowDisk(root_dir=tmp_path, virtual_mode=True), "/h.md")
    sections = read_archive((tmp_path / "h.md").read_text(encoding="utf-8"))
    assert len(sections) == 40, f"{len(sections)} of 40 sections kept"


PROCESS = textwrap.dedent("""
    import sys, time
    from deepagents.backends import FilesystemBackend
    from langchain_core.messages import HumanMessage
    from labkit.summarize import archive_section
    from labkit.summarize.archive import write_section

    class SlowDisk(FilesystemBackend):
        def download_files(self, paths):
            found = super().download_files(paths)
            time.sleep(0.01)
            return found

    root, k = sys.argv[1], int(sys.argv[2])
    backend = SlowDisk(root_dir=root, virtual_mode=True)
    for n in range(1, 11):
        section = f"{k:012x}-{n}"
        error = write_section(backend, "/h.md", section,
                              archive_section([HumanMessage(f"p{k} s{n}")], n, 0, section=section))
        assert error is None, error
""")


def test_several_processes_on_one_folder_keep_every_section(tmp_path):
    """Three processes (a class sharing a volume, a server with workers), ten sections each."""
    procs = [subprocess.Popen([sys.executable, "-c", PROCESS, str(tmp_path), str(k)]) for k in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0], "every writer finished"
    sections = read_archive((tmp_path / "h.md").read_text(encoding="utf-8"))
    assert len(sections) == 30, f"{len(sections)} of 30 sections kept"


@pytest.mark.parametrize("where", ["file", "memory"])
def test_stores_built_per_request_on_one_database_keep_every_section(tmp_path, where):
    """A server opens a store per request (its own SqliteStore connection on one database file):
    eight requests writing five sections each to one archive keep all forty. An in-memory
    database is its store object's alone, and one shared store keeps them too."""
    import datetime as dt
    import sqlite3

    from deepagents.backends import StoreBackend
    from langgraph.store.sqlite import SqliteStore

    target = str(tmp_path / "store.db") if where == "file" else ":memory:"

    def connect():
        return SqliteStore(sqlite3.connect(target, check_same_thread=False, isolation_level=None, timeout=30))
    first = connect()
    first.setup()

    class SlowStore(StoreBackend):  # the read takes a while, as SlowDisk's
        def download_files(self, paths):
            found = super().download_files(paths)
            time.sleep(0.01)
            return found

    errors = []

    def request(k):
        backend = SlowStore(store=connect() if where == "file" else first, namespace=lambda rt: ("app",))
        for n in range(1, 6):
            section = f"{k:012x}-{n}"
            text = archive_section([HumanMessage(f"w{k} s{n}")], n, 0, dt.datetime(2025, 1, 2),
                                   section=section)
            errors.append(write_section(backend, "/conversation_history/t.md", section, text))
    threads = [threading.Thread(target=request, args=(k,)) for k in range(8)]
    [t.start() for t in threads]
    [t.join(60) for t in threads]
    backend = StoreBackend(store=first, namespace=lambda rt: ("app",))
    text = backend.download_files(["/conversation_history/t.md"])[0].content.decode()
    assert len(read_archive(text)) == 40 and errors == [None] * 40


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_child_deleting_on_disk_does_not_wipe_a_parallel_childs_edit(tmp_path, mode):
    """On a FilesystemBackend one child edits a file while another (a step later) deletes it: the
    edit, which came first, stands, the deletion is not applied and its child is told; both list
    the file among the files they changed."""
    import asyncio

    from langchain_core.tools import tool

    from labkit.isolate import IsolateMiddleware, SubagentSpec

    def call(name, call_id, **args):
        return {"name": name, "args": args, "id": call_id, "type": "tool_call"}

    @tool
    def wait() -> str:
        """Wait a moment."""
        time.sleep(0.5)
        return "waited"

    (tmp_path / "x.md").write_text("original notes")
    edit = call("edit_file", "e1", file_path="/x.md", old_string="original", new_string="EDITED")
    editor = Scripted(messages=iter([AIMessage("", tool_calls=[edit]), AIMessage("edited")]))
    deleter = Scripted(messages=iter([AIMessage("", tool_calls=[call("wait", "w1")]), AIMessage(
        "", tool_calls=[call("delete", "d1", file_path="/x.md")]), AIMessage("deleted")]))
    specs = [SubagentSpec(name="editor", description="e", system_prompt="e", model=editor),
             SubagentSpec(name="deleter", description="d", system_prompt="d", tools=[wait], model=deleter)]
    disk = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    iso = IsolateMiddleware(LabModel(), specs, backend=disk)
    parent = Scripted(messages=iter([AIMessage("", tool_calls=[
        call("task", "t0", description="edit", subagent_type="editor"),
        call("task", "t1", description="delete", subagent_type="deleter")]), AIMessage("done")]))
    agent = create_agent(parent, tools=[], middleware=[iso])
    payload = {"messages": [HumanMessage("go")]}
    state = agent.invoke(payload) if mode == "sync" else asyncio.run(agent.ainvoke(payload))
    assert (tmp_path / "x.md").read_text() == "EDITED notes"
    told = {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}
    assert told["t1"].status == "error" and "/x.md" in told["t1"].text and told["t0"].status == "success"
    assert {c.tool_call_id: c.files for c in iso.children} == {"t0": ["/x.md"], "t1": ["/x.md"]}


def test_parallel_children_writing_a_folder_routed_to_a_store_keep_every_version():
    """Notebook 13's layout — files in state, /memories/ routed to a store: three children write one
    memory file at once; the first stands, the others are kept beside it and told."""
    from deepagents.backends import CompositeBackend, StateBackend, StoreBackend
    from deepagents.middleware.filesystem import FilesystemMiddleware
    from langgraph.store.memory import InMemoryStore

    from labkit.isolate import IsolateMiddleware, general_purpose

    store = InMemoryStore()
    team = StoreBackend(store=store, namespace=lambda rt: ("team",))
    backend = CompositeBackend(default=StateBackend(), routes={"/memories/": team})
    iso = IsolateMiddleware(LabModel(), [general_purpose()], backend=backend)

    def task(i):
        args = {"description": f"Please run write_file('/memories/notes.md', 'version {i}')",
                "subagent_type": "general-purpose"}
        return {"name": "task", "args": args, "id": f"t{i}", "type": "tool_call"}
    fan = AIMessage("", tool_calls=[task(i) for i in range(3)])
    parent = Scripted(messages=iter([fan, AIMessage("done")]))
    files = FilesystemMiddleware(backend=backend)
    state = create_agent(parent, tools=[], middleware=[files, iso], store=store).invoke(
        {"messages": [HumanMessage("go")]})
    kept = sorted(item.value["content"] for item in store.search(("team",)))
    assert kept == ["version 0", "version 1", "version 2"], kept
    told = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.status == "error"]
    assert len(told) == 2 and all("/memories/notes.md" in m.text for m in told)


# -- 4. word for word ----------------------------------------------------------------------------

REAL = [
    HumanMessage("Compare A&B <Brightloom> with \"Driftwood\"", id="u1", name="ana"),
    AIMessage([{"type": "thinking", "thinking": "I should fetch both & compare", "signature": "sig"},
               {"type": "text", "text": "Fetching."}], id="m1",
              tool_calls=[{"name": "write_file", "id": "c1", "type": "tool_call",
                           "args": {"file_path": "/notes.md",
                                    "content": 'He said "ship it" & left\n' * 40}}]),
    ToolMessage("Error: disk full <errno 28>", tool_call_id="c1", status="error", id="t1",
                artifact={"errno": 28}),
    AIMessage("x" * 2_000 + " & tail", id="m2"),
    HumanMessage("next", id="u2"), AIMessage("ok", id="m3"), HumanMessage("last", id="u3"),
]


def test_the_archive_is_word_for_word_and_reads_back_exactly():
    model = Scripted(messages=iter([AIMessage("done", id="r1")]))
    backend = MemoryBackend()
    agent = create_agent(model, tools=[], checkpointer=InMemorySaver(),
                         middleware=[summarizer(backend=backend, trigger=("messages", 6),
                                                keep=("messages", 1))])
    agent.invoke({"messages": REAL}, config("w"))
    state = agent.get_state(config("w")).values
    (event,) = events_of(state)
    text = backend.files[archive_path("w")]
    for exact in ('A&B <Brightloom> with "Driftwood"', 'He said "ship it" & left',
                  "I should fetch both & compare", "Error: disk full <errno 28>", "x" * 2_000 + " & tail"):
        assert exact in text, f"grep finds {exact[:40]!r}"
    (section,) = read_archive(text)
    assert section.messages == state["messages"][:event.cut], "read back whole: names, statuses, thinking"
    tool = next(m for m in section.messages if isinstance(m, ToolMessage))
    assert (tool.status, tool.tool_call_id, tool.artifact) == ("error", "c1", {"errno": 28}), "the result"


def test_a_forged_boundary_inside_a_message_is_just_text():
    inner = archive_section([HumanMessage("inner")], 1, 0, FIXED, section="aaaaaaaaaaaa-1")
    pasted = HumanMessage("pasted:\n" + inner + "\nend")
    outer = archive_section([pasted], 2, 1, FIXED, section="bbbbbbbbbbbb-2")
    (section,) = read_archive(outer)
    assert section.id == "bbbbbbbbbbbb-2" and section.messages[0].text == "pasted:\n" + inner + "\nend"


# -- 7. refused when built; warnings that name the error ------------------------------------------


@pytest.mark.parametrize("name", ["", "   "])
def test_an_empty_summarizer_name_is_refused_when_built(name):
    with pytest.raises(ValueError, match="empty name"):
        SummarizeMiddleware(name, trigger=("messages", 4), keep=("messages", 2))


def test_the_offload_warning_names_the_backends_error(tmp_path):
    from deepagents.backends.protocol import FileDownloadResponse

    from labkit.offload import OffloadMiddleware

    class Denied(MemoryBackend):
        def download_files(self, paths):
            return [FileDownloadResponse(path=p, error="permission_denied") for p in paths]

    off = OffloadMiddleware(backend=Denied(), tool_limit=10)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        off._write("/large_tool_results/c1", "text " * 100)
    assert said and "(permission_denied)" in str(said[0].message), [str(w.message) for w in said]


def test_json_of_an_archive_head_is_one_line():
    """Each message's head is one JSON line: a reader (or grep -A0) gets it whole."""
    text = archive_section(REAL, 1, 0, FIXED, section="cccccccccccc-1")
    heads = [line for line in text.splitlines() if line.startswith('{"type": ')]
    assert len(heads) == len(REAL) and all(json.loads(h) for h in heads), "one JSON head per message"


# -- 6. one Recorder, many threads ----------------------------------------------------------------


def test_compactions_are_counted_per_thread_when_one_agent_serves_several():
    """agent.batch over eight threads with one Recorder: every compaction of every thread is
    counted — before, records carried no thread, and interleaved threads hid each other's."""
    from labkit import Recorder, trace

    recorder = Recorder()
    model = Scripted(messages=iter([AIMessage("ok")] * 200))
    agent = create_agent(model, tools=[], checkpointer=InMemorySaver(),
                         middleware=[summarizer(trigger=("messages", 3), keep=("messages", 1)), recorder])
    threads = [f"t{k}" for k in range(8)]
    for round_ in range(3):
        agent.batch([{"messages": [HumanMessage(f"{t} q{round_}")]} for t in threads],
                    [config(t) for t in threads])
    events = sum(len(events_of(agent.get_state(config(t)).values)) for t in threads)
    assert {r.thread for r in recorder.records} == set(threads), "each record names its thread"
    assert len(trace.compactions(recorder.records)) == events, "every thread's compactions counted"


def test_the_summarizer_is_shown_what_langchains_xml_leaves_out():
    """Thinking, a provider's reasoning, a name, an error status and a long text-plain block reach
    the summary prompt (langchain's get_buffer_string drops or cuts them)."""
    from labkit.summarize import summary_prompt

    plain = HumanMessage([{"type": "text-plain", "text": "p" * 700 + "END", "mime_type": "text/plain"}])
    reasoning = AIMessage("x", additional_kwargs={"reasoning_content": "a provider's reasoning"},
                          response_metadata={"model_provider": "deepseek"})
    prompt = summary_prompt([*REAL[:3], plain, reasoning])
    for said in ('name="ana"', "I should fetch both &amp; compare", 'status="error"', "p" * 700 + "END",
                 "a provider&apos;s reasoning" if "&apos;" in prompt else "a provider's reasoning"):
        assert said in prompt, f"the summarizer sees {said[:40]!r}"


# -- cases an adversarial review found in the first version of this change --------------------------


def test_ids_reused_after_a_reset_do_not_bring_the_old_summary_back():
    """An app that numbers its messages per chat resets the thread and counts from 0 again: the
    event found its boundary by id alone, sent the old summary and hid the new questions."""
    model = Scripted(messages=iter([AIMessage("reply") for _ in range(40)]))
    backend = MemoryBackend()
    agent = create_agent(model, tools=[], checkpointer=InMemorySaver(),
                         middleware=[summarizer(backend=backend, trigger=("messages", 6))])
    for k in range(4):
        agent.invoke({"messages": [HumanMessage(f"old question {k}", id=f"user-{k}")]}, config("r"))
    agent.invoke({"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES),
                               HumanMessage("new question 0", id="user-0")]}, config("r"))
    for k in (1, 2):
        agent.invoke({"messages": [HumanMessage(f"new question {k}", id=f"user-{k}")]}, config("r"))
    sent = texts(model.seen[-1])
    assert [t for t in sent if t.startswith("new question")] == [f"new question {k}" for k in range(3)], sent
    assert not any("compacted" in t for t in sent), "no summary of the old chat"


def test_a_fork_that_edits_a_folded_message_appends_its_own_section():
    """Branch B corrects the first message (same id, new text) and compacts: a fold of other
    contents, so branch A's section stays."""
    model = Scripted(messages=iter([AIMessage(f"r{i}", id=f"r{i}") for i in range(20)]))
    backend = MemoryBackend()
    agent = create_agent(model, tools=[], checkpointer=InMemorySaver(),
                         middleware=[summarizer(backend=backend, trigger=("messages", 5))])
    agent.invoke({"messages": [HumanMessage("account 111", id="h0")]}, config("e"))
    agent.invoke({"messages": [HumanMessage("h1", id="h1")]}, config("e"))
    fork = agent.get_state(config("e")).config
    agent.invoke({"messages": [HumanMessage("h2", id="h2")]}, config("e"))
    fork_b = agent.update_state(fork, {"messages": [HumanMessage("account 222", id="h0")]})
    agent.invoke({"messages": [HumanMessage("h2b", id="h2b")]}, fork_b)
    held = [m.text for s in read_archive(backend.files[archive_path("e")]) for m in s.messages]
    assert "account 111" in held and "account 222" in held, held


def test_a_section_a_subagent_overwrote_is_written_again_from_state():
    """compact_conversation beside task in one AI message: the child hands back its copy of the
    parent's files and erases section 2; the next compaction writes it again, with a warning."""
    from deepagents import create_deep_agent

    def call(name, call_id, **args):
        return {"name": name, "args": args, "id": call_id, "type": "tool_call"}

    model = Scripted(messages=iter([
        AIMessage("", tool_calls=[call("compact_conversation", "c1"),
                                  call("task", "t1", description="Write notes.",
                                       subagent_type="general-purpose")]),
        AIMessage("", tool_calls=[call("write_file", "w1", file_path="/notes.md", content="child notes")]),
        AIMessage("child done"), AIMessage("parent done")]))
    agent = create_deep_agent(model=model, checkpointer=InMemorySaver(),
                              middleware=[summarizer(manual_tool=True)])
    with pytest.warns(UserWarning, match="section.s. of /conversation_history/T.md were missing"):
        agent.invoke({"messages": turns("p0", "p1", "p2", "p3", "p4")}, config("T"))
    state = agent.get_state(config("T")).values
    held = {s.id for s in read_archive(state["files"][archive_path("T")]["content"])}
    assert {e.section for e in events_of(state)} <= held, "every event's section is in the archive"


def test_a_composite_backend_per_writer_locks_the_real_file(tmp_path):
    from deepagents.backends import CompositeBackend

    def backend():
        disk = SlowDisk(root_dir=tmp_path, virtual_mode=True)
        return CompositeBackend(default=MemoryBackend(), routes={"/conversation_history/": disk})

    eight_writers(backend, "/conversation_history/t.md")
    assert len(read_archive((tmp_path / "t.md").read_text(encoding="utf-8"))) == 40, "all forty sections"


def test_an_archive_folder_that_cannot_be_made_is_a_warning_not_a_crash(tmp_path):
    (tmp_path / "conversation_history").write_text("a file where the folder should be")
    model = Scripted(messages=iter([AIMessage("ok")]))
    disk = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    agent = create_agent(model, tools=[], checkpointer=InMemorySaver(), middleware=[summarizer(backend=disk)])
    with pytest.warns(UserWarning, match="could not archive to /conversation_history/t.md"):
        agent.invoke({"messages": turns("h0", "a1", "h2", "a3", "h4")}, config("t"))


def test_an_artifact_with_no_truth_value_is_archived():
    """An array-like artifact (numpy's has no truth value) once crashed the archive writer."""
    class Ambiguous(list):
        def __bool__(self):
            raise ValueError("the truth value of an array is ambiguous")

    tool_result = ToolMessage("measured", tool_call_id="c1", artifact=Ambiguous([1, 2]), id="t1")
    text = archive_section([tool_result], 1, 0, FIXED, section="dddddddddddd-1")
    (section,) = read_archive(text)
    assert section.messages[0].artifact == [1, 2], "the artifact's values kept"


def test_a_kept_message_found_by_id_when_the_folded_one_has_none():
    """Outside a graph only some messages carry ids: the cut is found before the first kept one
    (the fast path once compared two Nones and kept a stale position)."""
    from labkit.summarize import view_of

    mw = SummarizeMiddleware(LabModel(), trigger=("messages", 4), keep=("messages", 3), archive=False)
    history = [HumanMessage("h0"), AIMessage("a1"), HumanMessage("h2"), AIMessage("a3"),
               HumanMessage("h4", id="h4"), AIMessage("a5"), HumanMessage("h6", id="h6")]
    event = mw.compact(history, [])
    assert texts(view_of(history[2:], [event]))[1:] == ["h4", "a5", "h6"], "nothing after the fold hidden"


def _folding_thread(thread: str, turns: int, trigger: int, keep: int):
    """``(agent, recorder)`` after ``turns`` turns on ``thread``, folding past ``trigger`` messages."""
    from labkit import Recorder

    model = Scripted(messages=iter([AIMessage(f"r{i}", id=f"r{i}") for i in range(50)]))
    recorder = Recorder()
    fold = summarizer(trigger=("messages", trigger), keep=("messages", keep))
    agent = create_agent(model, tools=[], checkpointer=InMemorySaver(), middleware=[fold, recorder])
    for i in range(turns):
        agent.invoke({"messages": [HumanMessage(f"h{i}", id=f"h{i}")]}, config(thread))
    return agent, recorder


def test_removing_a_folded_message_is_not_counted_as_a_compaction():
    from labkit import trace

    agent, recorder = _folding_thread("c", 5, trigger=8, keep=3)
    agent.update_state(config("c"), {"messages": [RemoveMessage(id="h0")]})
    agent.invoke({"messages": [HumanMessage("h5", id="h5")]}, config("c"))
    events = events_of(agent.get_state(config("c")).values)
    assert len(trace.compactions(recorder)) == len(events), "one count per compaction"


def test_an_earlier_summary_back_in_view_after_an_undo_is_not_a_new_compaction():
    """An application undoes the last exchanges (removes their messages), taking the second
    compaction's boundary with them: the first summary is in view again — not a third compaction."""
    from labkit import trace

    agent, recorder = _folding_thread("u", 6, trigger=6, keep=2)
    assert len(trace.compactions(recorder)) == len(events_of(agent.get_state(config("u")).values)) == 2
    undo = [m.id for m in agent.get_state(config("u")).values["messages"]][-4:]
    agent.update_state(config("u"), {"messages": [RemoveMessage(id=i) for i in undo]})
    agent.invoke({"messages": [HumanMessage("h6", id="h6")]}, config("u"))
    assert len(trace.compactions(recorder)) == len(events_of(agent.get_state(config("u")).values)) == 2


# -- 5. children ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_child_that_fails_hands_back_the_files_it_wrote(mode):
    """The child writes its notes, then its model fails: the parent gets the notes and is told
    where they are — before, every file the child wrote was lost with it."""
    import asyncio

    from labkit.isolate import IsolateMiddleware, SubagentSpec

    def call(name, call_id, **args):
        return {"name": name, "args": args, "id": call_id, "type": "tool_call"}

    notes = call("write_file", "w1", file_path="/notes.md", content="Alder: 3 stores")
    child = Scripted(messages=iter([AIMessage("", tool_calls=[notes])]), overflow_on=(2,))
    parent = Scripted(messages=iter([
        AIMessage("", tool_calls=[call("task", "t1", description="Research Alder.",
                                       subagent_type="researcher")]),
        AIMessage("parent done")]))
    spec = SubagentSpec(name="researcher", description="researches", system_prompt="Research.", model=child)
    agent = create_agent(parent, tools=[], checkpointer=InMemorySaver(),
                         middleware=[IsolateMiddleware(parent, [spec])])
    payload = {"messages": [HumanMessage("research Alder")]}
    if mode == "sync":
        agent.invoke(payload, config("c"))
    else:
        asyncio.run(agent.ainvoke(payload, config("c")))
    state = agent.get_state(config("c")).values
    reply = next(m for m in state["messages"] if isinstance(m, ToolMessage))
    assert reply.status == "error" and "stopped before replying" in reply.text, reply.text
    assert "/notes.md" in reply.text, "the parent is told where the child's files are"
    assert "Alder: 3 stores" in str(state["files"]["/notes.md"]["content"]), "the notes are kept"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_parallel_children_on_one_folder_are_settled_as_in_state(tmp_path, mode):
    """Two children of one message write /report.md differently on a FilesystemBackend: the first
    to finish keeps the path, the later one's version is saved beside it and its reply says so —
    before, the last writer won on disk and both were told "Updated file"."""
    import asyncio

    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.outputs import ChatGeneration, ChatResult

    from labkit.isolate import IsolateMiddleware, SubagentSpec

    def call(name, call_id, **args):
        return {"name": name, "args": args, "id": call_id, "type": "tool_call"}

    class ByContext(GenericFakeChatModel):
        def bind_tools(self, tools, **kwargs):
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            first = next(m for m in messages if isinstance(m, HumanMessage)).text
            done = sum(isinstance(m, ToolMessage) for m in messages)
            who = "Alder" if "Alder" in first else "Birch" if "Birch" in first else None
            if who is None:
                reply = AIMessage("", tool_calls=[
                    call("task", "ta", description="Report on Alder.", subagent_type="writer"),
                    call("task", "tb", description="Report on Birch.", subagent_type="writer")]) \
                    if done == 0 else AIMessage("parent done")
            elif done == 0:
                reply = AIMessage("", tool_calls=[call("write_file", f"w{who}", file_path="/report.md",
                                                       content=f"{who} report")])
            else:
                reply = AIMessage(f"{who} done")
            return ChatResult(generations=[ChatGeneration(message=reply)])

    disk = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    model = ByContext(messages=iter([]))
    spec = SubagentSpec(name="writer", description="writes reports", system_prompt="Write.")
    agent = create_agent(model, tools=[], checkpointer=InMemorySaver(),
                         middleware=[IsolateMiddleware(model, [spec], backend=disk)])
    payload = {"messages": [HumanMessage("two reports")]}
    if mode == "sync":
        agent.invoke(payload, config("p"))
    else:
        asyncio.run(agent.ainvoke(payload, config("p")))
    replies = [m for m in agent.get_state(config("p")).values["messages"] if isinstance(m, ToolMessage)]
    files = {p.name: p.read_text() for p in tmp_path.iterdir() if p.is_file()}
    assert sorted(files.values()) == ["Alder report", "Birch report"], f"both versions on disk: {files}"
    later = [m for m in replies if m.status == "error"]
    assert len(later) == 1 and "/report.md" in later[0].text, [m.text[:120] for m in replies]
    saved = next(name for name in files if name != "report.md")
    assert saved in later[0].text, "the later child is told where its version went"
