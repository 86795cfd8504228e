"""Nothing lost over random multi-agent runs (issue 8), through the real agent loop.

A parent (``create_agent``) with labkit's ``SummarizeMiddleware`` and ``IsolateMiddleware``; its
children run ``OffloadMiddleware`` and their own ``SummarizeMiddleware``. Hypothesis draws the
plan: user turns (re-invocations of one thread), parallel blocks of plain tool calls or of
``task`` calls, children that write to a file their siblings also write, to their own file, and
fetch results big enough to be offloaded, and a model window small enough to overflow. Whatever
happens — an overflow the fallback rescues or one that ends the turn — afterwards:

* every folded message of the parent is in its archive exactly once, and each child's archive is
  whole: its sections cover messages 0, 1, 2 … in order, each once;
* no file a child wrote is silently replaced: a sibling's version of a shared file is either the
  one kept or saved elsewhere and named in an error the parent reads;
* nothing in ``state["messages"]`` is ever deleted: each turn's state extends the last.
"""

from __future__ import annotations

import re
import threading

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field, PrivateAttr

from labkit import LabModel
from labkit.isolate import IsolateMiddleware, SubagentSpec
from labkit.offload import OffloadMiddleware
from labkit.summarize import SummarizeMiddleware, archive_path, events_of
from labkit.summarize.archive import read_archive

