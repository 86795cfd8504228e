"""The diagnostic clinic: symptom → cause → remedy as data, and a diagnosis of a recorded run.

Notebook 16 introduces it; it gathers what notebooks 01–14 taught.

* :data:`ROWS` — the table (诊断表), one frozen :class:`Row` per symptom, in English and Chinese,
  each naming the notebooks that teach it and the knob that treats it, labkit's and deepagents'
  (or langchain's), as a :class:`Knob` whose name the tests look up in the installed packages.
  :func:`table` shows it; :data:`WHEN_NOT` and :func:`when_not` say when not to use the tools.
* :func:`diagnose` reads a ``scenario.Run`` — its records, messages, state and files — and
  returns one :class:`Finding` per symptom it sees: the row, and the numbers from the run that
  show it. Pure; the thresholds are this module's constants (:data:`THRESHOLDS`).
  :func:`report` shows findings as a table.
* :func:`reproduce` and :func:`fix` — each failure mode on cue, and the same run with its
  remedy, as a :class:`Case`. :func:`recipe` returns a recipe's source: the failure and its fix
  differ by the lines that test ``fixed``.

What it leaves out: judgement. The detectors read numbers and the lab model's fixed replies
(``prompts.GOAL_LOST``), never a real model's wording; symptoms a run has no number for (answers
that got worse, a summary in a stream) are in the table but not detected. Isolated children are
recorded by ``IsolateMiddleware``, not by the run's own recorder, so their cost is not diagnosed.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from labkit import scenario
from labkit.tables import Table
from labkit.tokens import count_tokens

__all__ = [
    "COST_GROWTH",
    "COST_MIN_TOKENS",
    "Case",
    "Finding",
    "Knob",
    "LABELS",
    "MODES",
    "NaiveCut",
    "RAW_REPLY_TOKENS",
    "ROWS",
    "Row",
    "TAX_MIN_TOKENS",
    "TAX_SHARE",
    "THRESHOLDS",
    "Text",
    "WHEN_NOT",
    "When",
    "compare",
    "diagnose",
    "fix",
    "recipe",
    "report",
    "reproduce",
    "row",
    "table",
    "when_not",
]

LANGUAGES = ("en", "zh")

# -- thresholds: below them a run is not flagged ---------------------------------------------------

COST_MIN_TOKENS = 1_000_000
"""Cost blow-up: a run that sends fewer input tokens than this is cheap, whatever its shape."""
COST_GROWTH = 20
"""Cost blow-up: the average call carries at least this many times the first call's tokens."""
TAX_SHARE = 0.40
"""Tool-schema tax: schemas are at least this share of all the tokens sent..."""
TAX_MIN_TOKENS = 25_000
"""...and at least this many tokens over the run (a small share of a cheap run is no problem)."""
RAW_REPLY_TOKENS = 2_000
"""Raw dump: a ``task`` reply longer than this is raw data, not a report (reports are ~100)."""

THRESHOLDS = {
    "COST_MIN_TOKENS": "cost blow-up: tokens sent over the run, at least",
    "COST_GROWTH": "cost blow-up: average call ÷ first call, at least",
    "TAX_SHARE": "tool-schema tax: share of the tokens sent, at least",
    "TAX_MIN_TOKENS": "tool-schema tax: schema tokens over the run, at least",
    "RAW_REPLY_TOKENS": "raw dump: tokens in one task reply, more than",
}


# -- the table, as data ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Text:
    """One row's words in one language."""

    symptom: str
    cause: str
    remedy: str


@dataclass(frozen=True)
class Knob:
    """What to write (``code``), and where it lives: ``target`` (a dotted path) and the
    parameter or field it sets (``param``), so a renamed option fails a test, not a learner."""

    code: str
    target: str
    param: str | None = None

    def resolve(self) -> Any:
        """The object ``target`` names (raises if it is gone)."""
        module, _, name = self.target.rpartition(".")
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):  # a method: Class.method
            owner, _, cls = module.rpartition(".")
            return getattr(getattr(importlib.import_module(owner), cls), name)


@dataclass(frozen=True)
class Row:
    """One line of the table: a symptom in both languages, the notebooks that teach it, the
    knobs that treat it, and whether :func:`diagnose` looks for it."""

    key: str
    notebooks: tuple[str, ...]
    en: Text
    zh: Text
    labkit: Knob
    deepagents: Knob
    detected: bool = True

    def text(self, language: str = "en") -> Text:
        return getattr(self, _language(language))


def _language(language: str) -> str:
    if language not in LANGUAGES:
        raise ValueError(f"language must be 'en' or 'zh', not {language!r}")
    return language


_FS = "deepagents.middleware.filesystem.FilesystemMiddleware"
_DEEP_SUMMARY = "deepagents.middleware.summarization.SummarizationMiddleware"
_SUMMARIZE = "labkit.summarize.SummarizeMiddleware"

