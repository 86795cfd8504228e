"""Skills and memory with deepagents' own middleware (notebook 13): the lab model's behaviour
and the memory's life across threads.

Every run is ``create_deep_agent(skills=..., memory=...)`` through ``scenario.run``, so
SkillsMiddleware and MemoryMiddleware are deepagents' real ones; the lab model only reacts to
what they put in its system prompt. Worked example (``test_the_skill_costs_its_listing_until_read``):
the listing of one skill is a few dozen tokens, its SKILL.md several hundred, and the body reaches
the model only in the ``read_file`` result, from the second call on.
"""

from __future__ import annotations

import pytest
from deepagents.backends import CompositeBackend, StateBackend, StoreBackend
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from labkit import LabModel, count_tokens, scenario
from labkit.model import prompt_sections

SKILLS = {"skills": [scenario.SKILLS_SOURCE], "files": scenario.skill_files()}
MEMORY = {"memory": [scenario.MEMORY_PATH]}
QBR_HEADINGS = ["## Executive summary", "## Competitor scorecard", "## Risks and watch items",
                "## Asks for leadership"]
TLDR = "TL;DR:"
SOURCES = "Sources:"


def routed(store) -> CompositeBackend:
    """The memory folder in the store, everything else in the thread's state."""
    return CompositeBackend(default=StateBackend(), routes={"/memories/": StoreBackend(
        namespace=lambda rt: scenario.MEMORY_NAMESPACE, store=store)})


def deep(model, turns, **kwargs) -> scenario.Run:
    run = scenario.run(model, harness="deep", turns=turns, **kwargs)
    assert run.error is None, run.error
    return run


def read_calls(model: LabModel) -> list[dict]:
    return [tc for c in model.calls if c.response for tc in c.response.tool_calls
            if tc["name"] == "read_file"]


def headings(report: str) -> list[str]:
    return [line for line in report.splitlines() if line.startswith("## ")]


# -- the data -----------------------------------------------------------------------------------


def test_deepagents_loads_the_skill_from_its_front_matter():
    run = deep(LabModel(), (scenario.REQUEST,), **SKILLS)
    (skill,) = run.state["skills_metadata"]
    assert skill["name"] == "qbr-report" and skill["path"] == scenario.QBR_SKILL_PATH
    assert "QBR" in skill["description"] and skill["allowed_tools"] == ["read_file", "write_file"]
    assert run.state["skills_load_errors"] == []


def test_the_skill_body_lists_the_headings_the_report_must_have():
    body = scenario.skill_text()
    assert body.startswith("---\nname: qbr-report\n")
    assert all(f"- `{h}`" in body for h in QBR_HEADINGS)
    assert "FICTIONAL" in body and "FICTIONAL" in scenario.memory_text()


def test_no_task_marker_hides_in_the_skill_or_the_memory():
    """The lab model finds its task by markers; these texts must not start one on their own."""
    for text in (scenario.skill_text(), scenario.memory_text()):
        assert not [t.key for t in scenario.tasks() if t.marker in text]


# -- the skill: progressive disclosure ------------------------------------------------------------


@pytest.fixture(scope="module")
def qbr():
    model = LabModel()
    return model, deep(model, (scenario.QBR_REQUEST,), **SKILLS)


def test_a_matching_skill_is_read_first_and_the_report_follows_it(qbr):
    model, run = qbr
    first = model.calls[0].response.tool_calls
    assert [(tc["name"], tc["args"]["file_path"]) for tc in first] == [("read_file", scenario.QBR_SKILL_PATH)]
    assert len(read_calls(model)) == 1, "read once: the result stays in view"
    report = run.files[scenario.REPORT_PATH]
    assert headings(report) == QBR_HEADINGS, "the skill's headings, in its order"
    assert report.startswith("# QBR competitor review — ")
    assert all(c["name"] in report for c in scenario.companies())


