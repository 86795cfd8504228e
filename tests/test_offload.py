"""labkit.offload: eviction of tool results and human messages, truncation of old arguments.

Zero loss is checked the way an agent would recover the content: deepagents' own read_file tool,
paged with offset/limit in a real agent, and its grep tool.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest
from deepagents.backends import FilesystemBackend
from deepagents.backends.protocol import FileDownloadResponse, WriteResult
from deepagents.backends.utils import create_file_data
from deepagents.middleware.filesystem import FilesystemMiddleware
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.types import Command

from labkit import LabModel, caching, count_tokens, offload, scenario
from labkit.offload import (
    LINE_LIMIT,
    OFFLOADED,
    OffloadMiddleware,
    preview,
    result_path,
    safe_name,
    stored_text,
    truncate_args,
    unwrap,
    wrap_long_lines,
)
from tests.conftest import Scripted

CHINESE = "".join(scenario.news_text(c["ticker"], "zh") for c in scenario.companies()) * 12
ENGLISH = scenario.export_text("BRLM")
ONE_LINE = "|".join(f"{i:06d}" for i in range(45_000))  # 315,000 characters, no newline


def _page_back(files: dict, path: str, page: int = 12) -> str:
    """Read ``path`` back with deepagents' read_file tool in a real agent, ``page`` lines at a
    time, and reassemble the pages."""
    lines = files[path]["content"].count("\n") + 1
    calls = [AIMessage("", tool_calls=[{"name": "read_file", "id": f"r{o}",
                                        "args": {"file_path": path, "offset": o, "limit": page}}])
             for o in range(0, lines, page)]
    agent = create_agent(Scripted(messages=iter([*calls, AIMessage("done")])), tools=[],
                         middleware=[FilesystemMiddleware()])
    out = agent.invoke({"messages": [HumanMessage("read it back")], "files": files})
    bodies = [m.content.split("\n", 1)[1] if "\n" in m.content else "" for m in out["messages"]
              if isinstance(m, ToolMessage)]
    assert all(m.content.startswith("@@ lines") for m in out["messages"] if isinstance(m, ToolMessage))
    return "\n".join(bodies)


def _grep(files: dict, path: str, pattern: str) -> str:
    call = AIMessage("", tool_calls=[{"name": "grep", "id": "g1", "args": {
        "pattern": pattern, "path": path, "output_mode": "content"}}])
    agent = create_agent(Scripted(messages=iter([call, AIMessage("done")])), tools=[],
                         middleware=[FilesystemMiddleware()])
    out = agent.invoke({"messages": [HumanMessage("find it")], "files": files})
    return next(m.content for m in out["messages"] if isinstance(m, ToolMessage))


def _request(name: str, call_id: str = "call_1"):
    return SimpleNamespace(tool_call={"name": name, "id": call_id, "args": {}})


def _disk(tmp_path: Path, **kw) -> OffloadMiddleware:
    return OffloadMiddleware(backend=FilesystemBackend(root_dir=tmp_path, virtual_mode=True), **kw)


# -- large tool results --------------------------------------------------------------------------


def test_result_over_the_limit_is_evicted_with_path_and_numbered_preview(tmp_path):
    off = _disk(tmp_path, tool_limit=20_000)
    result = off.wrap_tool_call(_request("fetch_market_data", "call_7"),
                                lambda r: ToolMessage(ENGLISH, tool_call_id="call_7",
                                                      name="fetch_market_data"))
    assert result.additional_kwargs[OFFLOADED] == "/large_tool_results/call_7"
    assert unwrap((tmp_path / "large_tool_results" / "call_7").read_text(encoding="utf-8")) == ENGLISH
    lines = ENGLISH.split("\n")
    assert (f"{count_tokens(ENGLISH):,} tokens" in result.content
            and "/large_tool_results/call_7" in result.content)
    assert f"  1  {lines[0]}" in result.content and f"{len(lines) - 1}  {lines[-2]}" in result.content
    assert f"{len(lines) + 1}  [end of offloaded content]" in result.content
    assert count_tokens(result.content) < 1_000
    assert (result.tool_call_id, result.name) == ("call_7", "fetch_market_data")


def test_limit_is_in_bpe_tokens_not_characters(tmp_path):
    """BRLM's export: 51,183 characters (deepagents' rule needs > 80,000) but 30,689 tokens."""
    assert len(ENGLISH) < 80_000 < 4 * count_tokens(ENGLISH)
    off = _disk(tmp_path, tool_limit=count_tokens(ENGLISH))
    kept = off.wrap_tool_call(_request("x"), lambda r: ToolMessage(ENGLISH, tool_call_id="call_1"))
    assert kept.content == ENGLISH and not off.evicted
    off = _disk(tmp_path, tool_limit=count_tokens(ENGLISH) - 1)
    evicted = off.wrap_tool_call(_request("x"), lambda r: ToolMessage(ENGLISH, tool_call_id="call_1"))
    assert OFFLOADED in evicted.additional_kwargs


@pytest.mark.parametrize("tool", ["read_file", "grep", "ls", "glob", "write_file", "edit_file", "delete"])
def test_file_tools_are_exempt(tmp_path, tool):
    off = _disk(tmp_path, tool_limit=10)
    out = off.wrap_tool_call(_request(tool), lambda r: ToolMessage(ENGLISH, tool_call_id="call_1"))
    assert out.content == ENGLISH and not off.evicted


def test_read_file_cannot_be_made_evictable():
    with pytest.raises(ValueError, match="read_file"):
        OffloadMiddleware(exempt_tools=("grep",))


def test_an_evicted_result_is_never_evicted_again(tmp_path):
    off = _disk(tmp_path, tool_limit=50)
    first = off.wrap_tool_call(_request("x"), lambda r: ToolMessage(ENGLISH, tool_call_id="call_1"))
    again = off.wrap_tool_call(_request("x"), lambda r: first)
    assert again is first and off.evicted == ["/large_tool_results/call_1"]


def test_non_text_blocks_stay_and_only_the_text_is_evicted(tmp_path):
    image = {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"}
    off = _disk(tmp_path, tool_limit=100)
    out = off.wrap_tool_call(_request("x"), lambda r: ToolMessage(
        [{"type": "text", "text": ENGLISH}, image], tool_call_id="call_1"))
    assert out.content[1] == image and "/large_tool_results/call_1" in out.content[0]["text"]


def test_results_inside_a_command_are_evicted(tmp_path):
    off = _disk(tmp_path, tool_limit=100)
    cmd = Command(update={"messages": [ToolMessage(ENGLISH, tool_call_id="call_1")], "other": 1})
    out = off.wrap_tool_call(_request("x"), lambda r: cmd)
    assert out.update["other"] == 1 and OFFLOADED in out.update["messages"][0].additional_kwargs


# -- hostile ids and failed writes ---------------------------------------------------------------

HOSTILE = ["a/b", "../../etc/passwd", "..", "nul\x00byte", "ünïcødé-ид-工具", "x" * 1000, "", "a b",
           "call.1", "call_1.h" + "0" * 24, "/", "\\\\server\\share", "call_1\n"]


@pytest.mark.parametrize("identifier", HOSTILE)
def test_hostile_ids_become_one_plain_file_name(identifier):
    name = safe_name(identifier)
    assert 1 <= len(name) <= 80 and "/" not in name and "\x00" not in name and ".." not in name
    assert name.isascii() and name.strip() == name


def test_hostile_ids_never_collide():
    names = [safe_name(i) for i in HOSTILE + ["a_b", "call_1", "nul_byte"]]
    assert len(set(names)) == len(names)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=80), min_size=2, max_size=8, unique=True))
def test_distinct_ids_map_to_distinct_names(ids):
    assert len({safe_name(i) for i in ids}) == len(ids)


def test_on_disk_backend_never_writes_outside_its_root(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    off = OffloadMiddleware(backend=FilesystemBackend(root_dir=root, virtual_mode=True), tool_limit=10)
    for i, identifier in enumerate(HOSTILE):
        off.wrap_tool_call(_request("x", identifier),
                           lambda r, i=i, identifier=identifier: ToolMessage(f"{i} " + ENGLISH[:2000],
                                                                             tool_call_id=identifier))
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and root not in p.parents]
    assert outside == []
    written = sorted(p for p in root.rglob("*") if p.is_file())
    assert len(written) == len(HOSTILE) and len(off.evicted) == len(HOSTILE)


class _Failing(FilesystemBackend):
    def __init__(self, root, mode):
        super().__init__(root_dir=root, virtual_mode=True)
        self.mode = mode

    def write(self, file_path, content):
        if self.mode == "raise":
            raise OSError("disk full")
        return WriteResult(error="permission denied")


@pytest.mark.parametrize("mode", ["raise", "error"])
def test_a_failed_write_keeps_the_original_and_warns(tmp_path, mode):
    off = OffloadMiddleware(backend=_Failing(tmp_path, mode), tool_limit=10)
    original = ToolMessage(ENGLISH, tool_call_id="call_1")
    with pytest.warns(UserWarning, match="nothing is lost"):
        out = off.wrap_tool_call(_request("x"), lambda r: original)
    assert out is original and off.evicted == []


class _Blind(FilesystemBackend):
    """A backend that cannot tell whether a file exists: looking raises, or answers an error."""

    def __init__(self, root, mode):
        super().__init__(root_dir=root, virtual_mode=True)
        self.mode, self.writes = mode, 0

    def download_files(self, paths):
        if self.mode == "raise":
            raise ConnectionError("store unreachable")
        return [FileDownloadResponse(path=p, error="permission_denied") for p in paths]

    def write(self, file_path, content):
        self.writes += 1
        return super().write(file_path, content)


@pytest.mark.parametrize("mode", ["raise", "error"])
def test_offload_never_writes_blind(tmp_path, mode):
    """An earlier result lives at call_1, and its stub still points there. When the backend
    cannot say whether call_1 exists, offload writes nothing and keeps the result in context."""
    (tmp_path / "large_tool_results").mkdir()
    (tmp_path / "large_tool_results" / "call_1").write_text("an earlier result")
    backend = _Blind(tmp_path, mode)
    off = OffloadMiddleware(backend=backend, tool_limit=10)
    original = ToolMessage(ENGLISH, tool_call_id="call_1")
    with pytest.warns(UserWarning, match="could not check whether /large_tool_results/call_1 exists"):
        out = off.wrap_tool_call(_request("x"), lambda r: original)
    assert out is original and off.evicted == [] and backend.writes == 0
    assert (tmp_path / "large_tool_results" / "call_1").read_text() == "an earlier result"


def test_an_existing_file_with_other_content_is_never_overwritten(tmp_path):
    (tmp_path / "large_tool_results").mkdir()
    (tmp_path / "large_tool_results" / "call_1").write_text("someone else's result")
    off = _disk(tmp_path, tool_limit=10)
    out = off.wrap_tool_call(_request("x"), lambda r: ToolMessage(ENGLISH, tool_call_id="call_1"))
    assert (tmp_path / "large_tool_results" / "call_1").read_text() == "someone else's result"
    assert out.additional_kwargs[OFFLOADED] == "/large_tool_results/call_1.2"
    assert unwrap((tmp_path / "large_tool_results" / "call_1.2").read_text(encoding="utf-8")) == ENGLISH


# -- zero loss: read back with deepagents' own tools -----------------------------------------------


@pytest.mark.parametrize("text", [ENGLISH, CHINESE, ONE_LINE, ENGLISH.rstrip("\n")],
                         ids=["english", "chinese", "one-huge-line", "no-final-newline"])
def test_paging_back_with_read_file_reassembles_byte_for_byte(text):
    stored = stored_text(text)
    assert max(len(line) for line in stored.split("\n")) <= LINE_LIMIT + 2
    files = {"/large_tool_results/call_1": create_file_data(stored)}
    assert unwrap(_page_back(files, "/large_tool_results/call_1")) == text


def test_grep_finds_the_needle_in_an_evicted_export():
    files = {"/large_tool_results/call_1": create_file_data(stored_text(ENGLISH))}
    found = _grep(files, "/large_tool_results/call_1", scenario.needle().kpi)
    assert scenario.needle().find(found) == scenario.needle().answer


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400), st.integers(1, 50))
def test_wrap_then_unwrap_is_exact(text, limit):
    wrapped = wrap_long_lines(text, limit)
    assert unwrap(wrapped) == text and unwrap(stored_text(text)) == text
    assert all(len(line) <= limit + 2 for line in wrapped.split("\n"))


def test_preview_keeps_original_line_numbers_and_clips_long_lines():
    text = "\n".join(f"row {i}" for i in range(1, 101)) + "\n" + "y" * 3000
    shown = preview(text, head=2, tail=2, line_chars=100)
    assert shown.splitlines()[0].endswith("  row 1") and "[97 lines not shown]" in shown
    assert "100  row 100" in shown and "101  " + "y" * 100 + " …[2,900 more characters]" in shown
    assert preview("a\nb") == "1  a\n2  b"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(["a", "\n", " ", "↩", "中"]), max_size=12_000), st.integers(0, 6),
       st.integers(0, 6))
def test_the_evicted_file_and_stub_parts_are_the_plain_functions(text, head, tail):
    """``_offload_text.evicted_text`` (one split of the text) gives what the public functions give."""
    from labkit._offload_text import evicted_text  # the private fast path is what this test is about

    stored = stored_text(text)
    assert evicted_text(text, head, tail) == (stored, wrap_long_lines(text) != text, stored.count("\n") + 1,
                                              preview(stored, head, tail)), "the same file, note and stub"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(["a", "\n", "中"]), max_size=300),
       st.integers(0, 8), st.integers(0, 8))
def test_the_preview_cut_by_position_is_the_preview_of_the_split_text(text, head, tail):
    from labkit._offload_text import _numbered  # the reference: every line split off, then numbered

    lines = text.split("\n")
    assert preview(text, head, tail, 4) == _numbered(lines, len(lines), head, tail, 4)


@pytest.mark.parametrize("limit", [1, 2, 7, 10])
def test_no_wrapping_is_ruled_out_only_when_no_line_is_too_long(limit):
    """``_may_wrap`` says False only for a text ``wrap_long_lines`` leaves alone: a line of every
    length around the limit, at every offset from the blocks it checks."""
    from labkit._offload_text import _may_wrap  # the private fast path is what this test is about

    for before in range(3 * limit + 3):
        for length in range(max(0, limit - 2), limit + 3):
            for after in ("", "\n", "\nz"):
                text = "a" * before + "\n" + "x" * length + after
                if not _may_wrap(text, limit):
                    assert wrap_long_lines(text, limit) == text, repr(text)
                too_long = max(map(len, text.split("\n"))) > limit
                assert _may_wrap(text, limit) or not too_long, repr(text)


def test_an_evicted_long_line_is_wrapped_alike_by_both_paths():
    from labkit._offload_text import evicted_text  # the private fast path is what this test is about

    text = "head\n" + "x" * 12_001 + " ↩\nend ↩"
    stored, wrapped, lines, shown = evicted_text(text, 2, 2)
    assert wrapped and stored == stored_text(text) and lines == stored.count("\n") + 1
    assert shown == preview(stored_text(text), 2, 2), "the preview numbers the stored file's lines"


# -- on the running example, in a real agent ------------------------------------------------------


def test_offloading_alone_keeps_the_naive_run_inside_128k_and_the_needle_is_read_back(overflow_128k):
    naive = overflow_128k
    assert isinstance(naive.error, ContextOverflowError)
    off = OffloadMiddleware()
    run = scenario.run(LabModel(window=128_000), middleware=[off])
    s = run.score
    assert run.error is None and s.goal_completed and s.needle_correct and s.steps_repeated == 0
    assert max(r.seen for r in run.records) < 40_000
    evicted = [p for p in run.files if p.startswith("/large_tool_results/")]
    big = {c["ticker"] for c in scenario.companies()
           if count_tokens(scenario.export_text(c["ticker"])) > 20_000}
    assert len(evicted) == len(big) == 3
    for path in evicted:  # the files hold the exports exactly
        assert unwrap(run.files[path]) in {scenario.export_text(t) for t in big}
    grep = [tc for m in run.messages if isinstance(m, AIMessage)
            for tc in m.tool_calls if tc["name"] == "grep"]
    assert grep and grep[-1]["args"]["path"] in evicted


def test_in_create_deep_agent_labkit_evicts_before_deepagents_does():
    """User middleware sits inside FilesystemMiddleware's wrap_tool_call, so labkit's eviction
    (by tokens) runs first and deepagents' (by characters) then sees a small stub."""
    run = scenario.run(LabModel(window=128_000), middleware=[OffloadMiddleware()], harness="deep")
    stubs = [m for m in run.messages if isinstance(m, ToolMessage) and m.additional_kwargs.get(OFFLOADED)]
    assert len(stubs) == 3 and run.score.goal_completed and run.score.needle_correct
    assert all(not p.startswith("/large_tool_results/")
               or p in {m.additional_kwargs[OFFLOADED] for m in stubs}
               for p in run.files)