ROWS: tuple[Row, ...] = (
    Row("hard_overflow", ("01", "04"),
        Text("The run stops with a context-overflow error.",
             "One tool result, with the history around it, no longer fits the window.",
             "Offload big results to files: the context keeps a path and a preview; read_file "
             "or grep brings back the rest. (deepagents counts characters: it evicts a result "
             "over 4 × tool_token_limit_before_evict of them.)"),
        Text("运行直接报上下文超长错误而终止。",
             "某个工具结果太大，连同已有历史一起塞不进窗口。",
             "卸载：把大结果写进文件，上下文里只留路径和预览，需要时用 read_file 或 grep 取回。"
             "（deepagents 按字符数判断：结果超过 4 × tool_token_limit_before_evict 个字符才卸载。）"),
        Knob("OffloadMiddleware(tool_limit=20_000)", "labkit.offload.OffloadMiddleware", "tool_limit"),
        Knob("FilesystemMiddleware(tool_token_limit_before_evict=20_000)", _FS,
             "tool_token_limit_before_evict")),
    Row("slow_growth", ("12",),
        Text("Tokens climb call after call and the run dies late, with no single huge result.",
             "Many medium-size results pile up in one context.",
             "Isolate the noisy work in subagents; the parent keeps only their short replies."),
        Text("token 一轮轮往上涨，跑到后面才爆，却找不到哪一个结果特别大。",
             "许多中等大小的结果在同一个上下文里越积越多。",
             "隔离：把这类脏活交给子 agent，主 agent 只收它们的简短回复。"),
        Knob("IsolateMiddleware(model, subagents=[...])", "labkit.isolate.IsolateMiddleware", "subagents"),
        Knob("create_deep_agent(subagents=[...])", "deepagents.create_deep_agent", "subagents"),
        detected=False),
    Row("overflow_rescued", ("02", "11"),
        Text("A call is refused, then the run compacts and carries on.",
             "The compaction came from the overflow fallback, not the trigger: the trigger sits "
             "above what still fits, or one result leapt past it.",
             "Compact before the wall: a trigger below the window, and offload big results so "
             "the fallback never has to act."),
        Text("某次调用被拒，随后自动压缩、继续往下跑。",
             "压缩是超长回退触发的，不是 trigger：trigger 高过了窗口还能装下的量，或者某个结果一下子越过了它。",
             "在撞墙之前压缩：trigger 设在窗口以下，并先卸载大结果，让回退根本用不上。"),
        Knob('SummarizeMiddleware(model, trigger=("fraction", 0.85))', _SUMMARIZE, "trigger"),
        Knob('SummarizationMiddleware(model, backend=..., trigger=("fraction", 0.85))', _DEEP_SUMMARY,
             "trigger")),
    Row("no_profile", ("02", "07"),
        Text("Compaction never fires on its own; the run meets the wall first.",
             "The model has no profile, so deepagents uses its fallback — trigger 170,000 tokens, "
             "keep 6 messages — whatever the real window.",
             "Give the model a profile with max_input_tokens, or set trigger and keep yourself, "
             "in tokens or messages."),
        Text("压缩从来不会自己触发，先撞上的是硬报错。",
             "模型没有 profile，deepagents 就用回退值——170,000 token 触发、保留 6 条消息——与真实窗口无关。",
             "给模型配上带 max_input_tokens 的 profile，或者自己用 token 或消息数设置 trigger 和 keep。"),
        Knob("SummarizeMiddleware(model, window=100_000)", _SUMMARIZE, "window"),
        Knob('SummarizationMiddleware(model, backend=..., trigger=("tokens", 50_000), '
             'keep=("messages", 6))', _DEEP_SUMMARY, "trigger")),
    Row("goal_lost", ("14",),
        Text("After a compaction the agent asks what to do, or drifts off the task.",
             "The summary lost the user's request (deepagents' own constructor summarizes only "
             "the last 4,000 tokens of what it folds).",
             "Anchor the goal: a todo list (TodoListMiddleware, opt-in since deepagents 0.7) or a "
             "progress file; or build deepagents' summarization with its factory, which does not trim."),
        Text("压缩之后 agent 问你要做什么，或者做着做着跑偏了。",
             "摘要没保住用户的原始请求（deepagents 的构造函数默认只总结被压缩内容的最后 4,000 token）。",
             "给目标下锚：todo 清单（TodoListMiddleware，deepagents 0.7 起需手动挂）或进度文件；"
             "或者用工厂函数创建 deepagents 的压缩中间件，它不截断。"),
        Knob("SummarizeMiddleware(model)", _SUMMARIZE),
        Knob("TodoListMiddleware()", "langchain.agents.middleware.TodoListMiddleware")),
    Row("repeated_work", ("14",),
        Text("The agent redoes steps it has already done.",
             "Compaction folded away the evidence that those steps were done.",
             "Keep progress in a file (/progress.md) that the agent rewrites after each step and "
             "reads when it loses track."),
        Text("agent 把已经做过的步骤又做了一遍。",
             "压缩把“这一步已完成”的证据也摘掉了。",
             "把进度写进文件（/progress.md）：每完成一步就更新，迷路时先读它。"),
        Knob("system_prompt=model.PROGRESS_PROMPT", "labkit.model.PROGRESS_PROMPT"),
        Knob("create_deep_agent(system_prompt=...)", "deepagents.create_deep_agent", "system_prompt")),
    Row("needle_lost", ("09", "10"),
        Text("A question about an exact early figure gets a wrong answer, or none.",
             "The summary dropped the figure and nothing leads back to it: no archive, or no tool "
             "to open it.",
             "Keep amounts, ids and dates in files: archive what is folded and name the path in "
             "the summary (and keep read_file and grep), or ask the summary to keep exact figures."),
        Text("问到早先的某个精确数字，回答错了或答不出。",
             "摘要丢了这个数字，也没有路可以找回：没有留档，或者没有打开留档的工具。",
             "金额、ID、日期放进文件：把被压缩的内容留档，并在摘要里写明路径（别砍掉 read_file 和 grep），"
             "或者要求摘要保留精确数字。"),
        Knob("SummarizeMiddleware(model, keep_figures=True)", _SUMMARIZE, "keep_figures"),
        Knob("SummarizationMiddleware(model, backend=StateBackend())", _DEEP_SUMMARY, "backend")),
    Row("late_quality", ("11",),
        Text("Answers get worse right after a compaction.",
             "keep is too small, or the compaction came mid-task: the details the next step "
             "needed were folded.",
             "Raise keep, or compact at a task boundary with compact_conversation rather than "
             "mid-task."),
        Text("一压缩，后面的回答质量就明显下降。",
             "keep 太小，或者在任务中途压缩：下一步需要的细节被摘掉了。",
             "调大 keep，或者在任务边界用 compact_conversation 主动压缩，别在任务中途压。"),
        Knob("SummarizeMiddleware(model, manual_tool=True)", _SUMMARIZE, "manual_tool"),
        Knob("create_summarization_tool_middleware(model, backend)",
             "deepagents.middleware.summarization.create_summarization_tool_middleware"),
        detected=False),
    Row("cost_blowup", ("01", "04", "12"),
        Text("The run costs many times what you expected.",
             "Every call re-sends the whole history, and each summary is one more long call.",
             "Offload big results, isolate noisy work, send fewer tool schemas. Summarization "
             "does not save money by itself: each compaction is a model call over the history."),
        Text("一次运行的花费是预期的好几倍。",
             "每次调用都把全部历史重发一遍，每次摘要又是一次长上下文调用。",
             "卸载大结果、隔离脏活、少发工具 schema。压缩本身不省钱：每次压缩都是一次读完整段历史的模型调用。"),
        Knob("OffloadMiddleware()", "labkit.offload.OffloadMiddleware"),
        Knob("FilesystemMiddleware(tool_token_limit_before_evict=...)", _FS,
             "tool_token_limit_before_evict")),
    Row("tool_tax", ("06",),
        Text("Tool schemas are a large slice of every call.",
             "Tools the task never calls are sent on every call anyway.",
             "Send only the tools the task needs: FilesystemMiddleware(tools=[...]), or "
             "HarnessProfile(excluded_tools=...)."),
        Text("每次调用里，工具 schema 占了一大块。",
             "任务从来不用的工具，每次调用照样发一遍。",
             "只发任务真正需要的工具：FilesystemMiddleware(tools=[...])，或 HarnessProfile(excluded_tools=...)。"),
        Knob("IsolateMiddleware(model, subagents, file_tools=False)", "labkit.isolate.IsolateMiddleware",
             "file_tools"),
        Knob('FilesystemMiddleware(tools=["read_file", "write_file", "grep"])', _FS, "tools")),
    Row("orphan", ("08",),
        Text("The provider rejects the request (HTTP 400): a tool message with no tool call "
             "before it.",
             "A cut separated a tool call from its result.",
             "Cut only where it is safe: move the cut back to the AI message that made the calls. "
             "langchain's and deepagents' summarization already do; a hand-written trim must too."),
        Text("服务商拒绝请求（HTTP 400）：某条工具消息前面没有对应的工具调用。",
             "切点把工具调用和它的结果拆开了。",
             "只在安全处切：把切点往回移到发出这些调用的 AI 消息。langchain 和 deepagents 的压缩已经这么做，"
             "自己写的截断也必须如此。"),
        Knob("summarize.safe_cut(messages, cut)", "labkit.summarize.safe_cut"),
        Knob('SummarizationMiddleware(model, backend=..., keep=("messages", 5))', _DEEP_SUMMARY, "keep")),
    Row("raw_dump", ("12",),
        Text("The parent's context jumps after a task() call.",
             "The subagent's prompt does not ask for a short report, so it returns its raw data.",
             "In the subagent's system prompt, ask for a short report, with raw data in a file and "
             "only its path in the reply; cap its output as a last resort."),
        Text("一次 task() 调用之后，主 agent 的上下文猛涨。",
             "子 agent 的 prompt 没要求简短汇报，它就把原始数据整个吐了回来。",
             "在子 agent 的 system_prompt 里写明：只回简短报告，原始数据写进文件，回复里只给路径；"
             "实在不行再加输出上限。"),
        Knob("SubagentSpec(..., output_cap=400)", "labkit.isolate.SubagentSpec", "output_cap"),
        Knob('create_deep_agent(subagents=[{..., "system_prompt": ...}])', "deepagents.SubAgent",
             "system_prompt")),
    Row("summary_in_stream", ("10",),
        Text("Users see an odd conversation summary in the streamed output.",
             "The summarizer's own model call reaches a stream or callback that shows every call.",
             "deepagents runs summary calls with the nostream tag, so stream_mode='messages' "
             "omits them; in astream_events and callbacks, skip events whose metadata lc_source "
             "is 'summarization'."),
        Text("用户在流式输出里看到一段莫名其妙的会话摘要。",
             "摘要那次模型调用流进了会显示所有调用的流或回调。",
             "deepagents 给摘要调用打了 nostream 标签，stream_mode='messages' 里本就没有；"
             "在 astream_events 和回调里，跳过 metadata 中 lc_source 为 'summarization' 的事件。"),
        Knob("summarize.SUMMARY_TAGS", "labkit.summarize.SUMMARY_TAGS"),
        Knob('agent.stream(..., stream_mode="messages")', "langgraph.pregel.Pregel.stream",
             "stream_mode"),
        detected=False),
)

