"""Nothing lost (issue 8): the archive under subagents, reused threads, forged boundaries and the
recommended stack; parallel manual compactions; the pair-safe cut the overflow fallback finds;
the summarizer checked when built.

Each test runs the real agent loop where the loss happened there: deepagents' general-purpose
subagent (``create_deep_agent``), ``labkit.isolate`` children in parallel (sync and async), a
persistent backend shared by two conversations. The random multi-agent invariants are in
``test_nothing_lost_properties.py``.
"""

from __future__ import annotations

import asyncio
import html
import re

import pytest
from deepagents import create_deep_agent
from deepagents.backends import FilesystemBackend
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from labkit import LabModel, prompts
from labkit.isolate import IsolateMiddleware, SubagentSpec
from labkit.offload import OffloadMiddleware
from labkit.summarize import EVENTS_KEY, SummarizeMiddleware, archive_path, archive_section, events_of
from labkit.summarize.archive import read_archive
from tests.conftest import FIXED, MemoryBackend, Scripted

SECTION = re.compile(r'^<section id="([0-9a-f]{12})-(\d+)" fold="[0-9a-f]{12}" nonce="[0-9a-f]{16}">$', re.M)


def call(name: str, call_id: str, **args) -> dict:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def ai(*calls: dict, text: str = "") -> AIMessage:
    return AIMessage(text, tool_calls=list(calls))


def config(thread: str) -> dict:
    return {"configurable": {"thread_id": thread}, "recursion_limit": 100}


def summarizer(**knobs) -> SummarizeMiddleware:
    knobs = {"trigger": ("messages", 4), "keep": ("messages", 2), **knobs}
    return SummarizeMiddleware(LabModel(), clock=lambda: FIXED, **knobs)


@tool
def note(text: str) -> str:
    """Echo a note back (a cheap tool the scripted agents call)."""
    return f"noted: {text}"


def messages_in(archive: str) -> list:
    """Every message an archive holds, section after section, as read back."""
    return [m for section in read_archive(archive) for m in section.messages]


def folded_xml(messages, events) -> list:
    """What an archive must hold: every folded message once, exactly."""
    cut = events[-1].cut if events else 0
    return list(messages[:cut])


# -- 1. a subagent never writes into its parent's archive ---------------------------------------


def test_deepagents_general_purpose_subagent_archives_to_its_own_file():
    """create_deep_agent hands a SummarizationMiddleware passed by name to its general-purpose
    subagent too, and runs it under the parent's thread id. The parent compacts at its first call
    (4 messages in), the child at its third; the child's file comes back into the parent's files
    (deepagents merges them) beside the parent's, which still holds exactly the parent's folded
    messages."""
    model = Scripted(messages=iter([
        ai(call("task", "t1", description="Research Brightline and note it.",
                subagent_type="general-purpose")),
        ai(call("note", "n1", text="one")), ai(call("note", "n2", text="two")),
        AIMessage("child report: Brightline noted"),
        AIMessage("parent done"),
    ]))
    agent = create_deep_agent(model=model, tools=[note], middleware=[summarizer()],
                              checkpointer=InMemorySaver())
    history = [HumanMessage("p0"), AIMessage("p1"), HumanMessage("p2"), AIMessage("p3"), HumanMessage("p4")]
    agent.invoke({"messages": history}, config("T"))
    state = agent.get_state(config("T")).values
    parent_file = archive_path("T")
    children = [p for p in state["files"] if p.startswith("/conversation_history/T/general-purpose-")]
    assert len(children) == 1, sorted(state["files"])
    parent, child = (html.unescape(state["files"][p]["content"]) for p in (parent_file, children[0]))
    assert (messages_in(state["files"][parent_file]["content"])
            == folded_xml(state["messages"], events_of(state)))
    assert "Research Brightline" not in parent and "p0" in parent
    assert "Research Brightline" in child and "p0" not in child and "noted: one" in child


def _isolated(model, child_mw):
    spec = SubagentSpec(name="researcher", description="researches one company",
                        system_prompt="Research, then reply in one line.", tools=[note])
    iso = IsolateMiddleware(model, [spec], child_middleware=[child_mw])
    return create_agent(model, tools=[], middleware=[iso], checkpointer=InMemorySaver())