def test_the_skill_costs_its_listing_until_read(qbr):
    model, _ = qbr
    body_line = "## Required sections, in this order"
    first = "\n".join(m.text for m in model.calls[0].messages)
    listing = prompt_sections(model.calls[0].messages)["skills"]
    assert "- **qbr-report**: The QBR" in listing and body_line not in first
    tool_results = [m for m in model.calls[1].messages if isinstance(m, ToolMessage)]
    assert (body_line in tool_results[0].text
            and body_line not in prompt_sections(model.calls[1].messages)["skills"])
    entry = listing[listing.index("- **qbr-report**"):listing.index("for full instructions")]
    assert count_tokens(entry) < 80 < 300 < count_tokens(tool_results[0].text)
    assert all(prompt_sections(c.messages)["skills"] == listing for c in model.calls), \
        "the system prompt's skills section never changes; the body arrives as a message"


def test_an_unrelated_request_never_reads_the_skill():
    model = LabModel()
    run = deep(model, (scenario.REQUEST,), **SKILLS)
    assert read_calls(model) == []
    assert not any("## Required sections" in m.text for c in model.calls for m in c.messages)
    assert headings(run.files[scenario.REPORT_PATH])[0] == "## Brightloom (BRLM)"


def test_without_a_skill_the_qbr_request_gets_the_plain_format():
    model = LabModel()
    run = deep(model, (scenario.QBR_REQUEST,))
    assert read_calls(model) == [] and "## Executive summary" not in run.files[scenario.REPORT_PATH]


def test_the_format_lasts_only_while_the_read_is_in_view(qbr):
    """Drop the read_file pair from the history: the next call reads the skill again."""
    model, _ = qbr
    call = model.calls[3]  # a few research steps in
    system, *rest = call.messages
    kept = [m for m in rest if not (isinstance(m, AIMessage) and any(
        tc["name"] == "read_file" for tc in m.tool_calls)) and not (
        isinstance(m, ToolMessage) and m.name == "read_file")]
    fresh = LabModel().bind_tools([{"type": "function", "function": {"name": n, "parameters": {}}}
                                   for n in call.tools])
    again = fresh.invoke([system, *kept])
    assert [tc["name"] for tc in again.tool_calls] == ["read_file"]
    assert [tc["name"] for tc in fresh.invoke(call.messages).tool_calls] != ["read_file"]


# -- memory: what the model sees, and what it records -----------------------------------------------


@pytest.fixture(scope="module")
def two_threads():
    """Thread 1 writes the report and records a new preference; thread 2 — a new thread id, a
    different LabModel, the same store — writes the report again."""
    store = scenario.memory_store()
    first = LabModel()
    run1 = deep(first, (scenario.REQUEST, scenario.PREFERENCE_TURN), backend=routed(store),
                store=store, thread_id="week-48", **MEMORY)
    second = LabModel(model="another-lab-model", window=200_000)
    run2 = deep(second, (scenario.REQUEST,), backend=routed(store), store=store,
                thread_id="week-49", **MEMORY)
    return store, (first, run1), (second, run2)


def memory_of(call) -> str:
    return prompt_sections(call.messages)["memory"]


def test_a_preference_in_memory_is_applied(two_threads):
    _, (model, run), _ = two_threads
    assert "Start every report with a one-line TL;DR." in memory_of(model.calls[0])
    lines = run.files[scenario.REPORT_PATH].splitlines()
    assert lines[1].startswith(TLDR) and SOURCES not in "\n".join(lines)


def test_memory_comments_are_stripped_before_the_model_sees_them(two_threads):
    _, (model, _), _ = two_threads
    assert "<!--" in scenario.memory_text() and "FICTIONAL" not in memory_of(model.calls[0])


def test_a_stated_preference_is_recorded_with_edit_file(two_threads):
    store, (model, run), _ = two_threads
    edits = [tc for c in model.calls if c.response for tc in c.response.tool_calls
             if tc["name"] == "edit_file"]
    assert len(edits) == 1 and edits[0]["args"]["file_path"] == scenario.MEMORY_PATH
    saved = store.get(scenario.MEMORY_NAMESPACE, "/AGENTS.md").value["content"]
    assert saved.endswith("- Always end reports with a 'Sources' line.\n")
    assert scenario.MEMORY_PATH in run.messages[-1].text
    assert scenario.MEMORY_PATH not in run.files, "the memory lives in the store, not the thread"


