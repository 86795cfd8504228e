"""The lab model's goal anchors (notebook 14): a todo list (langchain's TodoListMiddleware) and
a progress file, and the evals that count goal drift (labkit.evals).

Unit tests hand-build a short history and look at the next reply; the end-to-end tests run the
scenario under deepagents with frequent forced compaction, where the unanchored run drifts.
"""

from __future__ import annotations

import re

import pytest
from deepagents.middleware.filesystem import FilesystemMiddleware
from langchain.agents.middleware import TodoListMiddleware
from langchain.agents.middleware.todo import WRITE_TODOS_TOOL_DESCRIPTION
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from labkit import LabModel, evals, prompts, scenario
from labkit.model import ANCHOR_MIN_STEPS, PROGRESS_PATH, PROGRESS_PROMPT, TODO_TOOL
from labkit.model import lab_summary as summarize
from tests.conftest import ai_call, called, fetched

DATA_TOOLS = scenario.tools()
FILE_TOOLS = [t for t in FilesystemMiddleware().tools if t.name in ("read_file", "write_file")]
TODO = TodoListMiddleware().tools
REPORT = next(t for t in scenario.tasks() if t.key == "report")


def todos_written(todos: list[dict], call_id: str, args: dict | None = None) -> list:
    """A write_todos call and the answer TodoListMiddleware's tool gives it."""
    return [ai_call(TODO_TOOL, {"todos": todos} if args is None else args, call_id),
            ToolMessage(f"Updated todo list to {todos}", tool_call_id=call_id, name=TODO_TOOL)]


def progress_written(content: str, call_id: str) -> list:
    return [ai_call("write_file", {"file_path": PROGRESS_PATH, "content": content}, call_id),
            ToolMessage(f"Updated file {PROGRESS_PATH}", tool_call_id=call_id, name="write_file")]


def progress_read(result: str, call_id: str) -> list:
    return [ai_call("read_file", {"file_path": PROGRESS_PATH}, call_id),
            ToolMessage(result, tool_call_id=call_id, name="read_file")]


def ask(messages: list, tools: list) -> AIMessage:
    return LabModel(window=400_000).bind_tools(tools).invoke(messages)


def first_todos(done: int = 0) -> list[dict]:
    """The report's todo list with its first ``done`` steps completed, as the lab model writes it."""
    items = [{"content": scenario.REQUEST, "status": "in_progress"}]
    for i, step in enumerate(REPORT.steps):
        status = "completed" if i < done else "in_progress" if i == done else "pending"
        items.append({"content": f"{step.tool} {next(iter(step.args.values()))}", "status": status})
    return items


# -- the todo list ------------------------------------------------------------------------------


def test_without_write_todos_bound_there_is_no_todo_list():
    reply = ask([HumanMessage(scenario.REQUEST)], DATA_TOOLS + FILE_TOOLS)
    assert called(reply) == [("fetch_market_data", {"ticker": "BRLM"})]


def test_a_task_starts_with_a_todo_list_led_by_the_users_request():
    reply = ask([HumanMessage(scenario.REQUEST)], DATA_TOOLS + FILE_TOOLS + TODO)
    (name, args), = called(reply)
    assert name == TODO_TOOL and args["todos"] == first_todos(0)
    assert len(args["todos"]) == 1 + len(REPORT.steps)


def test_todo_items_never_quote_the_evidence_a_result_shows():
    """Otherwise writing the list would make every step look done."""
    text = str(first_todos(0))
    assert not any(s.evidence in text for s in REPORT.steps)


def test_after_a_step_it_rewrites_the_list_with_that_step_completed():
    history = [HumanMessage(scenario.REQUEST), *todos_written(first_todos(0), "t1"), *fetched("BRLM", "c1")]
    (name, args), = called(ask(history, DATA_TOOLS + FILE_TOOLS + TODO))
    assert name == TODO_TOOL and args["todos"] == first_todos(1)