def test_zero_loss_on_the_stored_run_through_read_file():
    run = scenario.run(LabModel(window=128_000), middleware=[OffloadMiddleware()])
    path = next(p for p in run.files if p.startswith("/large_tool_results/"))
    files = {path: create_file_data(run.files[path])}
    assert unwrap(_page_back(files, path, page=100)) == scenario.export_text("BRLM")


# -- old tool inputs ------------------------------------------------------------------------------


def _write(i: int, size: int) -> list:
    call = {"name": "write_file", "id": f"w{i}", "args": {"file_path": f"/d{i}.md", "content": "z" * size}}
    return [AIMessage("", tool_calls=[call]), ToolMessage(f"Updated file /d{i}.md", tool_call_id=f"w{i}")]


def test_truncate_args_shortens_only_old_long_file_tool_arguments():
    msgs = [HumanMessage("go"), *_write(1, 5000), *_write(2, 100), *_write(3, 5000)]
    out = truncate_args(msgs, protect_from=5, max_length=2000)
    assert (len(out[1].tool_calls[0]["args"]["content"]) < 1100
            and "/d1.md" in out[1].tool_calls[0]["args"]["content"])
    assert out[3] is msgs[3] and out[5] is msgs[5]  # short, or protected
    assert msgs[1].tool_calls[0]["args"]["content"] == "z" * 5000  # the input is untouched


