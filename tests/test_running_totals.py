"""The speed paths of counting give the numbers of the plain computation, call after call.

labkit's middleware and the Recorder keep running totals (``trace.RunningMeasure``), share one
identity cache of message counts (``_token_cache.SameObjects``), read ``tool_calls`` without
pydantic's slow miss, key a copied tool by its schema class, make each summary message once per
event, and wrap and preview an evicted result without a pass per line. The oracle everywhere is
the plain computation: tiktoken on ``message_text`` plus 3 per message, langchain's schema
conversion for tools, and the reference line functions below — never a cache.
"""

from __future__ import annotations

import gc
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents.middleware import AgentMiddleware, ClearToolUsesEdit, ContextEditingMiddleware
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field

from labkit import LabModel, evals, scenario
from labkit._token_cache import SameObjects, tool_calls_of, tool_shape
from labkit.offload import WRAP_MARK, OffloadMiddleware, preview, wrap_long_lines
from labkit.summarize import SUMMARY_METADATA, Event, SummarizeMiddleware, summary_parts, view
from labkit.tokens import TOKENS_PER_MESSAGE, TokenCounter, encoding, message_text
from labkit.trace import KINDS, Recorder, RunningMeasure, kind_of

ENC = encoding()


def plain_message(m) -> int:
    return len(ENC.encode(message_text(m), disallowed_special=())) + TOKENS_PER_MESSAGE


def plain_tool(t) -> int:
    schema = t if isinstance(t, dict) and "function" in t else convert_to_openai_tool(t)
    return len(ENC.encode(json.dumps(schema["function"], ensure_ascii=False), disallowed_special=()))


def plain_measure(messages, system=None, tools=None) -> dict[str, int]:
    by = dict.fromkeys(KINDS, 0)
    if system is not None:
        by["system"] = plain_message(system)
    by["tools"] = sum(plain_tool(t) for t in tools or [])
    for m in messages:
        by[kind_of(m)] += plain_message(m)
    return by


@pytest.fixture
def checked(monkeypatch):
    """Every ``RunningMeasure`` result of the test, and every Recorder's ``stored``, paired with the
    plain computation made at the same moment (a later edit cannot hide a wrong total)."""
    pairs = []
    real_call, real_messages = RunningMeasure.__call__, RunningMeasure.messages

    def call(self, messages, system=None, tools=None):
        got = real_call(self, messages, system, tools)
        pairs.append((got, plain_measure(messages, system, tools)))
        return got

    def messages(self, msgs):
        got = real_messages(self, msgs)
        plain = plain_measure(msgs)
        pairs.append((dict(zip(KINDS, got)), plain))
        return got

    real_before = Recorder._before

    def before(self, request):  # stored may come from seen's sum: checked against the plain count too
        rec = real_before(self, request)
        plain = sum(plain_measure(request.state["messages"]).values())
        pairs.append(({"stored": rec.stored}, {"stored": plain}))
        return rec

    monkeypatch.setattr(RunningMeasure, "__call__", call)
    monkeypatch.setattr(RunningMeasure, "messages", messages)
    monkeypatch.setattr(Recorder, "_before", before)
    return pairs


class Editor(AgentMiddleware):
    """Edits between labkit's middleware and the Recorder: drops a message from the middle,
    replaces a tool result by a copy, and reassigns a stored message's content in place."""

    name = "test.Editor"

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def wrap_model_call(self, request, handler):
        self.calls += 1
        messages = list(request.messages)
        pair = next((i for i in range(1, len(messages) - 2) if isinstance(messages[i], AIMessage)
                     and len(messages[i].tool_calls) == 1 and isinstance(messages[i + 1], ToolMessage)), None)
        if self.calls % 3 == 0 and pair is not None:
            del messages[pair:pair + 2]  # a call and its result removed from the middle (the request only)
        if self.calls % 4 == 0:
            i = max((k for k, m in enumerate(messages) if isinstance(m, ToolMessage)), default=None)
            if i is not None:
                messages[i] = messages[i].model_copy(update={"content": "[edited]"})
        if self.calls % 5 == 0:
            first = request.state["messages"][0]
            first.content = first.content + " "  # the very object, its content reassigned
        return handler(request.override(messages=messages))


def test_every_running_total_of_an_editing_run_equals_a_fresh_count(checked):
    """Offload, Summarize (which folds at 32k), a langchain editor that clears old tool results,
    and an editor that removes, replaces and edits in place: the Recorder's seen and stored, and
    each middleware's request size, equal the plain count on every call."""
    model, rec = LabModel(window=32_000), Recorder()
    clear = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=20_000, keep=2)])
    stack = [OffloadMiddleware(), SummarizeMiddleware(model), clear, Editor()]
    run = scenario.run(model, middleware=stack, recorder=rec,
                       turns=evals.reminded(scenario.TURNS, model))
    assert len(rec.records) > 10 and any(r.by_kind["summary"] for r in rec.records), "the run folds"
    assert len(checked) >= 3 * len(rec.records)
    for got, plain in checked:
        assert got == plain, "a running total differs from the fresh count"
    assert run.records == rec.records