def test_with_the_list_up_to_date_it_does_the_next_step():
    history = [HumanMessage(scenario.REQUEST), *todos_written(first_todos(0), "t1"), *fetched("BRLM", "c1"),
               *todos_written(first_todos(1), "t2")]
    assert called(ask(history, DATA_TOOLS + FILE_TOOLS + TODO)) == [("search_news", {"ticker": "BRLM"})]


def test_the_todo_list_carries_the_goal_and_the_steps_done_when_the_request_is_gone():
    """No request, no summary intent, no export in view: only the latest todo list."""
    history = [HumanMessage("Previous conversation was too long to summarize."),
               *todos_written(first_todos(3), "t1")]
    assert called(ask(history, DATA_TOOLS + FILE_TOOLS + TODO)) == [("search_news", {"ticker": "CRVD"})]


def test_without_the_todo_list_the_same_cut_loses_the_goal():
    history = [HumanMessage("Previous conversation was too long to summarize."), *fetched("CRVD", "c1")]
    assert ask(history, DATA_TOOLS + FILE_TOOLS + TODO).text == prompts.GOAL_LOST


def test_cleared_arguments_are_read_back_from_the_tools_answer():
    history = [HumanMessage("Previous conversation was too long to summarize."),
               *todos_written(first_todos(2), "t1", args={})]
    assert called(ask(history, DATA_TOOLS + FILE_TOOLS + TODO)) == [("fetch_market_data", {"ticker": "CRVD"})]


def test_a_todo_list_the_tool_refused_is_not_trusted():
    history = [HumanMessage("Previous conversation was too long to summarize."), *fetched("CRVD", "c1"),
               ai_call(TODO_TOOL, {"todos": first_todos(3)}, "t1"),
               ToolMessage("Error: The `write_todos` tool should never be called multiple times in parallel.",
                           tool_call_id="t1", status="error")]
    assert ask(history, DATA_TOOLS + FILE_TOOLS + TODO).text == prompts.GOAL_LOST


@pytest.mark.parametrize("text", [scenario.FEEDBACK, scenario.research_request("BRLM")])
def test_short_tasks_get_no_anchor(text):
    """write_todos' own description: not for a request of fewer than 3 steps."""
    tools = DATA_TOOLS + FILE_TOOLS + TODO
    history = [SystemMessage(PROGRESS_PROMPT), HumanMessage(text)]
    assert not any(name in (TODO_TOOL, "read_file") for name, _ in called(ask(history, tools)))


def test_the_threshold_is_the_one_in_write_todos_own_description():
    assert f"less than {ANCHOR_MIN_STEPS} steps" in WRITE_TODOS_TOOL_DESCRIPTION


# -- the progress file --------------------------------------------------------------------------


def test_the_progress_file_is_off_unless_the_system_prompt_names_it():
    history = [SystemMessage("You are a helpful analyst."), HumanMessage(scenario.REQUEST)]
    assert called(ask(history, DATA_TOOLS + FILE_TOOLS)) == [("fetch_market_data", {"ticker": "BRLM"})]


def test_with_the_prompt_it_reads_the_file_first_then_writes_the_goal():
    history = [SystemMessage(PROGRESS_PROMPT), HumanMessage(scenario.REQUEST)]
    assert called(ask(history, DATA_TOOLS + FILE_TOOLS)) == [("read_file", {"file_path": PROGRESS_PATH})]
    history += progress_read(f"Error: File '{PROGRESS_PATH}' not found", "r1")
    (name, args), = called(ask(history, DATA_TOOLS + FILE_TOOLS))
    assert name == "write_file" and args["file_path"] == PROGRESS_PATH
    assert f"Goal: {scenario.REQUEST}" in args["content"] and "nothing yet" in args["content"]


