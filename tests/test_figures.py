"""The diagrams say what the installed code does: the names in their labels are read from it."""

from __future__ import annotations

import inspect
import re
import typing
import xml.etree.ElementTree as ET
from pathlib import Path
from unittest import mock

import deepagents
import deepagents.graph
import nbformat
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import HumanMessage
from langgraph.prebuilt.tool_node import ToolNode

from labkit import LabModel, Recorder, scenario
from labkit.isolate import IsolateMiddleware, SubagentSpec

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "notebooks" / "figures"
SVG = "{http://www.w3.org/2000/svg}"
HOOKS = ["before_agent", "before_model", "wrap_model_call", "wrap_tool_call", "after_model", "after_agent"]


def _labels(name: str) -> str:
    """Every <text> label of a figure, one per line."""
    return "\n".join(_label_list(name))


def _label_list(name: str) -> list[str]:
    """Every <text> label of a figure."""
    root = ET.parse(FIGURES / name).getroot()
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


def _classed_labels(name: str, cls: str | None = None) -> list[str]:
    """The text of every ``<text>`` in ``figures/name`` (only those of class ``cls``, if given)."""
    root = ET.parse(FIGURES / name).getroot()
    return ["".join(t.itertext()).strip() for t in root.iter(f"{SVG}text")
            if cls is None or t.get("class") == cls]


def _notebook_names(notebook: str, starts: str, names: dict) -> dict:
    """Run the notebook's code cell that starts with ``starts`` in ``names``; return the names."""
    nb = nbformat.read(ROOT / "notebooks" / notebook, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith(starts))
    exec(cell.source, names)  # noqa: S102 — the course's own notebook cell
    return names


def _texts(name: str) -> list[ET.Element]:
    """The ``<text>`` elements of a figure, in document order."""
    return list(ET.parse(FIGURES / name).getroot().iter(f"{SVG}text"))


def _installed_stack(**kwargs) -> list:
    """The middleware list ``create_deep_agent`` hands to langchain's ``create_agent``, in order."""
    handed = {}
    real = deepagents.graph.create_agent

    def spy(*args, **kw):
        handed.update(kw)
        return real(*args, **kw)

    with mock.patch.object(deepagents.graph, "create_agent", spy):
        deepagents.create_deep_agent(model=LabModel(), **kwargs)
    return handed["middleware"]


def _hooks(middleware) -> list[str]:
    """The hooks a middleware's class overrides, sync or async — the test create_agent itself makes."""
    cls = type(middleware)
    return [h for h in HOOKS if any(getattr(cls, v) is not getattr(AgentMiddleware, v) for v in (h, "a" + h))]


def test_nb04_offload_stub_names_the_installed_paths_hooks_and_limits():
    from deepagents.middleware.filesystem import NUM_CHARS_PER_TOKEN, FilesystemMiddleware

    from labkit import offload, prompts
    from labkit.offload import OffloadMiddleware

    labels = _labels("04-offload-stub.svg")
    assert f"{offload.RESULTS_DIR}/<tool_call_id>" in labels
    assert offload.result_path("call_1").startswith(offload.RESULTS_DIR + "/")
    assert "OffloadMiddleware" in labels and "wrap_tool_call" in OffloadMiddleware.__dict__
    tool_limit = inspect.signature(OffloadMiddleware).parameters["tool_limit"].default
    deep_limit = inspect.signature(FilesystemMiddleware).parameters["tool_token_limit_before_evict"].default
    assert f"labkit: {tool_limit:,} BPE tokens" in labels
    assert f"deepagents: {NUM_CHARS_PER_TOKEN * deep_limit:,} characters" in labels
    assert offload.END_MARK in labels and f"{offload.LINE_LIMIT:,} characters" in labels
    stub_start = prompts.OFFLOAD_RESULT_STUB.split("({tokens")[0].strip()
    assert stub_start in " ".join(labels.split())
    tools = {t.name for t in FilesystemMiddleware().tools}
    for call in re.findall(r"(\w+)\((?:pattern|file_path)", labels):
        assert call in tools
    assert {"grep", "read_file"} <= set(offload.EXEMPT_TOOLS)


