"""labkit.evals' eval grid (notebook 15): settings, the middleware they build, compactions read
from records, where the needle came from, and one row per trial.

Unit tests hand-build histories; the end-to-end tests run the scenario under a few settings of
the grid (a third of a second each) and check what notebook 15 teaches: aggressive triggering
makes compaction happen (behind offloading at 8,000 tokens, only a trigger under the 10% that
forces the others), an archive or an offload file brings the needle back, deepagents' constructor
trim loses the goal, and labkit's recommended setting meets the course's token target at 128k, 60k
and 32k: at most half of deepagents' defaults and 2.5 times the oracle lower bound (labkit.oracle),
needle and goal kept. (tests/model/test_anchors.py covers notebook 14's evals.)
"""

from __future__ import annotations

import warnings

import pytest
from deepagents.middleware.filesystem import FilesystemMiddleware
from deepagents.middleware.summarization import SummarizationMiddleware
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from labkit import LabModel, count_tokens, evals, oracle, scenario
from labkit.evals import Setting
from labkit.offload import OffloadMiddleware
from labkit.summarize import SummarizeMiddleware, events_of
from labkit.trace import Recorder, compactions
from tests.conftest import Scripted, ai_call

NEEDLE = scenario.needle()
KPI_LINE = f"kpi,{NEEDLE.ticker},{NEEDLE.kpi},{NEEDLE.answer}"
AGGRESSIVE = {"trigger": ("fraction", 0.10), "keep": ("fraction", 0.05)}
FORCED = {"trigger": ("fraction", 0.03), "keep": ("fraction", 0.015)}  # aggressive behind offloading


# -- Setting -------------------------------------------------------------------------------------


def test_a_setting_takes_its_harness_from_its_middleware():
    assert Setting("a").harness == "agent"
    assert Setting("d", middleware="deepagents").harness == "deep"
    assert Setting("a in deep", harness="deep").harness == "deep"