def test_after_a_step_the_file_quotes_its_evidence():
    history = [SystemMessage(PROGRESS_PROMPT), HumanMessage(scenario.REQUEST),
               *progress_written(f"# Progress\n\nGoal: {scenario.REQUEST}\n\nDone:\n- nothing yet\n", "w1"),
               *fetched("BRLM", "c1")]
    (name, args), = called(ask(history, DATA_TOOLS + FILE_TOOLS))
    assert name == "write_file" and f"- {REPORT.steps[0].evidence}" in args["content"]
    history += progress_written(args["content"], "w2")
    assert called(ask(history, DATA_TOOLS + FILE_TOOLS)) == [("search_news", {"ticker": "BRLM"})]


def test_lost_it_reads_the_progress_file_before_giving_up():
    history = [SystemMessage(PROGRESS_PROMPT),
               HumanMessage("Previous conversation was too long to summarize.")]
    assert called(ask(history, DATA_TOOLS + FILE_TOOLS)) == [("read_file", {"file_path": PROGRESS_PATH})]
    done = "\n".join(f"- {s.evidence}" for s in REPORT.steps[:3])
    shown = f"@@ lines 1-8 of 8 @@\n# Progress\n\nGoal: {scenario.REQUEST}\n\nDone:\n{done}"
    history += progress_read(shown, "r1")
    assert called(ask(history, DATA_TOOLS + FILE_TOOLS)) == [("search_news", {"ticker": "CRVD"})]


def test_a_progress_file_that_is_not_there_ends_in_asking_not_a_loop():
    history = [SystemMessage(PROGRESS_PROMPT),
               HumanMessage("Previous conversation was too long to summarize."),
               *fetched("CRVD", "c1"), *progress_read(f"Error: File '{PROGRESS_PATH}' not found", "r1")]
    assert ask(history, DATA_TOOLS + FILE_TOOLS).text == prompts.GOAL_LOST


def test_without_the_prompt_a_lost_goal_is_lost():
    history = [HumanMessage("Previous conversation was too long to summarize."), *fetched("CRVD", "c1")]
    assert ask(history, DATA_TOOLS + FILE_TOOLS).text == prompts.GOAL_LOST


def test_the_lab_summary_keeps_what_the_progress_file_quotes():
    """The file's lines are evidence, so a summary of a history holding them marks the steps done."""
    text = f"Goal: {scenario.REQUEST}\n" + "\n".join(f"- {s.evidence}" for s in REPORT.steps[:2])
    summary = summarize(text)
    assert all(f"{s.evidence}: done" in summary for s in REPORT.steps[:2])


# -- the real middleware, and the runs ----------------------------------------------------------


def drifting(anchor: str, keep: int = 4, reminders: int = 2) -> scenario.Run:
    return evals.forced_compaction(anchor, keep=keep, reminders=reminders)


def test_forced_compaction_is_deepagents_middleware_with_its_constructors_trim():
    model = LabModel(window=1_000_000)
    evals.forced_compaction("none", reminders=0, model=model)
    summary = next(c for c in model.calls if c.kind == "agent" and
                   c.messages[1].text.startswith("You are in the middle of a conversation"))
    assert "Previous conversation was too long to summarize." in summary.messages[1].text
    assert summary.response.text == prompts.GOAL_LOST


def test_forced_compaction_refuses_an_unknown_anchor():
    with pytest.raises(ValueError, match="anchor must be one of"):
        evals.forced_compaction("notes")


@pytest.fixture(scope="module")
def runs() -> dict[str, scenario.Run]:
    return {anchor: drifting(anchor) for anchor in ("none", "todo", "progress")}


def test_create_deep_agent_binds_no_write_todos_by_default():
    model = LabModel(window=1_000_000)
    scenario.run(model, harness="deep", turns=(scenario.FEEDBACK,))
    assert "write_todos" not in model.calls[0].tools and "write_file" in model.calls[0].tools


