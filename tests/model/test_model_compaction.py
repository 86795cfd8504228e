"""LabModel's ``compact_when`` policy (notebook 11): when it calls ``compact_conversation``.

The unit tests hand-build a history and look at the next reply; the end-to-end tests run the
scenario with labkit's manual tool and with deepagents', which the policy must drive alike
(both name the tool ``compact_conversation``; deepagents' gate reads the usage LabModel reports).
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from pydantic import ValidationError

from labkit import LabModel, prompts, scenario
from labkit.model import COMPACT_TOOL
from tests.conftest import ai_call, called, news

DATA_TOOLS = scenario.tools()


@tool
def compact_conversation() -> str:
    """Compact the conversation now."""
    return "Compacted."


@tool
def write_file(file_path: str, content: str) -> str:
    """Write a file."""
    return f"Updated file {file_path}"


WITH_COMPACT = [*DATA_TOOLS, write_file, compact_conversation]


def _result(name: str, text: str, call_id: str) -> ToolMessage:
    return ToolMessage(text, tool_call_id=call_id, name=name)


def compacted(call_id: str, text: str = "Compacted: 3 older messages were folded.") -> list:
    return [ai_call(COMPACT_TOOL, {}, call_id), _result(COMPACT_TOOL, text, call_id)]


FINISHED = [HumanMessage(scenario.REQUEST), *news("BRLM", "c1"),
            AIMessage("The weekly competitor report is written to /reports/weekly.md.")]
NEXT_TURN = [*FINISHED, HumanMessage(scenario.FEEDBACK)]
MID_TASK = [HumanMessage(scenario.REQUEST), *news("BRLM", "c1")]


def ask(messages: list, policy: str, tools=WITH_COMPACT, **bind) -> AIMessage:
    return LabModel(window=200_000, compact_when=policy).bind_tools(list(tools), **bind).invoke(messages)


COMPACT = [(COMPACT_TOOL, {})]
FETCH_BRLM = [("fetch_market_data", {"ticker": "BRLM"})]


# -- the three policies ------------------------------------------------------------------------


@pytest.mark.parametrize("history", [NEXT_TURN, MID_TASK], ids=["boundary", "mid-task"])
def test_never_is_the_default_and_ignores_the_tool(history):
    assert LabModel().compact_when == "never"
    assert COMPACT_TOOL not in [n for n, _ in called(ask(history, "never"))]


def test_boundary_compacts_first_when_a_new_request_follows_a_finished_answer():
    assert called(ask(NEXT_TURN, "boundary")) == COMPACT


def test_boundary_compacts_once_per_turn_then_does_the_task():
    reply = ask([*NEXT_TURN, *compacted("c9")], "boundary")
    assert [(n, a["file_path"]) for n, a in called(reply)] == [("write_file", scenario.RISKS_PATH)]


@pytest.mark.parametrize("history", [
    [HumanMessage(scenario.REQUEST)],  # the first request: no finished work before it
    MID_TASK,  # a tool result, not a new request
    [*FINISHED, HumanMessage("Thanks!")],  # a new message that names no scenario task
], ids=["first-request", "mid-task", "no-task"])
def test_boundary_does_not_compact_elsewhere(history):
    assert COMPACT_TOOL not in [n for n, _ in called(ask(history, "boundary"))]


def test_every_step_compacts_after_each_tool_result():
    assert called(ask(MID_TASK, "every_step")) == COMPACT


def test_every_step_never_compacts_right_after_its_own_answer():
    for answer in ("Compacted: 3 older messages were folded.",
                   prompts.COMPACT_REFUSED.format(why="1,000 tokens, below the gate of 50,000")):
        assert called(ask([*MID_TASK, *compacted("c2", answer)], "every_step")) == FETCH_BRLM


def test_every_step_knows_its_own_answer_by_the_call_even_without_a_tool_name():
    unnamed = ToolMessage("Compacted.", tool_call_id="c2")  # name is optional on a ToolMessage
    assert called(ask([*MID_TASK, ai_call(COMPACT_TOOL, {}, "c2"), unnamed], "every_step")) == FETCH_BRLM


def test_every_step_does_not_compact_at_a_new_request():
    assert COMPACT_TOOL not in [n for n, _ in called(ask(NEXT_TURN, "every_step"))]


# -- when the policy stands aside ----------------------------------------------------------------


@pytest.mark.parametrize("policy, history", [("boundary", NEXT_TURN), ("every_step", MID_TASK)])
def test_without_the_tool_bound_it_just_works(policy, history):
    assert COMPACT_TOOL not in [n for n, _ in called(ask(history, policy, tools=DATA_TOOLS))]
    assert called(ask(history, policy, tools=DATA_TOOLS)) == called(ask(history, "never", tools=DATA_TOOLS))


def test_tool_choice_naming_another_tool_overrides_the_policy():
    assert called(ask(MID_TASK, "every_step", tool_choice="fetch_market_data")) == FETCH_BRLM


def test_a_lost_goal_is_not_compacted_away():
    lost = [HumanMessage("Carry on."), *news("BRLM", "c1")]
    reply = ask(lost, "every_step")
    assert reply.content == prompts.GOAL_LOST and not reply.tool_calls


def test_summary_prompts_are_answered_as_summaries_whatever_the_policy():
    from labkit.summarize import summary_prompt

    reply = LabModel(compact_when="every_step").invoke([HumanMessage(summary_prompt(MID_TASK))])
    assert "## SESSION INTENT" in reply.content and not reply.tool_calls


@pytest.mark.parametrize("bad", ["always", "Boundary", True, None])
def test_an_unknown_policy_is_refused_by_name(bad):
    with pytest.raises(ValidationError, match="compact_when"):
        LabModel(compact_when=bad)


# -- end to end --------------------------------------------------------------------------------


def _labkit_run(window: int, policy: str):
    from labkit.summarize import SummarizeMiddleware

    model = LabModel(window=window, compact_when=policy)
    run = scenario.run(model, middleware=[SummarizeMiddleware(model, manual_tool=True)])
    answers = [m.content for m in run.messages if isinstance(m, ToolMessage) and m.name == COMPACT_TOOL]
    return run, model, answers


def test_end_to_end_boundary_compacts_at_the_start_of_turns_two_and_three():
    """200k: the first turn fits (no automatic compaction); at turn 2 the view holds ~154k
    tokens, above the gate (half of 0.85 x 200k = 85,000), so it compacts; at turn 3 the view is
    small again and the gate refuses."""
    from labkit.summarize import events_of

    run, model, answers = _labkit_run(200_000, "boundary")
    assert len(answers) == 2 and answers[0].startswith("Compacted") and answers[1].startswith("Not compacted")
    assert [e.reason for e in events_of(run.state)] == ["manual"]
    humans = [i for i, m in enumerate(run.messages) if isinstance(m, HumanMessage)]
    compact_calls = [i for i, m in enumerate(run.messages)
                     if isinstance(m, AIMessage) and [tc["name"] for tc in m.tool_calls] == [COMPACT_TOOL]]
    assert compact_calls == [humans[1] + 1, humans[2] + 1], "right after the 2nd and 3rd requests"
    assert run.score.goal_completed and run.score.needle_correct and run.score.steps_repeated == 0


def test_end_to_end_every_step_compacts_mid_task_and_the_report_loses_headlines():
    """Mid-task compaction folds news digests the report is later drafted from."""
    run, model, answers = _labkit_run(200_000, "every_step")
    n_results = sum(isinstance(m, ToolMessage) and m.name != COMPACT_TOOL for m in run.messages)
    assert len(answers) == n_results, "one attempt after every other tool result"
    assert (any(a.startswith("Compacted") for a in answers)
            and any(a.startswith("Not compacted") for a in answers))
    report = run.files[scenario.REPORT_PATH]
    assert "see the research notes" in report, "some headlines were compacted away before drafting"
    assert run.score.goal_completed and run.score.needle_correct and run.score.steps_repeated == 0


def test_end_to_end_deepagents_tool_is_driven_by_the_same_policy():
    """deepagents' gate reads the usage LabModel reports (provider 'labkit' matches)."""
    from deepagents.backends import StateBackend
    from deepagents.middleware.summarization import create_summarization_tool_middleware

    model = LabModel(window=128_000, compact_when="boundary")
    run = scenario.run(model, middleware=[create_summarization_tool_middleware(model, StateBackend())],
                       harness="deep")
    answers = [m.content for m in run.messages if isinstance(m, ToolMessage) and m.name == COMPACT_TOOL]
    assert len(answers) == 2 and answers[0].startswith("Conversation compacted")
    assert answers[1].startswith("Nothing to compact yet")
    assert run.state.get("_summarization_event") is not None
    assert run.score.goal_completed and run.score.needle_correct