def test_nb08_cut_point_names_the_installed_helpers():
    import langchain.agents.middleware.summarization as lc
    from deepagents.middleware.summarization import SummarizationMiddleware as DeepSummarization
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from labkit import summarize

    labels = _labels("08-cut-point.svg")
    for name in ("safe_cut", "cut_point"):
        assert name in labels and hasattr(summarize, name)
    assert "_find_safe_cutoff_point" in labels
    assert hasattr(lc.SummarizationMiddleware, "_find_safe_cutoff_point")
    assert "_determine_cutoff_index" in labels
    delegated = inspect.getsource(DeepSummarization._determine_cutoff_index)
    assert "_lc_helper._determine_cutoff_index" in delegated
    # the drawn history: H C T C T C T A; keeping the last 4 cuts at 4 (a T), the safe cut is 3
    history = [HumanMessage("q")]
    for k in (1, 2, 3):
        call = {"name": "t", "args": {}, "id": f"id_{k}", "type": "tool_call"}
        history += [AIMessage("", tool_calls=[call]),
                    ToolMessage("r", tool_call_id=f"id_{k}")]
    history.append(AIMessage("done"))
    assert summarize.safe_cut(history, len(history) - 4) == 3
    assert lc.SummarizationMiddleware._find_safe_cutoff_point(history, 4) == 3
    assert "messages[4:]" in labels and "messages[3:]" in labels


def test_nb05_truncated_argument_states_the_installed_defaults():
    from labkit import prompts
    from labkit.offload import TRUNCATED_TOOLS, OffloadMiddleware

    labels = " ".join(_labels("05-truncated-argument.svg").split())
    params = inspect.signature(OffloadMiddleware).parameters
    assert "wrap_model_call" in labels and "wrap_model_call" in OffloadMiddleware.__dict__
    assert f"args_trigger = {params['args_trigger'].default!r}".replace("'", '"') in labels
    assert f"args_keep = {params['args_keep'].default!r}".replace("'", '"') in labels
    assert f"the last {params['args_keep'].default[1]} messages" in labels
    kept = params["arg_max_length"].default // 2
    assert f"arg_max_length // 2 = {kept:,} characters" in labels
    assert f"the first {kept:,}" in labels
    assert " / ".join(TRUNCATED_TOOLS) in labels
    note = prompts.ARG_TRUNCATED.split("{dropped:,}")[1].split("{path}")[0].strip()
    assert note in labels


def test_nb09_view_and_archive_names_are_installed():
    from deepagents.middleware import summarization as da

    from labkit.summarize import policy

    labels = _label_list("09-view-and-archive.svg")
    text = "\n".join(labels)
    event_keys = set(typing.get_type_hints(da.SummarizationEvent))
    shown = {k for k in ("cutoff_index", "summary_message", "file_path", "created_at_index") if k in labels}
    assert shown == event_keys, "the event box lists the installed event's keys"
    assert f'state["{da.SUMMARIZATION_SESSION_ID_KEY}"]' in text
    assert 'state["_summarization_event"]' in text
    assert "_summarization_event" in inspect.getsource(da)
    source = inspect.getsource(da.SummarizationMiddleware)
    assert "## Summarized at" in text
    assert "## Summarized at {timestamp}" in source, "the archive's section heading"
    assert 'f"session_{uuid.uuid4().hex}"' in source, "the archive is named by a session id"
    assert "/conversation_history/session_<32 hex>.md" in text
    assert re.search(r'f"\{_root\}/conversation_history"', source)
    assert "[summary_message, *messages[cutoff_index:]]" in text
    assert f'state["{policy.EVENTS_KEY}"]' in text, "labkit's event key"


def test_nb11_trigger_and_wall_are_the_installed_fallback():
    from deepagents.middleware import summarization as da
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    from labkit.summarize import middleware as lk

    labels = _label_list("11-trigger-and-wall.svg")
    text = "\n".join(labels)
    wrap = inspect.getsource(lk.SummarizeMiddleware.wrap_model_call)
    assert "SummarizeMiddleware.wrap_model_call" in labels
    assert wrap.count("handler(") == 2, "one call, and one retry after an overflow"
    assert "_on_overflow" in wrap
    assert "_on_overflow: compact, forced" in labels
    overflow = inspect.getsource(lk.SummarizeMiddleware._on_overflow)
    assert '"overflow"' in overflow
    assert 'event, reason "overflow"' in labels
    assert "nothing is left to compact" in overflow
    assert "nothing is left to compact," in labels
    assert '"trigger"' in inspect.getsource(lk.SummarizeMiddleware._before)
    assert 'event, reason "trigger"' in labels
    assert "ContextOverflowError" in text
    no_profile = GenericFakeChatModel(messages=iter([]))
    assert da.compute_summarization_defaults(no_profile)["trigger"] == ("tokens", 170_000)
    assert "trigger: 170,000" in labels
    assert "_call_with_budget" in inspect.getsource(da.SummarizationMiddleware)
    assert "_call_with_budget" in text


