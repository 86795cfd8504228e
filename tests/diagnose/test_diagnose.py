"""labkit.diagnose: the table is complete in both languages and names knobs that exist in the
installed packages; each failure mode, reproduced by the recipe its notebook uses, is diagnosed
with numbers read back from the run, and its fix — and a healthy run — has no finding at all."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from deepagents.middleware.filesystem import NUM_CHARS_PER_TOKEN
from deepagents.middleware.summarization import SummarizationMiddleware, compute_summarization_defaults
from langchain_core.messages import ToolMessage

from labkit import LabModel, count_tokens, diagnose, evals, scenario
from labkit.isolate import IsolateMiddleware, SubagentSpec
from labkit.offload import OffloadMiddleware
from labkit.tables import Table
from labkit.tokens import TokenCounter

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"

EXPECTED = {
    "hard_overflow": {"hard_overflow"},
    "no_profile": {"overflow_rescued", "no_profile"},
    "goal_lost": {"goal_lost", "repeated_work"},
    "needle_lost": {"needle_lost"},
    "cost_blowup": {"cost_blowup"},
    "tool_tax": {"tool_tax"},
    "cache_thrash": {"cache_thrash"},
    "orphan": {"orphan"},
    "raw_dump": {"hard_overflow", "raw_dump"},
}


@pytest.fixture(scope="module")
def cases():
    return {m: (diagnose.reproduce(m), diagnose.fix(m)) for m in diagnose.MODES}


def _keys(findings):
    return {f.key for f in findings}


def _finding(case, key):
    [f] = [f for f in case.findings if f.key == key]
    return f


# -- the table -----------------------------------------------------------------------------------


def test_rows_have_unique_keys_and_every_mode_and_finding_has_a_row():
    keys = [r.key for r in diagnose.ROWS]
    assert len(keys) == len(set(keys))
    assert set(diagnose.MODES) <= set(keys)
    assert set().union(*EXPECTED.values()) == {r.key for r in diagnose.ROWS if r.detected}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_table_has_one_row_per_symptom_in_each_language(language):
    t = diagnose.table(language)
    assert isinstance(t, Table) and len(t) == len(diagnose.ROWS) and len(t.columns) == 7
    for r, shown in zip(diagnose.ROWS, t.rows):
        text = r.text(language)
        assert list(shown.values())[:3] == [text.symptom, text.cause, text.remedy]
        assert all(text.symptom and text.cause and text.remedy for text in (r.en, r.zh))


def test_the_chinese_table_is_written_in_chinese_and_the_english_one_is_not():
    cjk = re.compile(r"[\u4e00-\u9fff]")
    for r in diagnose.ROWS:
        assert all(cjk.search(s) for s in (r.zh.symptom, r.zh.cause, r.zh.remedy)), r.key
        assert not any(cjk.search(s) for s in (r.en.symptom, r.en.cause, r.en.remedy)), r.key
    assert diagnose.table("zh").columns[0] == "症状"


def test_an_unknown_language_or_row_is_refused():
    with pytest.raises(ValueError, match="'en' or 'zh'"):
        diagnose.table("fr")
    with pytest.raises(KeyError, match="no row 'nope'"):
        diagnose.row("nope")


def test_every_row_names_notebooks_that_exist():
    present = {p.name[:2] for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")}
    for r in diagnose.ROWS:
        assert r.notebooks and set(r.notebooks) <= present, (r.key, r.notebooks)


def test_every_knob_names_an_object_and_a_parameter_that_exist():
    for r in diagnose.ROWS:
        for knob in (r.labkit, r.deepagents):
            obj = knob.resolve()
            if knob.param:
                params = set()
                try:
                    params |= set(inspect.signature(obj).parameters)
                except (TypeError, ValueError):  # a TypedDict such as deepagents.SubAgent
                    pass
                params |= set(getattr(obj, "model_fields", {})) | set(getattr(obj, "__annotations__", {}))
                assert knob.param in params, (r.key, knob.target, knob.param)
            name = knob.target.rsplit(".", 1)[-1]
            assert name in knob.code or knob.param in knob.code, (r.key, knob.code)


def test_the_numbers_in_the_table_are_the_installed_ones():
    bare = compute_summarization_defaults(LabModel(profile=None))
    assert bare["trigger"] == ("tokens", 170_000) and bare["keep"] == ("messages", 6)
    row = diagnose.row("no_profile")
    assert "170,000" in row.en.cause and "6 messages" in row.en.cause and "170,000" in row.zh.cause
    assert (NUM_CHARS_PER_TOKEN == 4
            and "4 × tool_token_limit_before_evict" in diagnose.row("hard_overflow").en.remedy)
    trim = inspect.signature(SummarizationMiddleware).parameters["trim_tokens_to_summarize"].default
    assert (f"{trim:,}" in diagnose.row("goal_lost").en.cause
            and f"{trim:,}" in diagnose.row("goal_lost").zh.cause)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_when_not_is_a_table_in_both_languages(language):
    t = diagnose.when_not(language)
    assert len(t) == len(diagnose.WHEN_NOT) and len(t.columns) == 3 and all(all(r.values()) for r in t.rows)


# -- each failure mode, reproduced, diagnosed and fixed ------------------------------------------


@pytest.mark.parametrize("mode", diagnose.MODES)
def test_each_failure_mode_is_diagnosed_and_its_fix_is_clean(cases, mode):
    broken, fixed = cases[mode]
    assert _keys(broken.findings) == EXPECTED[mode]
    assert fixed.findings == [], [str(f) for f in fixed.findings]
    assert not broken.fixed and fixed.fixed and broken.mode == fixed.mode == mode


@pytest.mark.parametrize("mode", diagnose.MODES)
def test_every_finding_has_evidence_in_both_languages(cases, mode):
    for f in cases[mode][0].findings:
        en, zh = f.evidence("en"), f.evidence("zh")
        assert en != zh and re.search(r"\d", en) and re.search(r"\d", zh)
        assert f.row.key == f.key and str(f).startswith(f"{f.key}: ")


def test_hard_overflow_names_the_refused_call_and_the_largest_result(cases):
    broken, _ = cases["hard_overflow"]
    f = _finding(broken, "hard_overflow")
    failed = [r for r in broken.run.records if r.error]
    largest = max(count_tokens(m) for m in broken.run.messages if isinstance(m, ToolMessage))
    assert ([f.numbers["call"]] == [r.index for r in failed]
            and f.numbers["tokens"] == failed[0].seen > 128_000)
    assert f.numbers["largest"] == largest and f.numbers["tool"] == "fetch_market_data"
    assert f.numbers["turns"] == broken.run.turns_completed == 0
    assert f"{failed[0].seen:,}" in f.evidence()


def test_no_profile_is_seen_only_with_the_model(cases):
    broken, _ = cases["no_profile"]
    assert broken.model.profile is None
    assert _keys(diagnose.diagnose(broken.run)) == {"overflow_rescued"}, "the model is needed"
    f, rescued = _finding(broken, "no_profile"), _finding(broken, "overflow_rescued")
    refused = next(r for r in broken.run.records if r.error)
    assert f.numbers["trigger"] == ("tokens", 170_000) and f.numbers["tokens"] == refused.seen < 170_000
    assert rescued.numbers["call"] == refused.index and rescued.numbers["retry"] == refused.index + 1
    assert rescued.numbers["summary"] > 0 and rescued.numbers["retry_tokens"] < refused.seen


def test_a_rescued_overflow_with_a_profile_is_not_the_no_profile_trap(deep_60k):
    model, run = deep_60k
    assert _keys(diagnose.diagnose(run, model)) == {"overflow_rescued"}
    assert run.score.goal_completed


def test_goal_drift_counts_losses_and_repeats(cases):
    broken, _ = cases["goal_lost"]
    lost, repeated = _finding(broken, "goal_lost"), _finding(broken, "repeated_work")
    score = broken.run.score
    assert lost.numbers["count"] == score.goal_lost == 3 and lost.numbers["summarized"] > 0
    assert repeated.numbers["count"] == score.steps_repeated > 0
    assert repeated.numbers["steps"] == list(score.repeated)
    assert evals.forced_compaction("none", reminders=0).score.goal_lost == 1  # the recipe is notebook 14's


def test_needle_lost_says_where_the_figure_still_is(cases):
    broken, fixed = cases["needle_lost"]
    f = _finding(broken, "needle_lost")
    assert f.numbers["figure"] == scenario.needle().answer and f.numbers["paths"] == []
    assert "none" in f.evidence() and "无" in f.evidence("zh")
    assert fixed.run.score.needle_correct and any(scenario.needle().find(t) for t in fixed.run.files.values())


def test_cost_blowup_and_its_thresholds(cases, monkeypatch):
    broken, _ = cases["cost_blowup"]
    f = _finding(broken, "cost_blowup")
    ok = [r for r in broken.run.records if not r.error]
    assert f.numbers["sent"] == sum(r.seen for r in ok) >= diagnose.COST_MIN_TOKENS
    assert f.numbers["growth"] == pytest.approx(f.numbers["sent"] / len(ok) / ok[0].seen)
    monkeypatch.setattr(diagnose, "COST_MIN_TOKENS", f.numbers["sent"] + 1)
    assert "cost_blowup" not in _keys(diagnose.diagnose(broken.run, broken.model))
    monkeypatch.setattr(diagnose, "COST_MIN_TOKENS", 1)
    monkeypatch.setattr(diagnose, "COST_GROWTH", f.numbers["growth"] + 0.01)
    assert "cost_blowup" not in _keys(diagnose.diagnose(broken.run, broken.model))


def test_tool_tax_and_its_thresholds(cases, monkeypatch):
    broken, fixed = cases["tool_tax"]
    f = _finding(broken, "tool_tax")
    ok = [r for r in broken.run.records if not r.error]
    assert f.numbers["tax"] == sum(r.by_kind["tools"] for r in ok) >= diagnose.TAX_MIN_TOKENS
    assert f.numbers["share"] >= diagnose.TAX_SHARE
    fixed_tax = sum(r.by_kind["tools"] for r in fixed.run.records)
    assert fixed_tax < f.numbers["tax"] and fixed.run.score.needle_correct
    monkeypatch.setattr(diagnose, "TAX_MIN_TOKENS", f.numbers["tax"] + 1)
    assert diagnose.diagnose(broken.run, broken.model) == []


def test_orphan_quotes_the_refusal(cases):
    broken, _ = cases["orphan"]
    f = _finding(broken, "orphan")
    assert f.numbers["reason"].startswith("orphan tool message at position")
    assert f.numbers["call"] == next(r.index for r in broken.run.records if r.error)


def test_raw_dump_counts_the_task_replies(cases):
    broken, fixed = cases["raw_dump"]
    f = _finding(broken, "raw_dump")
    replies = [count_tokens(m) for m in broken.run.messages
               if isinstance(m, ToolMessage) and m.name == "task"]
    assert f.numbers["count"] == f.numbers["replies"] == len(replies) == 5
    assert f.numbers["largest"] == max(replies) > 10 * diagnose.RAW_REPLY_TOKENS
    assert _finding(broken, "hard_overflow").numbers["tool"] == "task"
    assert all(count_tokens(m) < 200 for m in fixed.run.messages
               if isinstance(m, ToolMessage) and m.name == "task")


@pytest.mark.parametrize("make", ["offloaded", "isolated"])
def test_healthy_runs_have_no_findings(make):
    model = LabModel(window=128_000, delegate_research=make == "isolated")
    if make == "offloaded":
        run = scenario.run(model, middleware=[OffloadMiddleware()])
    else:
        iso = IsolateMiddleware(model, [SubagentSpec(**scenario.researcher())])
        run = scenario.run(model, middleware=[iso], turns=scenario.FANOUT_TURNS)
    assert run.score.goal_completed and run.score.needle_correct
    assert diagnose.diagnose(run, model) == []
    assert diagnose.report([]).rows[0]["finding"] == "no finding"


# -- the API around it ----------------------------------------------------------------------------


def test_report_has_one_row_per_finding_in_each_language(cases):
    broken, _ = cases["raw_dump"]
    for language, col in (("en", "evidence"), ("zh", "证据")):
        t = diagnose.report(broken.findings, language)
        assert len(t) == 2 and t.column(col) == [f.evidence(language) for f in broken.findings]
    assert diagnose.report([], "zh").rows[0]["症状"] == "无发现"


def test_compare_reads_each_case(cases):
    broken, fixed = cases["orphan"]
    t = diagnose.compare(broken, fixed)
    assert t.column("refused calls") == [1, 0] and t.column("findings") == ["orphan", "none"]
    assert t.column("goal completed") == [False, True]


def test_recipes_show_their_source_and_refuse_unknown_modes():
    source = diagnose.recipe("orphan")
    assert source.startswith("def _orphan_recipe(fixed: bool):") and "NaiveCut(trigger=8, keep=5)" in source
    for call in (diagnose.reproduce, diagnose.fix, diagnose.recipe):
        with pytest.raises(ValueError, match="unknown failure mode 'nope'; choose one of hard_overflow"):
            call("nope")


def test_diagnose_refuses_what_is_not_a_run():
    with pytest.raises(TypeError, match="scenario.Run, not list"):
        diagnose.diagnose([])


@pytest.mark.parametrize("trigger, keep, match", [(8, 8, "below trigger"), (0, 1, "trigger must"),
                                                  (8, True, "keep must")])
def test_naive_cut_checks_its_knobs(trigger, keep, match):
    with pytest.raises(ValueError, match=match):
        diagnose.NaiveCut(trigger=trigger, keep=keep)


def test_the_naive_cut_orphans_where_a_safe_cut_would_not(cases):
    broken, fixed = cases["orphan"]
    last, before = broken.run.records[-1], broken.run.records[-2]
    assert before.messages_seen <= 8 < len(broken.run.messages) and last.messages_seen == 1 + 5
    assert "InvalidHistoryError" in last.error
    assert broken.run.messages[len(broken.run.messages) - 5].type == "tool", (
        "the kept part starts with a result")
    assert fixed.run.score.goal_completed and fixed.run.score.steps_repeated == 0


# -- the clinic agrees with the course (issue 21) ---------------------------------------------------


@pytest.mark.parametrize("window", [128_000, 60_000, 32_000])
def test_the_courses_recommended_setting_is_clean_at_every_window(window):
    """Notebook 15's recommended setting (three file tools, offloading at 8,000, then summarization): the
    clinic must not flag what the course recommends — the tool-schema tax of a run offloading
    already keeps small is below the absolute floor worth acting on."""
    run, model = evals.trial(evals.Setting("recommended", window=window))
    assert run.score.goal_completed and run.score.needle_correct
    assert diagnose.diagnose(run, model) == []
    tax = sum(r.by_kind["tools"] for r in run.records if not r.error)
    assert tax < diagnose.TAX_MIN_TOKENS <= diagnose.COST_MIN_TOKENS / 10


def _literal_kwargs(code: str) -> dict:
    """The keyword arguments of a knob's code that are Python literals."""
    import ast

    try:
        call = ast.parse(code, mode="eval").body
    except SyntaxError:  # not a call: e.g. system_prompt=model.PROGRESS_PROMPT
        return {}
    out = {}
    for kw in getattr(call, "keywords", []):
        try:
            out[kw.arg] = ast.literal_eval(kw.value)
        except ValueError:
            pass
    return out