_HEADERS = {
    "en": ("symptom", "cause", "remedy", "labkit knob", "deepagents / langchain knob", "notebooks",
           "diagnose() detects it"),
    "zh": ("症状", "根因", "解法", "labkit 旋钮", "deepagents / langchain 旋钮", "笔记本", "能否自动诊断"),
}
_YES_NO = {"en": ("yes", "no"), "zh": ("能", "否")}


def row(key: str) -> Row:
    """The table's row for ``key``."""
    for r in ROWS:
        if r.key == key:
            return r
    raise KeyError(f"no row {key!r}; rows are {[r.key for r in ROWS]}")


def table(language: str = "en") -> Table:
    """The diagnostic table, in English (``"en"``) or Chinese (``"zh"``)."""
    lang = _language(language)
    head = _HEADERS[lang]
    rows = []
    for r in ROWS:
        t = r.text(lang)
        rows.append(dict(zip(head, (t.symptom, t.cause, t.remedy, r.labkit.code, r.deepagents.code,
                                    ", ".join(r.notebooks), _YES_NO[lang][not r.detected]))))
    return Table(rows, head)


# -- when not to use these tools -------------------------------------------------------------------


@dataclass(frozen=True)
class When:
    situation: str
    why: str
    instead: str


WHEN_NOT: tuple[tuple[str, When, When], ...] = (
    ("short_task",
     When("A short task that fits the window.",
          "None of the three mechanisms fires; their prompts and tool schemas ride along on every "
          "call for nothing.",
          "Use a plain create_agent with only the tools the task needs."),
     When("几步就能做完、窗口装得下的短任务。",
          "三招一个都不会触发，它们的提示词和工具 schema 却每次调用都白白带着。",
          "直接用 create_agent，只给任务需要的工具。")),
    ("exact_figures",
     When("Answers must quote exact figures or text, and nothing is archived.",
          "Summaries and subagent reports are lossy; without an archive the original is gone.",
          "Offload only — it loses nothing — and read the exact text back with read_file or grep."),
     When("答案必须逐字引用精确数字或原文，却没有留档。",
          "摘要和子 agent 报告都有损；没有留档，原文就没了。",
          "只用卸载（零损失），需要原文时用 read_file 或 grep 精确读回。")),
    ("summary_cost",
     When("Hoping summarization will cut the bill, or a chat that must answer fast.",
          "Each compaction is one more model call that reads the long history before the reply "
          "can go on.",
          "Save with offloading, isolation and fewer tools; keep the trigger high so compaction "
          "is rare; move long jobs off the chat path."),
     When("指望压缩来省钱，或者要求低延迟的对话。",
          "每次压缩都多一次模型调用，要先读完长历史，回复才能继续。",
          "省钱靠卸载、隔离和少发工具；trigger 设高些，让压缩少发生；长活儿挪到对话之外异步做。")),
    ("per_child_tax",
     When("Splitting a small job across subagents.",
          "Each child pays its own system prompt and tool schemas on every call, and parallel "
          "children add them up.",
          "Delegate only work whose raw data is much bigger than that per-child tax."),
     When("把一件小活拆给好几个子 agent。",
          "每个子 agent 每次调用都要重付自己的 system prompt 和工具 schema，并行时成倍叠加。",
          "只把原始数据远大于这笔固定开销的活派出去。")),
    ("audit",
     When("You need the whole conversation in the model's context, for an audit.",
          "Compaction replaces old messages in the model's view; the archive is a file, not context.",
          "Turn summarization off and control size with offloading and isolation; keep the full "
          "record in traces."),
     When("审计要求模型上下文里保留完整对话。",
          "压缩会把旧消息从模型视图里换掉；留档在文件里，不在上下文里。",
          "关掉压缩，用卸载和隔离控制容量；完整记录交给追踪系统。")),
)