@pytest.mark.parametrize("kwargs, message", [
    ({"name": ""}, "needs a name"),
    ({"middleware": "langchain"}, "middleware must be one of"),
    ({"harness": "graph"}, "harness must be"),
    ({"middleware": "deepagents", "harness": "agent"}, "harness='deep'"),
    ({"middleware": "deepagents", "summarize": False}, "always summarizes"),
    ({"trim": 4000}, "trim is deepagents'"),
    ({"window": 0}, "window must be"),
    ({"window": True}, "window must be"),
    ({"summarize": False, "trigger": ("fraction", 0.5)}, "need summarize=True"),
])
def test_a_bad_setting_is_refused_naming_the_knob(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Setting(**{"name": "x", **kwargs})


def test_trial_takes_a_setting():
    with pytest.raises(TypeError, match="evals.Setting"):
        evals.trial({"name": "x"})


# -- the middleware each setting builds -----------------------------------------------------------


def _stack(setting):
    return evals.stack(setting, LabModel(window=setting.window))


def test_labkit_offloads_first_then_summarizes_with_the_knobs():
    files, offload, summarize = _stack(Setting("x", **AGGRESSIVE))
    assert isinstance(offload, OffloadMiddleware) and isinstance(summarize, SummarizeMiddleware)
    assert (summarize.trigger, summarize.keep) == (AGGRESSIVE["trigger"], AGGRESSIVE["keep"])
    assert isinstance(files, FilesystemMiddleware)
    assert [type(m) for m in _stack(Setting("n", offload=False, summarize=False, file_tools="all"))] == []


def _tool_names(files):
    return sorted(t.name for t in files.tools)


def test_labkit_gives_only_the_recommended_file_tools_with_the_harness_eviction_off():
    """Notebook 06, way 1: an allowlist for the harness's FilesystemMiddleware, which takes its place
    by name; on create_agent it keeps the harness's eviction off, on create_deep_agent deepagents'."""
    assert Setting("x").file_tools == evals.RECOMMENDED_FILE_TOOLS == ("read_file", "write_file", "grep")
    files = _stack(Setting("x"))[0]
    assert _tool_names(files) == ["grep", "read_file", "write_file"]
    assert files._tool_token_limit_before_evict is None
    assert files._human_message_token_limit_before_evict is None
    deep = _stack(Setting("x", harness="deep"))[0]
    assert _tool_names(deep) == ["grep", "read_file", "write_file"]
    assert deep._tool_token_limit_before_evict == 20_000, "deepagents' own eviction stays in its harness"
    assert _tool_names(_stack(Setting("x", file_tools=["read_file", "ls"]))[0]) == ["ls", "read_file"]


def test_deepagents_keeps_all_its_file_tools_unless_told():
    assert Setting("d", middleware="deepagents").file_tools == "all"
    (files,) = _stack(Setting("d", middleware="deepagents", file_tools=("read_file", "grep"), evict=2_500))
    assert _tool_names(files) == ["grep", "read_file"] and files._tool_token_limit_before_evict == 2_500


@pytest.mark.parametrize("tools", ["grep", ("write_file", "grep"), []])
def test_file_tools_without_read_file_are_refused(tools):
    with pytest.raises(ValueError, match="holds read_file"):
        Setting("x", file_tools=tools)


@pytest.mark.parametrize("harness", ["agent", "deep"])
def test_the_model_is_sent_only_the_allowed_file_tools(harness):
    """The allowlist replaces the harness's own FilesystemMiddleware: no second one, no hidden tool."""
    setting = Setting("x", harness=harness)
    model = LabModel(window=setting.window)
    scenario.run(model, middleware=evals.stack(setting, model), harness=harness,
                 turns=scenario.TURNS[:1])
    sent = set(model.calls[0].tools)
    assert sent >= {"read_file", "write_file", "grep", "fetch_market_data", "search_news"}
    assert not sent & {"ls", "glob", "edit_file", "delete", "execute"}, "no file tool outside the allowlist"


def test_no_offload_in_create_deep_agent_switches_deepagents_eviction_off():
    fs, summarize = _stack(Setting("x", harness="deep", offload=False))
    assert isinstance(fs, FilesystemMiddleware) and fs.name == "FilesystemMiddleware"
    assert fs._tool_token_limit_before_evict is None and isinstance(summarize, SummarizeMiddleware)
    (fs,) = _stack(Setting("d", middleware="deepagents", offload=False))
    assert fs._tool_token_limit_before_evict is None


def test_deepagents_defaults_leave_its_stack_alone_and_knobs_rebuild_its_summarizer():
    assert _stack(Setting("d", middleware="deepagents")) == []
    (summ,) = _stack(Setting("d", middleware="deepagents", trim=4000, **AGGRESSIVE))
    assert isinstance(summ, SummarizationMiddleware) and summ.name == "SummarizationMiddleware"
    helper = summ._lc_helper
    assert helper.trim_tokens_to_summarize == 4000 and helper.keep == AGGRESSIVE["keep"]
    assert helper.trigger == AGGRESSIVE["trigger"]


def test_without_an_archive_labkits_summarizer_writes_none_and_deepagents_backend_refuses():
    """labkit's summarizer has a switch (nothing written, nothing to warn about); deepagents' has
    none, so its backend refuses every write."""
    labkit_summ = _stack(Setting("x", archive=False, offload=False))[-1]
    assert labkit_summ.archive is False
    deep = _stack(Setting("x", middleware="deepagents", archive=False))[-1]
    with pytest.raises(PermissionError, match="without an archive"):
        deep._backend.write("/conversation_history/x.md", "text")


# -- compactions and the needle's source, on hand-made data --------------------------------------


def test_compactions_is_the_records_reader_of_trace():
    """evals reads compactions with the reader notebooks 07 and 09 use (tests/test_trace.py)."""
    assert evals.compactions is compactions


def _needle_run(*between, answer=f"It was {NEEDLE.answer}."):
    messages = [HumanMessage(scenario.NEEDLE_QUESTION), *between, AIMessage(answer)]
    return scenario.Run(messages=messages, files={})


@pytest.mark.parametrize("path, source", [
    ("/conversation_history/lab.md", "archive"),
    ("/conversation_history/session_0a1b.md", "archive"),
    ("/large_tool_results/call_7", "offload file"),
    ("/research/BRLM.md", "other file"),
])
def test_the_needle_source_is_the_file_whose_result_held_the_line(path, source):
    run = _needle_run(ai_call("grep", {"pattern": NEEDLE.kpi, "path": path}, "g1"),
                      ToolMessage(f"{path}:\n  12: {KPI_LINE}", tool_call_id="g1"))
    assert evals.needle_source(run) == source


def test_a_read_that_missed_does_not_count_and_the_one_that_hit_does():
    run = _needle_run(ai_call("grep", {"pattern": NEEDLE.kpi, "path": "/conversation_history/lab.md"}, "g1"),
                      ToolMessage("No matches found", tool_call_id="g1"),
                      ai_call("read_file", {"file_path": "/large_tool_results/c3"}, "r1"),
                      ToolMessage(f"     40  {KPI_LINE}", tool_call_id="r1"))
    assert evals.needle_source(run) == "offload file"


def test_the_needle_from_context_lost_or_never_asked():
    assert evals.needle_source(_needle_run()) == "context"
    assert evals.needle_source(_needle_run(answer="I can't find it.")) == "lost"
    assert (evals.needle_source(scenario.Run(messages=[HumanMessage(scenario.REQUEST)], files={}))
            == "not asked")
    assert set(evals.NEEDLE_SOURCES) >= {"context", "archive", "offload file", "other file", "lost",
                                         "not asked"}


# -- trials, rows and the grid --------------------------------------------------------------------


def test_grid_refuses_two_settings_with_one_name():
    with pytest.raises(ValueError, match="repeated: \\['a'\\]"):
        evals.grid([Setting("a"), Setting("a", offload=False)])


@pytest.fixture(scope="module")
def trials():
    settings = [
        Setting("naive", offload=False, summarize=False, file_tools="all", window=1_000_000),
        Setting("deepagents defaults", middleware="deepagents"),
        Setting("recommended"),
        Setting("recommended 10%", **AGGRESSIVE),
        Setting("recommended 3%", **FORCED),
        Setting("summarize 10%", offload=False, **AGGRESSIVE),
        Setting("summarize 10%, no archive", offload=False, archive=False, **AGGRESSIVE),
        Setting("deepagents 10%, trim 4,000", middleware="deepagents", trim=4000, **AGGRESSIVE),
        Setting("deepagents 10%, trim 4,000, finishes", middleware="deepagents", trim=4000,
                when_lost="finish", **AGGRESSIVE),
    ]
    with warnings.catch_warnings():  # "no archive" is a setting, not a failure: nothing to warn about
        warnings.simplefilter("error")
        return {s.name: (s, *evals.trial(s)) for s in settings}


def rows(trials):
    return {name: evals.row(s, run, model) for name, (s, run, model) in trials.items()}


def test_a_row_counts_the_summary_calls_tokens_in_tokens_sent(trials):
    s, run, model = trials["summarize 10%"]
    row = evals.row(s, run, model)
    summaries = [c for c in model.calls if c.kind == "summary"]
    assert row["summary calls"] == len(summaries) > 0
    assert row["summary tokens"] == sum(c.input_tokens for c in summaries) > 0
    assert row["tokens sent"] == sum(r.seen for r in run.records) + row["summary tokens"]
    assert row["compactions"] == len(events_of(run.state))
    assert [cut for _, cut in evals.compactions(run)] == [e.cut for e in events_of(run.state)]


def test_a_normal_run_never_compacts_and_an_aggressive_trigger_does(trials):
    r = rows(trials)
    assert r["recommended"]["compactions"] == r["deepagents defaults"]["compactions"] == 0
    assert r["summarize 10%"]["compactions"] >= 5 and r["recommended 3%"]["compactions"] >= 3
    # behind offloading every request stays under a 10% trigger: it never fires
    assert r["recommended 10%"]["compactions"] == 0 and r["recommended 10%"]["summary tokens"] == 0
    assert r["recommended 10%"]["peak request"] < 0.10 * 128_000 < r["summarize 10%"]["peak request"]


def test_the_needle_comes_back_from_the_file_that_held_it(trials):
    r = rows(trials)
    assert r["naive"]["needle from"] == "context"
    assert r["recommended"]["needle from"] == r["recommended 3%"]["needle from"] == "offload file"
    assert r["summarize 10%"]["needle from"] == "archive"
    assert (r["summarize 10%, no archive"]["needle from"] == "lost"
            and not r["summarize 10%, no archive"]["needle"])


def test_deepagents_constructor_trim_loses_the_goal_and_repeats_work(trials):
    row = rows(trials)["deepagents 10%, trim 4,000"]
    assert row["goal losses"] >= 1 and row["steps repeated"] >= 1 and not row["goal completed"]
    assert row["claimed done"] == 0, "it asked; it never said it was done"
    others = [v for k, v in rows(trials).items() if "trim" not in k]
    assert all(v["goal losses"] == 0 and v["goal completed"] and v["claimed done"] == 0 for v in others)


def test_a_model_that_finishes_when_lost_claims_done_and_asks_nothing(trials):
    """The drift goal losses cannot see: no question, the report never written, the task said done."""
    row = rows(trials)["deepagents 10%, trim 4,000, finishes"]
    assert row["goal losses"] == 0 and not row["goal completed"]
    assert row["claimed done"] == 1
    _, run, _ = trials["deepagents 10%, trim 4,000, finishes"]
    assert evals.claimed_done(run) == ["report"] and run.score.asked_user == 0 and run.score.no_report


def _turn(request, *between, answer):
    return [HumanMessage(request), *between, AIMessage(answer)]


@pytest.mark.parametrize("between, answer, claimed", [
    ((), "Done: I pulled the news for Brightloom. That completes the task.", ["report"]),
    ((), "What should I work on?", []),  # asked: handed back, not claimed
    ((ai_call("write_file", {"file_path": scenario.REPORT_PATH, "content": "x"}, "w1"),
      ToolMessage("Updated file", tool_call_id="w1")), "The report is written.", []),
    ((ai_call("write_file", {"file_path": "/reports/other.md", "content": "x"}, "w1"),
      ToolMessage("Updated file", tool_call_id="w1")), "The report is written.", ["report"]),
])
def test_claimed_done_reads_the_answer_against_the_file_the_turn_asked_for(between, answer, claimed):
    run = scenario.Run(messages=_turn(scenario.REQUEST, *between, answer=answer), files={})
    assert evals.claimed_done(run) == claimed


def test_claimed_done_ignores_turns_that_ask_for_no_file():
    run = scenario.Run(messages=_turn(scenario.NEEDLE_QUESTION, answer="It was 117.4%."), files={})
    assert evals.claimed_done(run) == []


def test_a_bad_when_lost_is_refused():
    with pytest.raises(ValueError, match="when_lost must be"):
        Setting("x", when_lost="guess")


def test_the_recommended_setting_is_the_settings_defaults_and_evicts_every_export():
    """Notebook 15, section 5: 8,000 is under the smallest export (CRVD, 10,142 tokens), so every
    export is offloaded; OffloadMiddleware's own default, 20,000, keeps CRVD's and EMBR's."""
    assert Setting("x").tool_limit == evals.RECOMMENDED_TOOL_LIMIT == 8_000
    assert _stack(Setting("x"))[1].tool_limit == 8_000
    assert _stack(Setting("x", tool_limit=20_000))[1].tool_limit == 20_000
    sizes = {c["ticker"]: count_tokens(scenario.export_text(c["ticker"])) for c in scenario.companies()}
    assert min(sizes.values()) > evals.RECOMMENDED_TOOL_LIMIT
    assert sorted(t for t, n in sizes.items() if n <= 20_000) == ["CRVD", "EMBR"]


def test_the_file_tools_the_run_never_calls_cost_their_schemas_on_every_call():
    """Notebook 06's lesson in the recommended setting. With all seven file tools it makes the same 16
    calls and sends 887 tokens more on each — the schemas of ls, glob, edit_file and delete: 81,670
    tokens against 67,478."""
    runs = {tools: evals.trial(Setting("x", file_tools=tools))[0] for tools in ("all", None)}
    full, lean = runs["all"].records, runs[None].records
    assert [r.tool_calls for r in full] == [r.tool_calls for r in lean], "the same calls"
    assert {a.seen - b.seen for a, b in zip(full, lean)} == {887}, "887 tokens more on every call"
    assert {a.by_kind["tools"] - b.by_kind["tools"] for a, b in zip(full, lean)} == {887}, "all schemas"
    assert [sum(r.seen for r in records) for records in (full, lean)] == [81_670, 67_478]
    assert all(run.score.goal_completed and run.score.needle_correct for run in runs.values())


def test_the_recommended_setting_sends_a_fraction_of_deepagents_defaults_and_naive(trials):
    """At 128k (the running example's window): under a tenth of the naive run, at most half of
    deepagents' defaults, needle and goal kept."""
    r = rows(trials)
    rec, deep, naive = r["recommended"], r["deepagents defaults"], r["naive"]
    assert rec["tokens sent"] <= 0.5 * deep["tokens sent"] and rec["tokens sent"] < naive["tokens sent"] / 10
    assert rec["needle"] and rec["goal completed"] and rec["steps repeated"] == 0


@pytest.fixture(scope="module")
def bound(trials):
    _, naive, _ = trials["naive"]
    return oracle.oracle(naive.records[0].by_kind["tools"])["tokens"]


@pytest.mark.parametrize("window", [128_000, 60_000, 32_000])
def test_the_recommended_setting_meets_the_token_goal_at_every_window(window, bound):
    """The course's target (issue 12): at each window, tokens sent — refused requests at their
    size, oracle.tokens_sent — at most 0.5x deepagents' defaults and 2.5x the oracle lower bound,
    the needle answered, the goal kept. OffloadMiddleware's default limit, 20,000, misses it below
    128k: the two exports it keeps ride along on every call."""
    sent, row = {}, {}
    for name, kw in {"rec": {}, "deep": {"middleware": "deepagents"}, "20k": {"tool_limit": 20_000}}.items():
        s = Setting(name, window=window, **kw)
        run, model = evals.trial(s)
        sent[name], row[name] = oracle.tokens_sent(run, model), evals.row(s, run, model)
    assert sent["rec"] <= 0.5 * sent["deep"]
    assert sent["rec"] <= 2.5 * bound
    assert row["rec"]["needle"] and row["rec"]["goal completed"] and row["rec"]["goal losses"] == 0
    assert (sent["20k"] <= 0.5 * sent["deep"]) == (window == 128_000)


def test_grid_is_row_of_trial_in_order():
    settings = [Setting("recommended"),
                Setting("no offload", offload=False, summarize=False, window=1_000_000)]
    got = evals.grid(settings)
    assert [g["setting"] for g in got] == ["recommended", "no offload"]
    assert got[0] == evals.row(settings[0], *evals.trial(settings[0]))


# -- any model: the recorder's replies and records, not the lab model's log ------------------------


def _scripted_run(*replies, recorder=None, times=2):
    """The scenario's first two turns on a scripted (non-lab) model, reminded from the recorder."""
    model = Scripted(messages=iter(replies))
    rec = recorder or Recorder()
    turns = evals.reminded(scenario.TURNS[:2], model, times, recorder=rec)
    return scenario.run(model, recorder=rec, turns=turns, export_scale=0.02), rec


def test_reminded_reads_any_models_reply_from_the_recorder():
    run, rec = _scripted_run(AIMessage("What should I work on?"), AIMessage("Which report?"),
                             AIMessage("Done."), AIMessage("Noted."))
    assert rec.turns == [scenario.TURNS[0]] * 3 + [scenario.TURNS[1]], "two reminders, then the next turn"
    assert [r.reply for r in rec.records] == ["What should I work on?", "Which report?", "Done.", "Noted."]
    assert run.score.asked_user == 2 and run.score.goal_lost == 0


def test_a_question_after_work_is_not_reminded():
    run, rec = _scripted_run(ai_call("search_news", {"ticker": "BRLM"}, "c1"), AIMessage("Shall I go on?"),
                             AIMessage("Noted."))
    assert rec.turns == list(scenario.TURNS[:2]) and run.score.asked_user == 0


def test_a_row_of_any_model_counts_compactions_and_leaves_summary_tokens_unknown(trials):
    s, run, _ = trials["summarize 10%"]
    row = evals.row(s, run, object())
    assert row["summary calls"] == row["compactions"] == len(evals.compactions(run)) > 0
    assert row["summary tokens"] is None
    assert row["tokens sent"] == sum(r.seen for r in run.records if r.error is None)


def test_evict_tunes_deepagents_eviction_and_only_deepagents():
    """Setting(evict=...) is deepagents' tool_token_limit_before_evict, to tune deepagents as labkit
    is tuned (notebook 15 compares best with best); on labkit's middleware it is refused."""
    from labkit.evals import Setting, trial

    with pytest.raises(ValueError, match="evict is deepagents' eviction limit"):
        Setting("x", evict=2_500)
    with pytest.raises(ValueError, match="evict is deepagents' eviction limit"):
        Setting("x", middleware="deepagents", offload=False, evict=2_500)
    tuned, _ = trial(Setting("tuned", middleware="deepagents", window=32_000, evict=2_500))
    default, _ = trial(Setting("default", middleware="deepagents", window=32_000))
    sent = [sum(r.seen for r in run.records if not r.error) for run in (tuned, default)]
    assert tuned.score.goal_completed and tuned.score.needle_correct and sent[0] < sent[1] / 2
    assert any(p.startswith("/large_tool_results/") for p in tuned.files), "deepagents evicted the exports"