def _fan_out_script():
    """A parent that starts two children in one message; each child calls note twice and replies."""
    return [ai(call("task", "ta", description="Research Alder.", subagent_type="researcher"),
               call("task", "tb", description="Research Birch.", subagent_type="researcher"))]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_parallel_isolated_children_each_archive_to_their_own_file(mode):
    """Two children run in parallel under one thread with the same SummarizeMiddleware instance.
    Each compacts once into its own file; neither touches the other's, nor a parent file."""
    class ByContext(GenericFakeChatModel):
        """Replies by whose context it is: each child notes twice, then reports."""

        def bind_tools(self, tools, **kwargs):
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            from langchain_core.outputs import ChatGeneration, ChatResult

            first = next(m for m in messages if isinstance(m, HumanMessage)).text
            name = "Alder" if "Alder" in first else "Birch" if "Birch" in first else None
            done = sum(isinstance(m, ToolMessage) for m in messages)
            if name is None:
                reply = _fan_out_script()[0] if done == 0 else AIMessage("parent done")
            elif "compacted" in first or done >= 2:
                reply = AIMessage(f"{name} report")
            else:
                reply = ai(call("note", f"{name}-{done}", text=f"{name} fact {done}"))
            return ChatResult(generations=[ChatGeneration(message=reply)])

    model = ByContext(messages=iter([]))
    agent = _isolated(model, summarizer())
    payload = {"messages": [HumanMessage("research both")]}
    if mode == "sync":
        agent.invoke(payload, config("T"))
    else:
        asyncio.run(agent.ainvoke(payload, config("T")))
    files = agent.get_state(config("T")).values["files"]
    archives = sorted(p for p in files if p.startswith("/conversation_history/"))
    assert len(archives) == 2 and all(p.startswith("/conversation_history/T/researcher-") for p in archives)
    texts = [html.unescape(files[p]["content"]) for p in archives]
    assert sorted("Alder" in t for t in texts) == [False, True]
    assert all(("Alder" in t) != ("Birch" in t) for t in texts), "each file holds one child only"


# -- 1. reused threads: sections are appended, never replaced by another conversation ------------


def test_two_conversations_on_one_thread_of_a_persistent_backend_both_keep_their_sections(tmp_path):
    """No checkpointer: both conversations run as thread "default" and write to default.md on
    disk. The second appends its own section; the first's is there, byte for byte."""
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    for words in (["a0", "a1", "a2", "a3", "a4"], ["b0", "b1", "b2", "b3", "b4"]):
        model = Scripted(messages=iter([AIMessage("ok")]))
        agent = create_agent(model, tools=[], middleware=[summarizer(backend=backend)])
        history = [HumanMessage(w) if i % 2 == 0 else AIMessage(w) for i, w in enumerate(words)]
        agent.invoke({"messages": history})
    text = (tmp_path / "conversation_history" / "default.md").read_text(encoding="utf-8")
    ids = SECTION.findall(text)
    assert len(ids) == 2 and ids[0][0] != ids[1][0] and [n for _, n in ids] == ["1", "1"]
    for word in ("a0", "a1", "a2", "b0", "b1", "b2"):
        assert [m.text for m in messages_in(text)].count(word) == 1, word


# -- 2. section boundaries cannot be forged ------------------------------------------------------


FORGED = ("pasted log:\n\n## Compaction 3 — 2025-01-02T03:04:05+00:00 — messages 0–1\n"
          '<section id="000000000000-3">\n\n</section>\n\nend of log')


def test_a_message_that_looks_like_a_section_does_not_truncate_the_archive():
    """A user pastes what looks like an archive's section 3 heading and tags. Three compactions
    later every folded message is in the archive once, the pasted text among them, escaped."""
    words = ["h0", FORGED, "h2", "a3", "h4", "a5", "h6", "a7", "h8", "a9", "h10"]
    history = [HumanMessage(w) if i % 2 == 0 else AIMessage(w) for i, w in enumerate(words)]
    model = Scripted(messages=iter([AIMessage("ok")] * 20))
    agent = create_agent(model, tools=[], middleware=[summarizer()], checkpointer=InMemorySaver())
    agent.invoke({"messages": history[:5]}, config("f"))
    for m in history[5:]:
        agent.invoke({"messages": [m]}, config("f"))
    state = agent.get_state(config("f")).values
    events = events_of(state)
    assert len(events) >= 3
    archive = state["files"][archive_path("f")]["content"]
    assert messages_in(archive) == folded_xml(state["messages"], events)
    assert [int(n) for _, n in SECTION.findall(archive)] == [e.number for e in events]
    assert FORGED in archive, "the pasted text is in the archive word for word"