_WHEN_HEADERS = {"en": ("situation", "why not", "instead"), "zh": ("场景", "为什么不用", "该怎么做")}


def when_not(language: str = "en") -> Table:
    """When not to use offloading, summarization or isolation, in English or Chinese."""
    lang = _language(language)
    head = _WHEN_HEADERS[lang]
    return Table([dict(zip(head, (w.situation, w.why, w.instead)))
                  for _, en, zh in WHEN_NOT for w in [en if lang == "en" else zh]], head)


# -- findings --------------------------------------------------------------------------------------

_EVIDENCE = {
    "hard_overflow": (
        "Call {call} asked for {tokens:,} tokens and was refused (ContextOverflowError); the run "
        "stopped after {turns} finished turn(s). The largest tool result in the history is "
        "{largest:,} tokens ({tool}).",
        "第 {call} 次调用需要 {tokens:,} token，被拒绝（ContextOverflowError）；运行在完成 {turns} "
        "轮后终止。历史中最大的工具结果有 {largest:,} token（{tool}）。"),
    "overflow_rescued": (
        "{refused} call(s) refused — the first, call {call}, at {tokens:,} tokens — and the run "
        "went on: call {retry} was retried with {retry_tokens:,} tokens, {summary:,} of them a "
        "summary.",
        "{refused} 次调用被拒——第一次是第 {call} 次，{tokens:,} token——之后运行继续：第 {retry} "
        "次调用以 {retry_tokens:,} token 重试，其中 {summary:,} token 是摘要。"),
    "no_profile": (
        "model.profile is None, so deepagents falls back to trigger {trigger} and keep {keep}; "
        "call {call} was refused at {tokens:,} tokens, below that trigger, before any compaction.",
        "model.profile 为 None，deepagents 回退到 trigger {trigger}、keep {keep}；第 {call} 次调用"
        "在 {tokens:,} token 时被拒，低于这个 trigger，此前一次压缩也没有。"),
    "goal_lost": (
        "{count} of the agent's {answers} final replies say it can no longer see the request; "
        "{summarized} of its {calls} model calls saw a summary in place of older messages.",
        "agent 的 {answers} 次最终回复中有 {count} 次说看不到用户的请求了；{calls} 次模型调用中有 "
        "{summarized} 次看到的是摘要而不是旧消息。"),
    "repeated_work": (
        "{count} data-tool call(s) redid work already done, on: {steps}.",
        "{count} 次数据工具调用重复了已完成的工作，涉及：{steps}。"),
    "needle_lost": (
        "The needle question was asked, and the last answer does not give the exact figure "
        "({figure}). Files that still hold it: {paths}.",
        "问了 needle 问题，最后的回答却没有给出精确数字（{figure}）。仍保存着它的文件：{paths}。"),
    "cost_blowup": (
        "{calls} model calls sent {sent:,} input tokens (${dollars:.2f} at the illustrative "
        "price); the average call carried {growth:.0f}× the {first:,} tokens of the first.",
        "{calls} 次模型调用共发送 {sent:,} 个输入 token（按示意价格 ${dollars:.2f}）；平均每次调用"
        "是第一次调用 {first:,} token 的 {growth:.0f} 倍。"),
    "tool_tax": (
        "Tool schemas were {share:.0%} of all tokens sent: {per_call:,} tokens on each of "
        "{calls} calls, {tax:,} in all.",
        "工具 schema 占全部发送 token 的 {share:.0%}：{calls} 次调用每次 {per_call:,} token，"
        "共 {tax:,}。"),
    "orphan": (
        "Call {call} was refused as an invalid history ({reason}): a cut separated a tool call "
        "from its result.",
        "第 {call} 次调用因历史无效被拒（{reason}）：切点把工具调用和它的结果拆开了。"),
    "raw_dump": (
        "{count} of {replies} task replies were over {limit:,} tokens (the largest {largest:,}): "
        "the subagents returned raw data, not reports.",
        "{replies} 个 task 回复中有 {count} 个超过 {limit:,} token（最大 {largest:,}）："
        "子 agent 交回的是原始数据，不是报告。"),
}
_NONE = {"en": "none", "zh": "无"}