def test_nb13_composite_backend_routes_are_the_notebooks():
    import sqlite3

    from deepagents.backends import CompositeBackend, StateBackend, StoreBackend
    from langgraph.store.sqlite import SqliteStore

    from labkit import scenario

    names = _notebook_names("13_skills_and_memory.ipynb", "def memory_backend", {
        "CompositeBackend": CompositeBackend, "StateBackend": StateBackend, "StoreBackend": StoreBackend,
        "scenario": scenario, "sqlite3": sqlite3, "SqliteStore": SqliteStore})
    backend = names["memory_backend"](scenario.memory_store())
    routes = [f"{prefix} → {type(b).__name__}" for prefix, b in backend.sorted_routes]
    assert _classed_labels("13-composite-backend.svg", "route") == routes
    default = f"default → {type(backend.default).__name__}"
    assert _classed_labels("13-composite-backend.svg", "default") == [default]
    assert _classed_labels("13-composite-backend.svg", "composite") == [type(backend).__name__]
    labels = _classed_labels("13-composite-backend.svg")
    routed, key = backend._get_backend_and_key(scenario.MEMORY_PATH)
    assert type(routed) is StoreBackend
    assert f"{scenario.MEMORY_PATH} → key {key}" in labels, "the prefix cut off as the installed route does"
    assert f"namespace {scenario.MEMORY_NAMESPACE}" in labels
    assert f"{scenario.REPORT_PATH}, /large_tool_results/…" in labels
    assert type(backend._get_backend_and_key(scenario.REPORT_PATH)[0]) is StateBackend


def test_nb14_goal_anchor_names_are_the_installed_ones():
    from deepagents.backends import StateBackend
    from deepagents.middleware.summarization import SummarizationMiddleware
    from langchain.agents.middleware import TodoListMiddleware
    from langchain.agents.middleware import summarization as lc_summarization

    from labkit import LabModel, evals
    from labkit.prompts import PROGRESS_PATH, PROGRESS_PROMPT

    text = " ".join(_classed_labels("14-goal-anchor.svg"))
    assert SummarizationMiddleware(LabModel(), backend=StateBackend()).name in text  # its name in the stack
    assert TodoListMiddleware.__name__ in text
    assert [t.name for t in TodoListMiddleware().tools] == ["write_todos"]
    assert "write_todos" in text
    assert f"backend (StateBackend): {PROGRESS_PATH}" in text
    assert PROGRESS_PATH in PROGRESS_PROMPT
    assert "too long to summarize" in text
    assert "Previous conversation was too long to summarize." in inspect.getsource(lc_summarization)
    assert "trigger 8 messages, keep 4" in text  # evals.forced_compaction's defaults, notebook 14
    defaults = inspect.signature(evals.forced_compaction).parameters
    assert (defaults["trigger"].default, defaults["keep"].default) == (8, 4)


def test_nb03_pipeline_matches_the_installed_stack():
    texts = _texts("03-pipeline.svg")
    names = [t.text for t in texts if t.get("class") == "middleware"]
    stack = _installed_stack()
    assert names == [m.name for m in stack]
    # the line under each name lists the hooks its class overrides
    drawn = [texts[texts.index(t) + 1].text.split(" · ") for t in texts if t.get("class") == "middleware"]
    assert drawn == [_hooks(m) for m in stack]


def test_nb03_pipeline_puts_user_middleware_where_the_figure_says():
    recorder = Recorder()
    stack = _installed_stack(middleware=[recorder])
    names = [m.name for m in stack]
    assert stack.index(recorder) == names.index("PatchToolCallsMiddleware") + 1


def test_nb03_agent_loop_names_every_installed_hook():
    labels = {t.text for t in _texts("03-agent-loop.svg")}
    hooks = {label for label in labels if label in dir(AgentMiddleware)}
    assert hooks == set(HOOKS)


def test_nb06_every_call_lists_the_tools_a_deep_agent_binds():
    model = LabModel()
    agent = deepagents.create_deep_agent(model=model, tools=scenario.tools())
    agent.invoke({"messages": [HumanMessage("Hello")]})
    drawn = [t.text for t in _texts("06-every-call.svg") if t.get("class") == "tool"]
    assert drawn == model.calls[0].tools