def _call(name: str, **args) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "id": f"c-{name}", "args": args}])


@pytest.mark.parametrize("history", [
    [HumanMessage("go")], [*_write(1, 100), *_write(2, 2000)], [*_write(1, 2001)],
    [_call("edit_file", file_path="/a.md", old_string="x", new_string="y" * 3000)],
    [_call("grep", pattern="z" * 5000)], [_call("write_file", file_path="/a.md", content=["z" * 5000])],
    [HumanMessage("z" * 5000), ToolMessage("z" * 5000, tool_call_id="t")],
])
def test_the_view_skips_measuring_exactly_when_no_argument_could_be_shortened(history):
    """``view`` measures the request only if some old argument could be shortened
    (``offload._shortenable``): it is true exactly when ``truncate_args`` would change something."""
    changed = truncate_args(history, protect_from=len(history)) != history
    assert offload._shortenable(history, 2000) is changed


def test_old_arguments_are_truncated_in_the_request_only():
    model = LabModel(window=40_000)
    off = OffloadMiddleware(args_trigger=("tokens", 6_000), args_keep=("messages", 4))
    run = scenario.run(model, middleware=[off], turns=(scenario.BRIEFINGS,))
    assert run.error is None and len([p for p in run.files if p.startswith("/reports/briefings/")]) == 5
    stored = [tc for m in run.messages if isinstance(m, AIMessage)
              for tc in m.tool_calls if tc["name"] == "write_file"]
    seen = [tc for m in model.calls[-1].messages if isinstance(m, AIMessage)
            for tc in m.tool_calls if tc["name"] == "write_file"]
    assert all(run.files[tc["args"]["file_path"]] == tc["args"]["content"]
               for tc in stored)  # state and files full
    assert "more characters not shown here" in seen[0]["args"]["content"]
    assert seen[-1]["args"]["content"] == stored[-1]["args"]["content"]  # the protected window is whole
    assert run.records[-1].seen < run.records[-1].stored + run.records[-1].by_kind["tools"]