def test_the_recorded_numbers_equal_the_models_own_on_the_recommended_setting(checked):
    """labkit's recommended setting at every window: what the Recorder says each call carried is
    what the lab model counted, and each running total is the fresh count."""
    for window in (128_000, 60_000, 32_000):
        run, model = evals.trial(evals.Setting("recommended", window=window))
        agent_calls = [c for c in model.calls if c.kind == "agent"]
        assert [r.seen for r in run.records] == [c.input_tokens for c in agent_calls]
    assert all(got == plain for got, plain in checked)


def test_the_recorders_stored_is_the_plain_count_with_a_system_prompt_and_under_deepagents(checked):
    """The Recorder takes ``stored`` from what it just measured when the request carries the state's
    very messages; the system prompt is not part of the state, so it must not be in ``stored``."""
    for harness in ("agent", "deep"):
        model = LabModel(window=60_000)
        run = scenario.run(model, middleware=[OffloadMiddleware(), SummarizeMiddleware(model)],
                           harness=harness, system_prompt="Answer as briefly as the facts allow.")
        assert run.records and all(r.by_kind["system"] > 0 for r in run.records), "a system prompt is sent"
    assert checked and all(got == plain for got, plain in checked)


def _history():
    call = {"name": "write_file", "args": {"file_path": "/r.md", "content": "x" * 300}, "id": "c1",
            "type": "tool_call"}
    return [HumanMessage("start", id="h1"), AIMessage("", tool_calls=[call], id="a1"),
            ToolMessage("written", tool_call_id="c1", id="t1"), AIMessage("done", id="a2")]


def test_running_measure_follows_every_kind_of_change():
    counter = TokenCounter()
    rm = RunningMeasure(counter)
    tools = [t.model_copy() for t in scenario.tools()]  # edited below: not the shared ones
    system = SystemMessage("be brief")
    h = _history()

    def same(messages, tool_list=tools):
        assert rm(messages, system, tool_list) == plain_measure(messages, system, tool_list)

    same(h[:2])
    same(h)  # grown
    same([h[0], h[2], h[3]])  # a removal in the middle
    same([HumanMessage("summary", additional_kwargs={"lc_source": "summarization"}), *h[2:]])  # a new head
    h[2].content = "rewritten, much longer than before " * 5  # the same object, reassigned
    same(h)
    h[1].tool_calls = [{**h[1].tool_calls[0], "args": {"file_path": "/r.md"}}]
    same(h)
    h[0].additional_kwargs = {"lc_source": "summarization"}  # its kind changes to summary
    same(h)
    same(h, [t.model_copy() for t in tools])  # copies of the tools
    same(h, [t.model_copy(update={"description": t.description + " more"}) for t in tools])  # other words
    same(h, [t.model_copy(update={"name": t.name + "_v2"}) for t in tools])  # other names
    same(h, tools)
    same(h, tools)  # the very tools again
    same(h, tools[::-1])  # the same tools in another order
    same(h, tools[1:])  # one fewer
    same(h, [*tools, tools[0].model_copy(update={"name": "again"})])  # one more
    same(h, tools)
    tools[0].description = tools[0].description + " Also more words here."  # edited in place
    same(h)
    other = type("Other", (StructuredTool,), {})(name=tools[1].name, description=tools[1].description,
                                                   args_schema=tools[1].args_schema, func=lambda **kw: "")
    same(h, [tools[0], other])  # another class with the same fields
    same(h, [tools[0], other.model_copy(update={"args_schema": tools[0].args_schema})])  # other arguments
    tools[1].args_schema = tools[0].args_schema  # another argument class, in place
    same(h)
    schema = {"type": "function", "function": {"name": "f", "description": "d", "parameters": {}}}
    same(h, [schema])
    schema["function"]["description"] = "a much longer description of what f does"  # in place
    same(h, [schema])
    by_json = StructuredTool(name="j", description="d", func=lambda **kw: "",
                             args_schema={"type": "object", "properties": {"q": {"type": "string"}}})
    same(h, [by_json])
    same(h, [by_json])
    by_json.args_schema["properties"]["since"] = {"type": "string", "description": "a date"}  # in place
    same(h, [by_json])
    bare = {"name": "g", "description": "d", "parameters": {"type": "object", "properties": {}}}
    same(h, [bare])  # a JSON schema without the "function" wrapper, which langchain converts
    bare["description"] = "a much longer description of what g does, edited in place"
    same(h, [bare])
    same([], [])


def test_a_message_counted_by_one_counter_is_not_rebuilt_by_another(monkeypatch):
    from labkit import tokens  # message_text is looked up there by every counter

    built = []
    monkeypatch.setattr(tokens, "message_text", lambda m, **kw: built.append(m) or message_text(m, **kw))
    messages = _history()
    first, second = TokenCounter(), TokenCounter()
    assert first.messages(messages) == sum(map(plain_message, messages))
    assert second.messages(messages) == first.messages(messages), "the same count"
    assert len(built) == len(messages), "each text built once, for both counters"
    assert second.misses == first.misses == len(messages), "each counter still counts its own misses"
    messages[0].content = "edited"
    assert second.message(messages[0]) == plain_message(messages[0]), "an edit is counted afresh"