def test_the_edit_is_not_reinjected_in_the_same_thread(two_threads):
    store, (model, run), _ = two_threads
    edited = next(i for i, c in enumerate(model.calls) if c.response and any(
        tc["name"] == "edit_file" for tc in c.response.tool_calls))
    assert edited < len(model.calls) - 1, "a call came after the edit"
    assert all(memory_of(c) == memory_of(model.calls[0]) for c in model.calls[edited:])
    assert "Sources" not in run.state["memory_contents"][scenario.MEMORY_PATH], \
        "memory_contents is loaded once per thread"


def test_the_next_thread_and_another_model_see_the_edit(two_threads):
    _, (first, _), (second, run2) = two_threads
    assert second.model_name != first.model_name and second.window != first.window
    assert "'Sources' line" in memory_of(second.calls[0])
    lines = run2.files[scenario.REPORT_PATH].rstrip("\n").splitlines()
    assert lines[1].startswith(TLDR) and lines[-1].startswith(SOURCES)
    assert not [tc for c in second.calls if c.response for tc in c.response.tool_calls
                if tc["name"] == "edit_file"], "nothing new to record"


def test_memory_in_thread_state_dies_with_the_thread():
    first = deep(LabModel(), (scenario.PREFERENCE_TURN,), files=scenario.memory_files(), **MEMORY)
    assert "'Sources' line" in first.files[scenario.MEMORY_PATH]
    model = LabModel()
    deep(model, (scenario.REQUEST,), files=scenario.memory_files(), **MEMORY)
    assert "TL;DR" in memory_of(model.calls[0]) and "'Sources' line" not in memory_of(model.calls[0])


def test_a_preference_already_in_memory_is_not_written_twice():
    store = scenario.memory_store()
    model = LabModel()
    run = deep(model, ("From now on, start every report with a one-line TL;DR.",),
               backend=routed(store), store=store, **MEMORY)
    assert not read_calls(model) and len(model.calls) == 1
    assert "already in my memory" in run.messages[-1].text
    assert store.get(scenario.MEMORY_NAMESPACE, "/AGENTS.md").value["content"] == scenario.memory_text()


def test_without_memory_a_preference_turn_changes_nothing():
    model = LabModel()
    deep(model, (scenario.REQUEST, scenario.PREFERENCE_TURN))
    assert not [tc for c in model.calls if c.response for tc in c.response.tool_calls
                if tc["name"] in ("edit_file", "write_file") and "memor" in str(tc["args"])]


def test_preferences_are_read_from_memory_only():
    """Said in the conversation, a preference is not applied: the lab model reads it from memory."""
    model = LabModel()
    run = deep(model, (scenario.REQUEST + " Start every report with a one-line TL;DR.",))
    assert TLDR not in run.files[scenario.REPORT_PATH]


# -- the helpers ----------------------------------------------------------------------------------


def test_prompt_sections_splits_where_the_middleware_appended(qbr):
    model, _ = qbr
    system = model.calls[0].messages[0]
    sections = prompt_sections([SystemMessage("You are careful."), *model.calls[0].messages[1:]])
    assert sections == {"prompt": "You are careful.", "skills": "", "memory": "",
                        "memory guidelines": ""}
    parts = prompt_sections(model.calls[0].messages)
    assert parts["skills"].startswith("## Skills System") and parts["memory"] == ""
    assert sum(len(v) for v in parts.values()) <= len(system.text)
    assert prompt_sections([HumanMessage("hi")]) == dict.fromkeys(parts, "")


def test_run_files_are_checked():
    with pytest.raises(ValueError, match="absolute path"):
        scenario.run(LabModel(), files={"skills/x.md": "text"})
    with pytest.raises(ValueError, match="must be text or deepagents file data"):
        scenario.run(LabModel(), files={"/x.md": 3})


def test_run_seeds_text_files_on_the_first_turn_only():
    """Turn 1 edits the seeded memory file; turn 2 must not seed it over again."""
    run = deep(LabModel(), (scenario.PREFERENCE_TURN, scenario.REQUEST),
               files={scenario.MEMORY_PATH: scenario.memory_text(), "/notes/seed.md": "seeded"},
               **MEMORY)
    assert run.files["/notes/seed.md"] == "seeded"
    assert "'Sources' line" in run.files[scenario.MEMORY_PATH]


def test_memory_store_checks_its_key():
    with pytest.raises(ValueError, match="absolute path"):
        scenario.memory_store(key="AGENTS.md")