def test_every_knob_that_sets_a_value_sets_a_value_other_than_the_default():
    """A knob that writes the installed default changes nothing: the table must name a change."""
    for r in diagnose.ROWS:
        for knob in (r.labkit, r.deepagents):
            value = _literal_kwargs(knob.code).get(knob.param, inspect.Parameter.empty)
            if knob.param is None or value is inspect.Parameter.empty:
                continue
            try:
                default = inspect.signature(knob.resolve()).parameters[knob.param].default
            except (TypeError, ValueError, KeyError):
                continue
            assert value != default, f"{r.key}: {knob.code} sets the default of {knob.target}"


@pytest.mark.parametrize("window", [128_000, 60_000, 32_000])
def test_the_deepagents_eviction_knob_cures_the_overflow_rows_at_every_window(window):
    """hard_overflow, overflow_rescued and cost_blowup name FilesystemMiddleware's eviction limit:
    at that value deepagents' own stack runs the scenario with no finding — where its default
    (20,000 tokens, i.e. 80,000 characters) leaves the CSV exports, ~2 characters a token, in."""
    knob = diagnose.row("hard_overflow").deepagents
    assert all(diagnose.row(k).deepagents == knob for k in ("overflow_rescued", "cost_blowup"))
    limit = _literal_kwargs(knob.code)["tool_token_limit_before_evict"]
    model = LabModel(window=window)
    middleware = knob.resolve()(tool_token_limit_before_evict=limit)
    run = scenario.run(model, middleware=[middleware], harness="deep",
                       turns=evals.reminded(scenario.TURNS, model, 2))
    assert run.score.goal_completed and diagnose.diagnose(run, model) == []
    sick = LabModel(window=window)
    default = scenario.run(sick, harness="deep", turns=evals.reminded(scenario.TURNS, sick, 2))
    assert diagnose.diagnose(default, sick), "deepagents' default is sick at this window"