@pytest.mark.parametrize("step", [1, 3, 7])
def test_the_cut_moves_in_steps_and_never_into_the_protected_window(step):
    """``args_step``: the old calls shortened are those before the last multiple of the step at or
    before the ``args_keep`` window, so the cut moves once per ``step`` messages."""
    history = [m for i in range(12) for m in _write(i, 3000)]  # a write_file call and its result, 12 times
    off = OffloadMiddleware(args_trigger=("tokens", 100), args_keep=("messages", 4), args_step=step)
    for n in range(1, len(history) + 1):
        view = off.view(history[:n])
        cut = max(n - 4, 0) // step * step
        assert [view[i] is not history[i] for i in range(n)] == \
            [i < cut and isinstance(history[i], AIMessage) for i in range(n)], (n, cut)


def test_a_stepped_cut_rewrites_the_request_less_often():
    """What ``args_step`` is for: a cached prefix breaks once per step, not every time a call
    leaves the window (notebook 05's table, on a short history)."""
    history = [m for i in range(30) for m in _write(i, 3000)]

    def rewrites(step):
        off = OffloadMiddleware(args_trigger=("tokens", 100), args_keep=("messages", 6), args_step=step)
        recs = caching.requests_as_records(off.view(history[:n]) for n in range(1, len(history) + 1))
        return sum(b.shared_prefix < a.seen for a, b in zip(recs, recs[1:]))

    assert rewrites(10) * 3 < rewrites(1)