@dataclass(frozen=True)
class Finding:
    """One symptom seen in a run: the row that treats it, and the run's numbers that show it."""

    key: str
    numbers: dict[str, Any] = field(default_factory=dict, hash=False)

    @property
    def row(self) -> Row:
        return row(self.key)

    def evidence(self, language: str = "en") -> str:
        """The numbers, as one sentence in English or Chinese."""
        lang = _language(language)
        shown = {k: (", ".join(map(str, v)) or _NONE[lang]) if isinstance(v, list) else v
                 for k, v in self.numbers.items()}  # lists (paths, steps) are joined
        return _EVIDENCE[self.key][LANGUAGES.index(lang)].format(**shown)

    def __str__(self) -> str:
        return f"{self.key}: {self.evidence()}"


def _ok(run) -> list:
    return [r for r in run.records if not r.error]


def _overflowed(record) -> bool:
    return bool(record.error) and record.error.startswith(ContextOverflowError.__name__)


def _largest_result(messages) -> tuple[int, str]:
    sizes = [(count_tokens(m), m.name or "tool") for m in messages if isinstance(m, ToolMessage)]
    return max(sizes, default=(0, "none"))


def _hard_overflow(run, score, model) -> Finding | None:
    if not isinstance(run.error, ContextOverflowError):
        return None
    failed = next((r for r in reversed(run.records) if r.error), None)
    largest, tool = _largest_result(run.messages)
    return Finding("hard_overflow", {"call": failed.index if failed else len(run.records),
                                     "tokens": failed.seen if failed else 0,
                                     "turns": run.turns_completed, "largest": largest, "tool": tool})