def test_nb01_three_defences_name_deepagents_default_paths():
    from deepagents.backends import StateBackend
    from deepagents.middleware.summarization import create_summarization_middleware

    labels = {t.text for t in _texts("01-three-defences.svg")}
    summarization = create_summarization_middleware(LabModel(), StateBackend())
    assert summarization._large_tool_results_prefix + "/" in labels
    assert summarization._history_path_prefix + "/" in labels


def test_nb12_fan_out_names_the_installed_tool_its_arguments_and_the_notes_paths():
    text = _labels("12-fan-out.svg")
    task = IsolateMiddleware(LabModel(), [SubagentSpec(**scenario.researcher())]).tools[0]
    assert task.name == "task"
    assert f"{task.name}(description, subagent_type=\"researcher\")" in text.replace("&quot;", '"')
    assert set(task.args) == {"description", "subagent_type"}
    assert all(t.name in text for t in scenario.tools()), "the child's two data tools"
    assert all(scenario.notes_path(c["ticker"]) in text for c in scenario.companies()), "the notes paths"
    assert "ToolNode" in text and "executor" in inspect.getsource(ToolNode._func), "parallel on a thread pool"


def test_nb10_summary_chain_is_the_installed_message_and_chain():
    """The message's lines are summary_parts' own words, its sections labkit's prompt's; and the
    chain is what a run does: the second summary is written from the first (the summarizer reads
    it), while the archive gets only raw messages, never a summary."""
    from labkit import prompts
    from labkit.summarize import SummarizeMiddleware, events_of
    from labkit.summarize.policy import Event, summary_parts

    labels = _label_list("10-summary-chain.svg")
    text = "\n".join(labels)
    for section in prompts.SUMMARY_SECTIONS:
        assert section in labels, section
    head, _ = summary_parts(Event(cut=17, summary="s", archive="/a.md", created_at=20, number=2))
    first, second = "This conversation was compacted (compaction 2):", "its first 17 messages were replaced"
    assert head.startswith(f"{first} {second}") and first in text and second in text
    assert "The folded messages are archived, word for word," in text
    assert "archived, word for word, in /a.md" in head

    model = LabModel(window=60_000)
    run = scenario.run(model, middleware=[SummarizeMiddleware(model)])
    events = events_of(run.state)
    assert len(events) >= 2, "a chain"
    read = [c for c in model.calls
            if c.kind == "summary" and events[0].summary in str(c.messages[-1].content)]
    assert read, "a later summary call read the first summary"
    archive = run.files[events[-1].archive]
    assert all(e.summary not in archive for e in events), "no summary is archived"


def test_nb02_window_budget_numbers_are_the_installed_ones():
    """The trigger and the budget in the picture are what deepagents computes for the lab model."""
    from deepagents.middleware.summarization import compute_summarization_defaults

    labels = _labels("02-window-budget.svg")
    model = LabModel(window=128_000)
    kind, fraction = compute_summarization_defaults(model)["trigger"]
    assert (kind, fraction) == ("fraction", 0.85) and f"= {int(128_000 * fraction):,}" in labels
    output = max(v for k in ("max_tokens", "max_completion_tokens", "max_output_tokens")
                 if isinstance(v := getattr(model, k, None), int))
    assert f"int(0.95 × 128,000) − {output:,} = {int(128_000 * 0.95) - output:,}" in labels
    source = inspect.getsource(deepagents.middleware.summarization.SummarizationMiddleware._input_budget)
    assert "int(limit * 0.95) - output" in source
    assert "3.3 for Anthropic" in labels and "≤ 1.25 ×" in labels


def test_nb07_trigger_and_keep_are_the_installed_defaults():
    from deepagents.middleware.summarization import compute_summarization_defaults

    from labkit.summarize.policy import defaults

    labels = _labels("07-trigger-and-keep.svg")
    model = LabModel(window=128_000)
    deep = compute_summarization_defaults(model)
    assert deep["trigger"] == defaults(model)[0] == ("fraction", 0.85), "labkit and deepagents agree"
    assert deep["keep"] == defaults(model)[1] == ("fraction", 0.1)
    assert 'trigger: ("fraction", 0.85)' in labels and 'keep: ("fraction", 0.10)' in labels
    assert f"{int(128_000 * 0.85):,}" in labels and f"{int(128_000 * 0.10):,}" in labels