def test_a_fraction_trigger_without_profile_or_window_warns_and_truncates_nothing():
    off = OffloadMiddleware(args_trigger=("fraction", 0.5))
    with pytest.warns(UserWarning, match="no profile"):
        run = scenario.run(LabModel(window=40_000, profile=None), middleware=[off],
                           turns=(scenario.BRIEFINGS,))
    assert run.error is None


# -- large human messages -------------------------------------------------------------------------


def test_a_pasted_transcript_is_saved_and_state_keeps_it_whole():
    model = LabModel(window=128_000)
    turns = (scenario.with_transcript(), scenario.FEEDBACK, scenario.NEEDLE_QUESTION)
    run = scenario.run(model, middleware=[OffloadMiddleware()], turns=turns)
    first = run.messages[0]
    path = first.additional_kwargs[OFFLOADED]
    assert first.content == turns[0] and path.startswith("/conversation_history/message-")
    assert unwrap(run.files[path]) == turns[0]
    assert path in model.calls[0].messages[0].content and count_tokens(model.calls[0].messages[0]) < 2_000
    assert all(path in c.messages[0].content for c in model.calls)  # the view stays in place
    assert run.score.goal_completed and run.score.needle_correct
    assert sum(isinstance(m, HumanMessage) for m in run.messages) == 3  # tagged in place, not duplicated