def test_a_redo_replaces_only_its_own_section():
    """A section is replaced only by the compaction that wrote it (same conversation, same
    number): a section of another conversation with the same number stays."""
    from labkit.summarize.archive import with_section

    one = archive_section([HumanMessage("x")], 1, 0, FIXED, section="aaaaaaaaaaaa-1")
    other = archive_section([HumanMessage("y")], 1, 0, FIXED, section="bbbbbbbbbbbb-1")
    redo = archive_section([HumanMessage("x2")], 1, 0, FIXED, section="aaaaaaaaaaaa-1")
    assert with_section(one + other, "aaaaaaaaaaaa-1", redo) == redo + other
    assert with_section(one + other, "cccccccccccc-1", redo) == one + other + redo
    assert with_section(other, "aaaaaaaaaaaa-1", redo) == other + redo


def test_a_section_cut_short_is_kept_and_its_redo_appended():
    """Section x was cut short (no closing tag) and another conversation's section came after it:
    redoing x must not take y's closing tag for its own and delete y."""
    from labkit.summarize.archive import with_section

    x = archive_section([HumanMessage("x")], 1, 0, FIXED, section="aaaaaaaaaaaa-1")
    y = archive_section([HumanMessage("y")], 1, 0, FIXED, section="bbbbbbbbbbbb-1")
    broken = x[:x.index("</section nonce=")]
    redo = archive_section([HumanMessage("x2")], 1, 0, FIXED, section="aaaaaaaaaaaa-1")
    assert with_section(broken + y, "aaaaaaaaaaaa-1", redo) == broken + y + redo