def test_the_shared_identity_cache_lets_a_message_go_and_can_be_switched_off():
    same = SameObjects()
    message = HumanMessage("short-lived")
    same.put(message, ("human", "short-lived"), 5)
    assert same.get(message) == (("human", "short-lived"), 5)
    del message
    gc.collect()
    assert same._seen == {}, "the entry went with its message"
    off = SameObjects(size=0)
    kept = HumanMessage("x")
    off.put(kept, ("human", "x"), 4)
    assert off.get(kept) is None


class _Calls(HumanMessage):
    @property
    def tool_calls(self):
        return [{"name": "from_a_property", "args": {}, "id": "p"}]


@pytest.mark.parametrize("message", [
    HumanMessage("h"), ToolMessage("t", tool_call_id="1"), SystemMessage("s"), AIMessage("a"),
    AIMessage("", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "1", "type": "tool_call"}]),
    HumanMessage("extra", tool_calls=[{"name": "g", "args": {}, "id": "2"}]), _Calls("property"),
])
def test_tool_calls_of_is_getattr(message):
    assert tool_calls_of(message) == getattr(message, "tool_calls", None)


def test_a_tool_copy_has_the_shape_of_its_original_and_a_changed_field_does_not():
    class Args(BaseModel):
        pattern: str = Field(description="what to find")

    def find(pattern: str) -> str:
        """Find it."""
        return pattern

    tool = StructuredTool.from_function(find, args_schema=Args)
    assert tool_shape(tool.model_copy()) == tool_shape(tool)
    before = tool_shape(tool)
    Args.model_fields["pattern"] = Field(description="a regular expression")  # a new field object
    Args.model_fields["pattern"].annotation = str
    assert tool_shape(tool) != before and "a regular expression" in str(tool_shape(tool))


def test_the_summary_message_is_made_once_per_event_and_is_policy_view():
    """policy.view (which SummarizeMiddleware and the replay both use) sends the very same summary
    object for an event on every call; an equal event made again gets it too."""
    messages = _history()
    event = Event(cut=2, summary="S", archive="/conversation_history/x.md", created_at=4, number=1)
    first = view(messages, event)
    again = Event(cut=2, summary="S", archive="/conversation_history/x.md", created_at=4, number=1)
    second = view(messages, again)
    assert first[0] is second[0], "the same summary object on every call"
    made = summary_parts(event)
    assert [(m.type, m.content, m.additional_kwargs, m.id) for m in first] == [
        ("human", made[0] + made[1], SUMMARY_METADATA, "labkit-summary-1"),
        *((m.type, m.content, m.additional_kwargs, m.id) for m in messages[2:])]
    assert view(messages, None) == messages


def _reference_wrap(text: str, limit: int) -> str:
    """wrap_long_lines as it was: a pass over every line."""
    out = []
    for line in text.split("\n"):
        if len(line) <= limit and not line.endswith(WRAP_MARK):
            out.append(line)
            continue
        pieces = [line[i:i + limit] for i in range(0, len(line), limit)] or [""]
        if pieces[-1].endswith(WRAP_MARK) or len(pieces[-1]) == limit:
            pieces.append("")
        out.extend(p + WRAP_MARK for p in pieces[:-1])
        out.append(pieces[-1])
    return "\n".join(out)


def _reference_preview(text: str, head: int, tail: int, line_chars: int) -> str:
    """preview as it was: the whole text split into lines."""
    lines = text.split("\n")
    width = len(str(len(lines)))
    shown = list(range(len(lines))) if len(lines) <= head + tail else \
        [*range(head), None, *range(len(lines) - tail, len(lines))]
    out = []
    for i in shown:
        if i is None:
            out.append(f"... [{len(lines) - head - tail:,} lines not shown] ...")
            continue
        more = len(lines[i]) - line_chars
        clipped = lines[i][:line_chars] + (f" …[{more:,} more characters]" if more > 0 else "")
        out.append(f"{i + 1:>{width}}  {clipped}")
    return "\n".join(out)


_LINES = st.lists(st.sampled_from(["", "a", "abc", "x" * 12, WRAP_MARK, "y" + WRAP_MARK, "\n", "é↩"]),
                  max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(_LINES, st.integers(1, 12))
def test_wrap_long_lines_is_the_reference(text, limit):
    assert wrap_long_lines(text, limit) == _reference_wrap(text, limit)


@settings(max_examples=300, deadline=None)
@given(_LINES, st.integers(0, 6), st.integers(0, 6), st.integers(1, 8))
def test_preview_is_the_reference(text, head, tail, line_chars):
    assert preview(text, head, tail, line_chars) == _reference_preview(text, head, tail, line_chars)