SETTINGS = settings(derandomize=True, deadline=None, max_examples=25,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
HEADING = re.compile(r"^## Compaction (\d+) — \S+ — messages (\d+)–(\d+)\n"
                     r"<section id=\"([0-9a-f]{12})-(\d+)\" fold=\"[0-9a-f]{12}\" "
                     r"nonce=\"[0-9a-f]{16}\">$", re.M)


@tool
def note(text: str) -> str:
    """Echo a note back."""
    return f"noted: {text}"


@tool
def fetch(words: int, tag: str) -> str:
    """Return a result of the given size."""
    return "\n".join(f"{tag} row {i}: value {i * 7 % 101}" for i in range(words))


# -- the plan ------------------------------------------------------------------------------------

child_step = st.lists(st.sampled_from(["shared", "own", "note", "fetch"]), min_size=1, max_size=2)
child_plan = st.lists(child_step, min_size=1, max_size=3)
parent_step = st.one_of(
    st.tuples(st.just("tools"), st.lists(st.sampled_from(["note", "fetch"]), min_size=1, max_size=3)),
    st.tuples(st.just("tasks"), st.lists(child_plan, min_size=1, max_size=3)),
)
turn_plan = st.lists(parent_step, min_size=1, max_size=3)


class PlanModel(GenericFakeChatModel):
    """Plays a drawn plan. Which context it is in, and which step comes next, it reads from the
    last message: a tool result's id is ``<context>.<step>.<j>``, a child's task description is
    ``child <context>``, a parent's turn is ``turn <t>``. It overflows when the characters it is
    sent pass ``limit``, and logs each write it asks for (context, path, content)."""

    turns: list = Field(default_factory=list)
    limit: int = 10**9
    writes: list = Field(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        if sum(len(m.text) for m in messages) > self.limit:
            raise ContextOverflowError("prompt is too long: maximum context length exceeded")
        last = messages[-1]
        if isinstance(last, ToolMessage):
            context, step, _ = last.tool_call_id.rsplit(".", 2)
            step = int(step) + 1
        else:
            context, step = last.text.split()[1], 0
        return ChatResult(generations=[ChatGeneration(message=self._act(context, step))])

    def _plan(self, context: str):
        parts = context.split("-")  # p<t> or c<t>-<s>-<i>
        turn = self.turns[int(parts[0][1:])]
        return turn if len(parts) == 1 else turn[int(parts[1])][1][int(parts[2])]

    def _act(self, context: str, step: int) -> AIMessage:
        plan = self._plan(context)
        if step >= len(plan):
            return AIMessage(f"{context} done")
        calls = []
        kinds = plan[step] if context.startswith("c") else plan[step][1]
        for j, kind in enumerate(kinds):
            call_id = f"{context}.{step}.{j}"
            if context.startswith("p") and plan[step][0] == "tasks":
                args, name = {"description": f"child c{context[1:]}-{step}-{j}",
                              "subagent_type": "worker"}, "task"
            elif kind == "note":
                args, name = {"text": call_id}, "note"
            elif kind == "fetch":
                args, name = {"words": 120, "tag": call_id}, "fetch"
            else:  # each agent writes a path once: its own rewrites are not what is tested here
                path = f"/shared-{context.rsplit('-', 1)[0]}.md" if kind == "shared" else f"/own/{context}.md"
                args, name = {"file_path": path, "content": f"{call_id} wrote {path}"}, "write_file"
                with self._lock:
                    if any(w[:2] == (context, path) for w in self.writes):
                        args, name = {"text": call_id}, "note"
                    else:
                        self.writes.append((context, path, args["content"]))
            calls.append({"name": name, "args": args, "id": call_id, "type": "tool_call"})
        return AIMessage("", tool_calls=calls)


def agent_for(model: PlanModel, keep: int):
    summarizer = LabModel()
    child_mw = [OffloadMiddleware(tool_limit=600, args_trigger=None),
                SummarizeMiddleware(summarizer, trigger=("messages", 6), keep=("messages", keep))]
    spec = SubagentSpec(name="worker", description="does one part", system_prompt="Work.",
                        tools=[note, fetch])
    iso = IsolateMiddleware(model, [spec], child_middleware=child_mw)
    parent_mw = SummarizeMiddleware(summarizer, trigger=("messages", 8), keep=("messages", keep))
    return create_agent(model, tools=[note, fetch], middleware=[iso, parent_mw], checkpointer=InMemorySaver())


# -- the invariants ----------------------------------------------------------------------------------


def check_parent_archive(state) -> None:
    """Sections 1 … n (one per event in state) hold the folded messages, each once. A section
    after them was written by a compaction whose model call then failed, so its event never
    reached state: it is replaced when that compaction is redone."""
    events = events_of(state)
    if not events:
        return
    archive = state["files"][archive_path("t")]["content"]
    numbers = [int(h[0]) for h in HEADING.findall(archive)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= len(events)
    sections = read_archive(archive)[:len(events)]
    got = [m for section in sections for m in section.messages]
    assert got == list(state["messages"][:events[-1].cut]), "each folded message archived once"


def check_child_archive(path: str, text: str) -> None:
    headings = HEADING.findall(text)
    sections = read_archive(text)
    assert headings and len(sections) == len(headings) and all(s.end for s in sections), path
    assert len({h[3] for h in headings}) == 1, f"{path}: one conversation per child file"
    nxt = 0
    for k, (number, lo, hi, _, owner_number) in enumerate(headings, start=1):
        assert int(number) == int(owner_number) == k, f"{path}: sections numbered 1, 2, …"
        assert int(lo) == nxt and int(hi) >= int(lo), f"{path}: section {k} starts where the last ended"
        nxt = int(hi) + 1
    for (number, lo, hi, *_), section in zip(headings, sections):
        assert len(section.messages) == int(hi) - int(lo) + 1, f"{path}: section {number} whole"


def check_files(model: PlanModel, state) -> None:
    files = {p: d["content"] for p, d in state["files"].items()}
    replies = {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}
    for context, path, content in model.writes:
        block_call = "p{}.{}.{}".format(*context[1:].split("-"))
        reply = replies.get(block_call)
        if reply is None or reply.status == "error" and "stopped before replying" in reply.text:
            continue  # the child failed (its turn ended); the parent was told
        holders = [p for p, text in files.items() if text == content]
        assert holders, f"{content!r} is nowhere in the parent's files"
        if path not in holders:
            assert reply.status == "error" and path in reply.text and holders[0] in reply.text, \
                f"{context}'s version of {path} was moved without the parent being told"


@SETTINGS
@given(turns=st.lists(turn_plan, min_size=1, max_size=3), keep=st.integers(1, 3),
       limit=st.sampled_from([10**9, 9_000, 4_000]))
def test_nothing_is_lost_in_random_multi_agent_runs(turns, keep, limit):
    model = PlanModel(messages=iter([]), turns=turns, limit=limit)
    agent = agent_for(model, keep)
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 200}
    before: list = []
    for t in range(len(turns)):
        try:
            agent.invoke({"messages": [HumanMessage(f"turn p{t}")]}, config)
        except ContextOverflowError:
            pass  # nothing left to compact: the turn ends, the state stays
        state = agent.get_state(config).values
        assert [m.id for m in state["messages"][:len(before)]] == [m.id for m in before], "no message deleted"
        before = list(state["messages"])
    check_parent_archive(state)
    children = [p for p in state.get("files", {}) if p.startswith("/conversation_history/t/")]
    for path in children:
        check_child_archive(path, state["files"][path]["content"])
    check_files(model, state)
    replies = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.name == "task"]
    event(f"parent compactions: {min(len(events_of(state)), 3)}+")
    event(f"child archives: {min(len(children), 3)}+")
    event(f"file conflicts reported: {min(sum('file conflict' in m.text for m in replies), 2)}+")
    event(f"children failed: {min(sum('stopped before replying' in m.text for m in replies), 1)}+")
    event(f"offloaded results: {min(sum(p.startswith('/large_tool_results/') for p in state['files']), 2)}+")