def _orphan(run, score, model) -> Finding | None:
    from labkit.model import InvalidHistoryError

    error = run.error
    text = str(error)
    provider_400 = getattr(error, "status_code", None) == 400 and "tool" in text.lower()
    if error is None or not (isinstance(error, InvalidHistoryError) or provider_400):
        return None
    failed = next((r for r in reversed(run.records) if r.error), None)
    return Finding("orphan", {"call": failed.index if failed else len(run.records),
                              "reason": text.split(" (")[0]})


def _overflow_rescued(run, score, model) -> Finding | None:
    if run.error is not None:
        return None
    refused = [r for r in run.records if _overflowed(r)]
    if not refused:
        return None
    first = refused[0]
    retry = next((r for r in run.records if r.index > first.index and not r.error), None)
    if retry is None:
        return None
    return Finding("overflow_rescued", {"refused": len(refused), "call": first.index,
                                        "tokens": first.seen, "retry": retry.index,
                                        "retry_tokens": retry.seen,
                                        "summary": retry.by_kind["summary"]})


def _no_profile(run, score, model) -> Finding | None:
    """Needs the model: only it knows it has no profile."""
    if model is None or getattr(model, "profile", None) is not None:
        return None
    from deepagents.middleware.summarization import compute_summarization_defaults

    defaults = compute_summarization_defaults(model)
    kind, limit = defaults["trigger"]
    for r in run.records:
        if r.by_kind["summary"]:
            return None  # something compacted before any refusal
        if _overflowed(r):
            if kind == "tokens" and r.seen >= limit:
                return None
            return Finding("no_profile", {"trigger": defaults["trigger"], "keep": defaults["keep"],
                                          "call": r.index, "tokens": r.seen})
    return None


def _raw_dump(run, score, model) -> Finding | None:
    replies = [count_tokens(m) for m in run.messages if isinstance(m, ToolMessage) and m.name == "task"]
    big = [n for n in replies if n > RAW_REPLY_TOKENS]
    if not big:
        return None
    return Finding("raw_dump", {"count": len(big), "replies": len(replies), "limit": RAW_REPLY_TOKENS,
                                "largest": max(big)})


def _goal_lost(run, score, model) -> Finding | None:
    if not score.goal_lost:
        return None
    answers = sum(isinstance(m, AIMessage) and not m.tool_calls for m in run.messages)
    return Finding("goal_lost", {"count": score.goal_lost, "answers": answers,
                                 "summarized": sum(r.by_kind["summary"] > 0 for r in run.records),
                                 "calls": len(run.records)})


def _repeated_work(run, score, model) -> Finding | None:
    if not score.steps_repeated:
        return None
    return Finding("repeated_work", {"count": score.steps_repeated, "steps": list(score.repeated)})


def _needle_lost(run, score, model) -> Finding | None:
    asked = any(isinstance(m, HumanMessage) and m.text == scenario.NEEDLE_QUESTION for m in run.messages)
    if not asked or score.needle_correct or run.error is not None:
        return None
    needle = scenario.needle()
    paths = sorted(p for p, text in run.files.items() if needle.find(text))
    return Finding("needle_lost", {"figure": needle.answer, "paths": paths})


def _cost_blowup(run, score, model) -> Finding | None:
    ok = _ok(run)
    sent = sum(r.seen for r in ok)
    if not ok or sent < COST_MIN_TOKENS:
        return None
    growth = sent / len(ok) / ok[0].seen
    if growth < COST_GROWTH:
        return None
    return Finding("cost_blowup", {"calls": len(ok), "sent": sent, "dollars": sum(r.cost for r in ok),
                                   "growth": growth, "first": ok[0].seen})


def _tool_tax(run, score, model) -> Finding | None:
    ok = _ok(run)
    sent, tax = sum(r.seen for r in ok), sum(r.by_kind["tools"] for r in ok)
    if not ok or tax < TAX_MIN_TOKENS or tax / sent < TAX_SHARE:
        return None
    return Finding("tool_tax", {"share": tax / sent, "per_call": max(r.by_kind["tools"] for r in ok),
                                "calls": len(ok), "tax": tax})


DETECTORS: tuple[Callable, ...] = (_hard_overflow, _orphan, _overflow_rescued, _no_profile, _raw_dump,
                                   _goal_lost, _repeated_work, _needle_lost, _cost_blowup, _tool_tax)