def test_the_toolbox_is_thirty_schemas_the_lab_model_never_calls():
    tools = scenario.toolbox()
    assert len(tools) == 30 and len({t.name for t in tools}) == 30
    assert 5_000 < sum(TokenCounter().tool(t) for t in tools) < 8_000, "a connector's worth per call"
    assert tools[0].invoke({"query": "x"}).startswith("Error:"), "called, it says it is not a system"


def _chinese_texts() -> list[tuple[str, str]]:
    """(where, text) for every Chinese sentence the clinic shows: rows, evidence, when-not."""
    from labkit.diagnose.limits import WHEN_NOT
    from labkit.diagnose.rows import EVIDENCE

    out = [(f"{r.key}.{f}", getattr(r.zh, f)) for r in diagnose.ROWS
           for f in ("symptom", "cause", "remedy")]
    out += [(f"evidence.{k}", zh) for k, (_, zh) in EVIDENCE.items()]
    out += [(f"when_not.{k}.{f}", getattr(zh, f)) for k, _, zh in WHEN_NOT
            for f in ("situation", "why", "instead")]
    return out


def test_the_chinese_table_speaks_the_glossarys_terms():
    """GLOSSARY.md is the one source of the course's Chinese terms: the clinic uses them, not the
    drifted variants a reviewer found, and leaves no glossary term in English outside code."""
    glossary = (Path(__file__).resolve().parents[2] / "GLOSSARY.md").read_text(encoding="utf-8")
    drifted = {"留档": "归档", "超长回退": "溢出回退", "子 agent": "子智能体", "脏活": "—",
               "工具 schema": "工具定义"}
    for wanted in {w for w in drifted.values() if w != "—"}:
        assert wanted in glossary, wanted
    terms = "agent|token|trigger|system prompt|subagent|archive"
    english = re.compile(rf"(?<![A-Za-z_{{(.=\"'])({terms})(?![A-Za-z_:}}=])")
    for where, text in _chinese_texts():
        for old, new in drifted.items():
            assert old not in text, f"{where}: {old!r} — the glossary says {new!r}"
        assert not english.search(text), f"{where}: a glossary term left in English: {text}"


def test_the_no_profile_rows_labkit_knob_moves_the_trigger_below_the_window():
    """A window alone leaves a no-profile model's trigger at deepagents' 170,000 fallback; the
    row's knob gives a fraction of that window as well."""
    import ast

    from labkit.summarize import SummarizeMiddleware

    bare = LabModel(window=100_000, profile=None)
    assert SummarizeMiddleware(bare, window=100_000).trigger == ("tokens", 170_000)
    call = ast.parse(diagnose.row("no_profile").labkit.code, mode="eval").body
    kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}
    middleware = SummarizeMiddleware(bare, **kwargs)
    assert middleware.trigger[0] == "fraction" and int(kwargs["window"] * middleware.trigger[1]) < 100_000