def test_without_offloading_the_transcript_run_overflows_128k():
    turns = (scenario.with_transcript(), scenario.FEEDBACK, scenario.NEEDLE_QUESTION)
    assert isinstance(scenario.run(LabModel(window=128_000), turns=turns).error, ContextOverflowError)


# -- knobs ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("knob, value", [
    ("tool_limit", 0), ("tool_limit", -5), ("tool_limit", 2.5), ("tool_limit", True), ("tool_limit", "20000"),
    ("human_limit", 0), ("arg_max_length", None), ("arg_max_length", 0), ("window", -1),
    ("args_trigger", ("fraction", 0)), ("args_trigger", ("fraction", 1.5)), ("args_trigger", ("messages", 5)),
    ("args_trigger", ("tokens", 0)), ("args_trigger", "85%"), ("args_keep", ("messages", 0)),
    ("args_keep", ("tokens", 1.5)), ("args_keep", ("lines", 3)), ("head_lines", -1), ("tail_lines", 5000),
    ("args_step", 0), ("args_step", 2.0),
])
def test_every_knob_is_checked_with_a_message_naming_it(knob, value):
    with pytest.raises(ValueError, match=knob):
        OffloadMiddleware(**{knob: value})


def test_limits_can_be_switched_off():
    off = OffloadMiddleware(tool_limit=None, human_limit=None, args_trigger=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = scenario.run(LabModel(window=1_000_000), middleware=[off])
    assert not off.evicted and run.score.goal_completed


def test_result_path_is_under_large_tool_results():
    assert result_path("call_1") == "/large_tool_results/call_1"
    assert result_path("../x").startswith("/large_tool_results/") and ".." not in result_path("../x")


def test_side_by_side_deepagents_evicts_by_characters_labkit_by_tokens():
    """Same run, same 20,000 limit: deepagents (len > 4 * 20,000 characters) evicts only FERN's
    export; labkit (BPE > 20,000) evicts the three exports that really are over 20,000 tokens."""
    from deepagents.middleware.filesystem import NUM_CHARS_PER_TOKEN

    deep = scenario.run(LabModel(window=1_000_000), harness="deep")
    theirs = {unwrap(deep.files[p]).split("\n", 1)[0] for p in deep.files
              if p.startswith("/large_tool_results/")}
    ours = scenario.run(LabModel(window=1_000_000), middleware=[OffloadMiddleware()])
    mine = {unwrap(ours.files[p]).split("\n", 1)[0] for p in ours.files
            if p.startswith("/large_tool_results/")}
    by_chars = {scenario.export_text(c["ticker"]).split("\n", 1)[0] for c in scenario.companies()
                if len(scenario.export_text(c["ticker"])) > NUM_CHARS_PER_TOKEN * 20_000}
    by_tokens = {scenario.export_text(c["ticker"]).split("\n", 1)[0] for c in scenario.companies()
                 if count_tokens(scenario.export_text(c["ticker"])) > 20_000}
    assert theirs == by_chars and mine == by_tokens and theirs < mine
    assert theirs == {"# Market data export — Fernhollow Labs (FERN)"}