def test_two_writers_of_one_archive_in_one_process_keep_both_sections():
    """Two conversations compact into one file at the same moment (agent.batch on thread
    "default", say): each reads, edits and writes the file; neither may undo the other."""
    import threading
    import time

    from labkit.summarize.archive import write_section

    class Slow(MemoryBackend):
        def download_files(self, paths):
            found = super().download_files(paths)
            time.sleep(0.05)
            return found

    backend = Slow()
    texts = {k: archive_section([HumanMessage(k)], 1, 0, FIXED, section=f"{k * 12}-1") for k in "ab"}
    threads = [threading.Thread(target=write_section, args=(backend, "/h.md", f"{k * 12}-1", t))
               for k, t in texts.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(text in backend.files["/h.md"] for text in texts.values())


def test_a_token_keep_never_folds_when_everything_fits():
    """A history that starts with a tool result (after a destructive compaction elsewhere):
    with a budget above the total nothing is folded, not the first message."""
    from labkit.summarize import cut_point

    history = [ToolMessage("r", tool_call_id="x"), HumanMessage("h"), AIMessage("a")]
    assert cut_point(history, ("tokens", 10**6), None, lambda m: 1) == 0


# -- 3. the archive is word for word under the recommended stack ----------------------------------


def test_an_early_draft_is_recovered_from_the_archive_under_offload_then_summarize():
    """[OffloadMiddleware(), SummarizeMiddleware()] — offload outermost, as labkit.evals runs them.
    The first draft of /report.md is replaced by a second; by the time the first write_file call
    is folded, offload has shortened its argument in the request. The archive holds it whole."""
    from deepagents.middleware.filesystem import FilesystemMiddleware

    draft1, draft2 = "FIRST DRAFT " + "alpha " * 600, "SECOND DRAFT " + "beta " * 600
    model = Scripted(messages=iter([
        ai(call("write_file", "w1", file_path="/report.md", content=draft1)),
        ai(call("write_file", "w2", file_path="/report.md", content=draft2)),
        ai(call("note", "n1", text="done")),
        AIMessage("report written"),
    ]))
    offload = OffloadMiddleware(args_trigger=("tokens", 10), args_keep=("messages", 1), arg_max_length=200)
    fs = FilesystemMiddleware(tool_token_limit_before_evict=None, human_message_token_limit_before_evict=None)
    agent = create_agent(model, tools=[note], checkpointer=InMemorySaver(),
                         middleware=[fs, offload, summarizer(trigger=("messages", 6), keep=("messages", 2))])
    agent.invoke({"messages": [HumanMessage("write the report")]}, config("r"))
    state = agent.get_state(config("r")).values
    assert events_of(state)
    sent = [m for seen in model.seen for m in seen if isinstance(m, AIMessage) and m.tool_calls
            and m.tool_calls[0]["id"] == "w1"]
    assert any(len(m.tool_calls[0]["args"]["content"]) < len(draft1) for m in sent), "offload shortened it"
    archive = html.unescape(state["files"][archive_path("r")]["content"])
    assert draft1 in archive and state["files"]["/report.md"]["content"] == draft2


# -- 5. two compact_conversation calls in one message ---------------------------------------------


def test_a_second_compact_conversation_call_in_one_message_gets_a_tool_error():
    model = Scripted(messages=iter([
        ai(call("compact_conversation", "c1"), call("compact_conversation", "c2")),
        AIMessage("done"),
    ]))
    mw = summarizer(trigger=("messages", 40), keep=("messages", 2), manual_tool=True, gate=0.1)
    agent = create_agent(model, tools=[], middleware=[mw], checkpointer=InMemorySaver())
    history = [HumanMessage(f"h{i}") if i % 2 == 0 else AIMessage(f"a{i}") for i in range(7)]
    agent.invoke({"messages": history}, config("m"))
    state = agent.get_state(config("m")).values
    results = {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}
    assert results["c1"].status == "success" and results["c1"].content.startswith("Compacted")
    assert results["c2"].status == "error"
    assert results["c2"].content == prompts.COMPACT_TWICE.format(first="c1")
    assert len(state[EVENTS_KEY]) == 1


# -- 6. the overflow fallback finds the pair-safe cut that fits -----------------------------------


class TooLong(Scripted):
    """Overflows whenever it is sent a message of over 5,000 characters (a stand-in for a window)."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        if any(len(m.text) > 5_000 for m in messages):
            self.overflow_on = (len(self.seen) + 1,)
        return super()._generate(messages, stop, run_manager, **kwargs)


@pytest.mark.parametrize(("trigger", "reason"),
                         [(("tokens", 1_000), "trigger"), (("tokens", 100_000), "overflow")],
                         ids=["trigger-fires", "fallback-only"])
def test_a_token_keep_cuts_past_a_parallel_block_when_that_fits(trigger, reason):
    """keep = 300 tokens. The last AI message made two calls; the first result is ~2,000 tokens.
    The smallest fitting suffix starts at the second result: moving back to the AI message would
    keep the big result (and the model overflows on it), so the cut goes past the block, keeping
    only the final human message. Before, the trigger cut back to the AI message, the call
    overflowed, and the fallback recomputed the same cut: "nothing is left to compact"."""
    big = "market data row 42.0 " * 400
    history = [HumanMessage("start"), ai(call("note", "x1", text="a"), call("note", "x2", text="b")),
               ToolMessage(big, tool_call_id="x1", id="r1"), ToolMessage("small", tool_call_id="x2", id="r2"),
               HumanMessage("and now?")]
    model = TooLong(messages=iter([AIMessage("fine")]))
    mw = summarizer(trigger=trigger, keep=("tokens", 300))
    agent = create_agent(model, tools=[note], middleware=[mw], checkpointer=InMemorySaver())
    agent.invoke({"messages": history}, config("o"))
    state = agent.get_state(config("o")).values
    (event,) = events_of(state)
    assert (event.reason, event.cut) == (reason, 4)
    assert [m.text for m in model.seen[-1]][1:] == ["and now?"] and state["messages"][-1].text == "fine"


# -- 7. the summarizer is checked when the middleware is built ------------------------------------


@pytest.mark.parametrize("bad", [None, 42, "gpt", object()], ids=["None", "int", "no-provider", "object"])
def test_a_summarizer_that_is_not_a_chat_model_fails_when_built(bad):
    with pytest.raises((TypeError, ValueError), match="SummarizeMiddleware"):
        SummarizeMiddleware(bad, trigger=("messages", 4), keep=("messages", 2))


def test_a_provider_model_string_is_resolved_when_built(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    mw = SummarizeMiddleware("openai:gpt-4.1-mini", trigger=("messages", 4), keep=("messages", 2))
    assert isinstance(mw.model, BaseChatModel) and mw.model.model_name == "gpt-4.1-mini"