def test_todo_list_middleware_never_puts_the_list_in_the_prompt(runs):
    """The list lives in state; the model sees only its own calls and the tool's answers."""
    run = runs["todo"]
    assert run.state["todos"][0]["content"] == scenario.REQUEST
    assert all(t["status"] == "completed" for t in run.state["todos"])
    answers = [m.text for m in run.messages if isinstance(m, ToolMessage) and m.name == TODO_TOOL]
    assert answers and all(a.startswith("Updated todo list to [") for a in answers)
    assert len({r.by_kind["system"] for r in run.records}) == 1, "the system prompt never grows"


def test_what_todo_list_middleware_adds_to_the_prompt_is_how_to_use_the_tool():
    model = LabModel(window=1_000_000)
    scenario.run(model, middleware=[TodoListMiddleware()], harness="deep", turns=(scenario.REQUEST,))
    last = model.calls[-1]
    system, items = last.messages[0].text, first_todos(len(REPORT.steps))[1:]
    assert last.messages[0].type == "system" and "## `write_todos`" in system
    assert not any(item["content"] in system for item in items)
    assert any(item["content"] in m.text for m in last.messages[1:] for item in items)


def test_unanchored_run_drifts_under_forced_compaction(runs):
    score = runs["none"].score
    assert score.goal_lost == 3 and score.steps_repeated > 0 and not score.goal_completed


@pytest.mark.parametrize("anchor", ["todo", "progress"])
def test_an_anchor_keeps_the_goal_and_the_work(runs, anchor):
    none, anchored = runs["none"].score, runs[anchor].score
    assert anchored.goal_lost < none.goal_lost and anchored.steps_repeated < none.steps_repeated
    assert anchored.goal_lost == 0 and anchored.steps_repeated == 0 and anchored.goal_completed


def test_the_progress_file_holds_the_goal_and_every_step(runs):
    text = runs["progress"].files[PROGRESS_PATH]
    assert f"Goal: {scenario.REQUEST}" in text and all(s.evidence in text for s in REPORT.steps)


def test_a_todo_list_cut_by_a_small_keep_no_longer_anchors():
    """keep=2 keeps a step and its result but not the todo write before it."""
    assert drifting("todo", keep=2, reminders=0).score.goal_lost >= 1
    assert drifting("progress", keep=2, reminders=0).score.goal_completed


# -- labkit.evals -------------------------------------------------------------------------------


class _Log:
    def __init__(self, replies):
        self.calls = [type("C", (), {"kind": "agent", "response": AIMessage(r)})() for r in replies]


def test_reminded_repeats_a_turn_only_after_a_lost_goal_and_at_most_times():
    log = _Log([])
    turns = evals.reminded(["a", "b"], log, times=2)
    assert next(turns) == "a"
    log.calls = _Log([prompts.GOAL_LOST]).calls
    assert next(turns) == "a" and next(turns) == "a"
    assert next(turns) == "b"  # two reminders used up
    log.calls = _Log(["done"]).calls
    assert list(turns) == []


@pytest.mark.parametrize("times", [-1, 1.5, True])
def test_reminded_refuses_a_bad_count(times):
    with pytest.raises(ValueError, match="times"):
        list(evals.reminded(["a"], _Log([]), times))


def test_reminded_needs_a_call_log():
    with pytest.raises(TypeError, match="calls"):
        list(evals.reminded(["a"], object()))


def test_anchor_calls_and_drift_count_the_anchors_own_messages(runs):
    row = evals.drift(runs["progress"])
    calls = evals.anchor_calls(runs["progress"].messages)
    assert row["anchor calls"] == len(calls) > 0
    assert {c["name"] for c in calls} == {"read_file", "write_file"}
    assert row["anchor tokens"] > 0 and evals.drift(runs["none"])["anchor tokens"] == 0
    assert row["tokens sent"] == sum(r.seen for r in runs["progress"].records)
    assert re.fullmatch(r"\d+", str(row["model calls"]))