def diagnose(run, model=None) -> list[Finding]:
    """What went wrong in a recorded ``scenario.Run``, one :class:`Finding` per symptom seen.

    ``model`` (the chat model the run used) is needed for one symptom only: the no-profile trap,
    which a run's records cannot show by themselves. Nothing found: an empty list.

    Example:
        >>> # diagnose(scenario.run(LabModel(window=128_000)))[0].key
        >>> # 'hard_overflow'
    """
    if not isinstance(run, scenario.Run):
        raise TypeError(f"diagnose() reads a scenario.Run, not {type(run).__name__}")
    score = scenario.score(run)
    return [f for f in (detect(run, score, model) for detect in DETECTORS) if f is not None]


_REPORT_HEADERS = {"en": ("finding", "evidence", "remedy", "knobs", "notebooks"),
                   "zh": ("症状", "证据", "解法", "旋钮", "笔记本")}
_HEALTHY = {"en": ("no finding", "nothing in this run crosses a threshold"),
            "zh": ("无发现", "这次运行没有任何指标越过阈值")}


def report(findings: Sequence[Finding], language: str = "en") -> Table:
    """Findings as a table: symptom, evidence, remedy, knobs, notebooks (one row if none)."""
    lang = _language(language)
    head = _REPORT_HEADERS[lang]
    if not findings:
        return Table([dict(zip(head, _HEALTHY[lang]))], head)
    rows = []
    for f in findings:
        t = f.row.text(lang)
        rows.append(dict(zip(head, (t.symptom, f.evidence(lang), t.remedy,
                                    f"{f.row.labkit.code} · {f.row.deepagents.code}",
                                    ", ".join(f.row.notebooks)))))
    return Table(rows, head)


# -- the failure modes, on cue ---------------------------------------------------------------------

NAIVE_SUMMARY = "Summary of the earlier conversation: the work so far."


class NaiveCut(AgentMiddleware):
    """Notebook 08's bug, kept for the clinic: above ``trigger`` messages, show the model a
    one-line summary and the last ``keep`` messages, wherever that cut falls."""

    name = "labkit.NaiveCut"

    def __init__(self, trigger: int = 8, keep: int = 5) -> None:
        super().__init__()
        for knob, n in (("trigger", trigger), ("keep", keep)):
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ValueError(f"{knob} must be a whole number of messages, 1 or more; got {n!r}")
        if keep >= trigger:
            raise ValueError(f"keep ({keep}) must be below trigger ({trigger})")
        self.trigger, self.keep = trigger, keep

    def wrap_model_call(self, request, handler):
        messages = list(request.messages)
        if len(messages) > self.trigger:
            request = request.override(messages=[HumanMessage(NAIVE_SUMMARY), *messages[-self.keep:]])
        return handler(request)


def _hard_overflow_recipe(fixed: bool):
    """Notebook 01's naive run on a 128k window; the fix offloads big results (notebook 04)."""
    from labkit.model import LabModel
    from labkit.offload import OffloadMiddleware

    model = LabModel(window=128_000)
    middleware = [OffloadMiddleware()] if fixed else []
    return model, scenario.run(model, middleware=middleware)


def _no_profile_recipe(fixed: bool):
    """Notebook 02: create_deep_agent on a 100k model with no profile (fallback trigger 170,000
    tokens); the fix sets the trigger in tokens, and like deepagents' factory does not trim."""
    from deepagents.backends import StateBackend
    from deepagents.middleware.summarization import SummarizationMiddleware

    from labkit.model import LabModel

    model = LabModel(window=100_000, profile=None)
    middleware = [SummarizationMiddleware(model, backend=StateBackend(), trigger=("tokens", 50_000),
                                          keep=("messages", 6), trim_tokens_to_summarize=None)
                  ] if fixed else []
    return model, scenario.run(model, middleware=middleware, harness="deep")


def _goal_lost_recipe(fixed: bool):
    """Notebook 14: deepagents' SummarizationMiddleware built directly, every 8 messages, keep 4
    (its constructor's 4,000-token trim), a user who repeats the request; the fix: a todo list."""
    from labkit import evals
    from labkit.model import LabModel

    model = LabModel(window=1_000_000)
    return model, evals.forced_compaction("todo" if fixed else "none", trigger=8, keep=4, model=model)


def _needle_lost_recipe(fixed: bool):
    """Notebook 10: langchain's SummarizationMiddleware rewrites state and keeps no archive; the
    fix is labkit's, which archives what it folds and names the path in the summary."""
    from langchain.agents.middleware import SummarizationMiddleware as LangchainSummarization

    from labkit.model import LabModel
    from labkit.summarize import SummarizeMiddleware

    model = LabModel(window=128_000)
    middleware = SummarizeMiddleware(model) if fixed else LangchainSummarization(
        model, trigger=("fraction", 0.85), keep=("fraction", 0.10), token_counter=count_tokens,
        trim_tokens_to_summarize=None)
    return model, scenario.run(model, middleware=[middleware])


