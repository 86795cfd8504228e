"""The lab model as deepagents' RubricMiddleware grader (notebook 14): it recognises the grader's
payload, checks each rubric line against the files the transcript shows written, and answers with
a ``GraderResponse`` the real middleware accepts — through the ``ToolStrategy`` tool call that
``create_agent`` picks for a model without native structured output.
"""

from __future__ import annotations

import warnings

import pytest
from deepagents.middleware.rubric import GraderResponse, RubricMiddleware
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from labkit import LabModel, scenario
from labkit.model._grader import GRADER_TOOL, criteria, grade, grader_reply, is_grader_prompt
from tests.conftest import ai_call

NAMES = [c["name"] for c in scenario.companies()]
REPORT = (f"- Prepare this week's competitor report: {scenario.REPORT_PATH} names all five: "
          f"{', '.join(NAMES)}.")
RISKS = f"- The risks note {scenario.RISKS_PATH} exists."


def _written(path: str, content: str, cid: str) -> list:
    return [ai_call("write_file", {"file_path": path, "content": content}, cid),
            ToolMessage(f"Updated file {path}", tool_call_id=cid, name="write_file")]


def _right() -> list:
    """The request, the report naming all five, the risks note, then the answer."""
    return [HumanMessage(scenario.REQUEST),
            *_written(scenario.REPORT_PATH, "\n".join(f"## {n}" for n in NAMES), "c1"),
            *_written(scenario.RISKS_PATH, "risks", "c2"),
            AIMessage("The report and the risks note are written.")]


def _wrong() -> list:
    """A false finish: one export fetched, no file written, "Done"."""
    return [HumanMessage("Previous conversation was too long to summarize."),
            ai_call("fetch_market_data", {"ticker": "BRLM"}, "c1"),
            ToolMessage("# Market data export — Brightloom (BRLM)", tool_call_id="c1"),
            AIMessage("Done: I pulled the market data for Brightloom. That completes the task.")]


def _graded(messages: list, rubric: str = f"{REPORT}\n{RISKS}") -> tuple[GraderResponse, LabModel]:
    """Grade through the real middleware: its payload, its nested agent, its validation."""
    model = LabModel()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # RubricMiddleware is in beta
        middleware = RubricMiddleware(model=model)
    return middleware._grade({"messages": messages, "rubric": rubric}, 0), model


def test_a_right_transcript_is_satisfied():
    graded, model = _graded(_right())
    assert graded.result == "satisfied"
    assert [c["passed"] for c in graded.criteria] == [True, True]
    assert [c.kind for c in model.calls] == ["grader"], "one call, identifiable as the grader's"


def test_a_false_finish_needs_revision_and_the_feedback_names_what_is_missing():
    graded, model = _graded(_wrong())
    assert graded.result == "needs_revision"
    gaps = [c.get("gap") for c in graded.criteria]
    assert gaps == [f"no write_file to {scenario.REPORT_PATH} in the transcript",
                    f"no write_file to {scenario.RISKS_PATH} in the transcript"]
    assert model.calls[0].response.tool_calls[0]["name"] == GRADER_TOOL, "answered through ToolStrategy"


def test_a_report_that_leaves_a_company_out_is_named():
    messages = [HumanMessage(scenario.REQUEST),
                *_written(scenario.REPORT_PATH, "## Brightloom\n## Emberline", "c1"), AIMessage("Done.")]
    graded, _ = _graded(messages, REPORT)
    assert graded.result == "needs_revision"
    assert graded.criteria[0]["gap"] == (f"{scenario.REPORT_PATH} as written does not name "
                                         "Corvid Systems, Driftwood Data, Fernhollow Labs")


def test_a_criterion_without_a_file_cannot_be_confirmed():
    graded, _ = _graded(_right(), f"{REPORT}\n- The tone is friendly.")
    assert graded.result == "needs_revision"
    assert graded.criteria[1]["passed"] is False
    assert "names no file" in graded.criteria[1]["gap"]


def test_the_payload_is_recognised_and_nothing_else_is():
    payload = RubricMiddleware(model=LabModel())._build_grader_payload(
        {"messages": _wrong(), "rubric": REPORT}, 0)
    assert is_grader_prompt(payload)
    assert not is_grader_prompt(scenario.REQUEST)
    assert not is_grader_prompt("<rubric-ab>\nx\n</rubric-ab> Return a GraderResponse")


def test_a_frozen_criterion_list_is_graded_name_for_name():
    payload = ("<rubric-ab>\nreport and risks\n</rubric-ab>\n\n<criteria-ab>\n1. "
               f"{scenario.RISKS_PATH} exists\n</criteria-ab>\n\n<transcript-ab>\n[user] hi\n"
               "</transcript-ab>\n\nReturn a GraderResponse.")
    assert criteria(payload) == [f"{scenario.RISKS_PATH} exists"]
    assert grade(payload)["result"] == "needs_revision"


@pytest.mark.parametrize("rubric", ["", "   "])
def test_an_empty_rubric_fails(rubric):
    payload = (f"<rubric-ab>\n{rubric}\n</rubric-ab>\n<transcript-ab>\n[user] hi\n</transcript-ab> "
               "Return a GraderResponse")
    assert grade(payload) == {"result": "failed", "explanation": "The rubric lists no criterion to check.",
                              "criteria": []}


def test_without_the_tool_bound_the_verdict_is_json_text():
    state = {"messages": _right(), "rubric": RISKS}
    payload = RubricMiddleware(model=LabModel())._build_grader_payload(state, 0)
    reply = grader_reply(payload, tools=[])
    assert not reply.tool_calls
    assert GraderResponse.model_validate_json(reply.text).result == "satisfied"