def _cost_blowup_recipe(fixed: bool):
    """Notebook 01: on a 1,000,000-token model the naive run fits, and re-sends every export on
    every call; the fix offloads them (notebook 04)."""
    from labkit.model import LabModel
    from labkit.offload import OffloadMiddleware

    model = LabModel(window=1_000_000)
    middleware = [OffloadMiddleware()] if fixed else []
    return model, scenario.run(model, middleware=middleware)


def _tool_tax_recipe(fixed: bool):
    """Notebook 06: create_deep_agent evicting every result over 1,000 tokens (4,000 characters),
    so the tool schemas become a large slice of every call; the fix sends only the file tools it
    uses."""
    from deepagents.middleware.filesystem import FilesystemMiddleware

    from labkit.model import LabModel

    model = LabModel(window=128_000)
    tools = {"tools": ["read_file", "write_file", "grep"]} if fixed else {}
    files = FilesystemMiddleware(tool_token_limit_before_evict=1_000, **tools)
    return model, scenario.run(model, middleware=[files], harness="deep")


def _orphan_recipe(fixed: bool):
    """Notebook 08: a hand-made compaction keeps the last 5 messages wherever that cuts; the fix
    is labkit's, whose cut moves back to the AI message that made the tool calls."""
    from labkit.model import LabModel
    from labkit.summarize import SummarizeMiddleware

    model = LabModel(window=128_000)
    middleware = SummarizeMiddleware(model, trigger=("messages", 8), keep=("messages", 5)
                                     ) if fixed else NaiveCut(trigger=8, keep=5)
    return model, scenario.run(model, middleware=[middleware])


def _raw_dump_recipe(fixed: bool):
    """Notebook 12: researcher subagents that reply with their raw data; the fix asks them to
    save it to a file and reply with the path."""
    from labkit.isolate import IsolateMiddleware, SubagentSpec
    from labkit.model import LabModel

    model = LabModel(window=128_000, delegate_research=True, raw_subagent_output=True)
    spec = SubagentSpec(**scenario.researcher(notes=fixed))
    return model, scenario.run(model, middleware=[IsolateMiddleware(model, [spec])],
                               turns=scenario.FANOUT_TURNS)


_RECIPES: dict[str, Callable[[bool], tuple]] = {
    "hard_overflow": _hard_overflow_recipe,
    "no_profile": _no_profile_recipe,
    "goal_lost": _goal_lost_recipe,
    "needle_lost": _needle_lost_recipe,
    "cost_blowup": _cost_blowup_recipe,
    "tool_tax": _tool_tax_recipe,
    "orphan": _orphan_recipe,
    "raw_dump": _raw_dump_recipe,
}
MODES = tuple(_RECIPES)
LABELS = {"hard_overflow": "hard overflow", "no_profile": "no profile", "goal_lost": "soft amnesia",
          "needle_lost": "needle lost", "cost_blowup": "cost blow-up", "tool_tax": "tool-schema tax",
          "orphan": "orphan tool message", "raw_dump": "raw subagent dump"}


@dataclass(frozen=True, eq=False)
class Case:
    """One run of a failure mode (``fixed=False``) or of its remedy: the run and its model."""

    mode: str
    fixed: bool
    run: Any
    model: Any

    @cached_property
    def findings(self) -> list[Finding]:
        return diagnose(self.run, self.model)

    @property
    def window(self) -> int | None:
        return getattr(self.model, "window", None)

    @property
    def label(self) -> str:
        return f"{LABELS[self.mode]}, {'with the fix' if self.fixed else 'the failure'}"


def _recipe(mode: str) -> Callable[[bool], tuple]:
    if mode not in _RECIPES:
        raise ValueError(f"unknown failure mode {mode!r}; choose one of {', '.join(MODES)}")
    return _RECIPES[mode]


def reproduce(mode: str) -> Case:
    """Run failure mode ``mode`` (one of :data:`MODES`) as the course first showed it."""
    model, run = _recipe(mode)(False)
    return Case(mode, False, run, model)


def fix(mode: str) -> Case:
    """Run the same failure mode with its remedy applied."""
    model, run = _recipe(mode)(True)
    return Case(mode, True, run, model)


def recipe(mode: str) -> str:
    """The source of ``mode``'s recipe: what :func:`reproduce` and :func:`fix` run."""
    return inspect.getsource(_recipe(mode))


def compare(*cases: Case) -> Table:
    """One row per case: calls, refusals, tokens sent, peak, goal, needle and its findings."""
    rows = []
    for c in cases:
        ok, score = _ok(c.run), scenario.score(c.run)
        rows.append({"run": c.label, "model calls": len(c.run.records),
                     "refused calls": len(c.run.records) - len(ok),
                     "tokens sent": sum(r.seen for r in ok),
                     "peak": max((r.seen for r in c.run.records), default=0),
                     "goal completed": score.goal_completed, "needle": score.needle_correct,
                     "findings": ", ".join(f.key for f in c.findings) or "none"})
    return Table(rows)
