"""The diagnostic table (诊断表) as data, in English and Chinese. Notebook 16 reads it first.

* :data:`ROWS` — one frozen :class:`Row` per symptom: its cause and remedy, the notebooks that
  teach it, and the knob that treats it, labkit's and deepagents' (or langchain's), as a
  :class:`Knob` whose name the tests look up in the installed packages. :func:`table` shows it.
* :data:`EVIDENCE` — the sentence each finding's numbers are written into, in both languages.

What it leaves out: how a symptom is detected (``findings``) and how it is reproduced
(``recipes``). The Chinese is a translation of the same rows, not a second table.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from labkit.tables import Table

__all__ = [
    "EVIDENCE",
    "LANGUAGES",
    "ROWS",
    "Knob",
    "Row",
    "Text",
    "check_language",
    "row",
    "table",
]

LANGUAGES = ("en", "zh")


def check_language(language: str) -> str:
    """``language`` if the clinic speaks it (``"en"`` or ``"zh"``), else ValueError. Notebook 16."""
    if language not in LANGUAGES:
        raise ValueError(f"language must be 'en' or 'zh', not {language!r}")
    return language


@dataclass(frozen=True)
class Text:
    """One row's words in one language (notebook 16)."""

    symptom: str
    cause: str
    remedy: str


@dataclass(frozen=True)
class Knob:
    """What to write (``code``), and where it lives: ``target`` (a dotted path) and the
    parameter or field it sets (``param``), so a renamed option fails a test, not a learner.
    Notebook 16 resolves every knob against the installed packages."""

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
    """One line of the table (notebook 16): a symptom in both languages, the notebooks that
    teach it, the knobs that treat it, and whether ``diagnose()`` looks for it."""

    key: str
    notebooks: tuple[str, ...]
    en: Text
    zh: Text
    labkit: Knob
    deepagents: Knob
    detected: bool = True

    def text(self, language: str = "en") -> Text:
        """The row's words in ``language``."""
        return getattr(self, check_language(language))


# -- symptom -> cause -> remedy --------------------------------------------------------------------

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
        Knob("OffloadMiddleware(tool_limit=8_000)", "labkit.offload.OffloadMiddleware", "tool_limit"),
        Knob("FilesystemMiddleware(tool_token_limit_before_evict=5_000)", _FS,
             "tool_token_limit_before_evict")),
    Row("slow_growth", ("12",),
        Text("Tokens climb call after call and the run dies late, with no single huge result.",
             "Many medium-size results pile up in one context.",
             "Isolate the noisy work in subagents; the parent keeps only their short replies."),
        Text("词元一轮轮往上涨，跑到后面才爆，却找不到哪一个结果特别大。",
             "许多中等大小的结果在同一个上下文里越积越多。",
             "隔离：把这类产生大量中间结果的工作交给子智能体，主智能体只收它们的简短回复。"),
        Knob("IsolateMiddleware(model, subagents=[...])", "labkit.isolate.IsolateMiddleware", "subagents"),
        Knob("create_deep_agent(subagents=[...])", "deepagents.create_deep_agent", "subagents"),
        detected=False),
    Row("overflow_rescued", ("02", "11"),
        Text("A call is refused, then the run compacts and carries on.",
             "The compaction came from the overflow fallback, not the trigger: the trigger sits "
             "above what still fits; or deepagents' chars/4 estimate undercounts the request (CSV "
             "and Chinese run at about half of it: notebooks 02, 09, 10), so its trigger and "
             "budget think it fits; or one result leapt past it.",
             "Compact before the wall: offload big results first, so that no single result can "
             "leap past the trigger and the estimate's error stays small beside the window."),
        Text("某次调用被拒，随后自动压缩、继续往下跑。",
             "压缩是溢出回退触发的，不是触发阈值：触发阈值高过了窗口还能装下的量；或者 deepagents "
             "用字符数/4 估算，低估了请求（CSV 和中文只有实际的一半左右：见笔记本 02、09、10），"
             "它的触发阈值和预算都以为还装得下；或者某个结果一下子越过了它。",
             "在撞墙之前压缩：先卸载大结果，让任何单个结果都跳不过触发阈值，估算误差相对窗口也就小了。"),
        Knob("OffloadMiddleware(tool_limit=8_000)", "labkit.offload.OffloadMiddleware", "tool_limit"),
        Knob("FilesystemMiddleware(tool_token_limit_before_evict=5_000)", _FS,
             "tool_token_limit_before_evict")),
    Row("no_profile", ("02", "07"),
        Text("Compaction never fires on its own; the run meets the wall first.",
             "The model has no profile, so deepagents uses its fallback — trigger 170,000 tokens, "
             "keep 6 messages — whatever the real window.",
             "Give the model a profile with max_input_tokens, or set trigger and keep yourself, "
             "in tokens or messages."),
        Text("压缩从来不会自己触发，先撞上的是硬报错。",
             "模型没有模型配置（profile），deepagents 就用回退值——170,000 词元触发、保留 6 条消息——"
             "与真实窗口无关。",
             "给模型配上带 max_input_tokens 的模型配置（profile），或者自己用词元或消息数设置触发阈值"
             "和 keep。"),
        Knob('SummarizeMiddleware(model, window=100_000, trigger=("fraction", 0.85))', _SUMMARIZE, "window"),
        Knob('SummarizationMiddleware(model, backend=..., trigger=("tokens", 50_000), '
             'keep=("messages", 6))', _DEEP_SUMMARY, "trigger")),
    Row("goal_lost", ("14",),
        Text("After a compaction the agent asks what to do, or drifts off the task.",
             "The summary lost the user's request: deepagents' SummarizationMiddleware built "
             "directly trims what it folds with langchain's trim_messages(strategy=\"last\", "
             "start_on=\"human\") to 4,000 tokens, and the kept part must start at a human "
             "message — when the last one is more than 4,000 tokens back, nothing is summarized "
             "(notebook 10, \"Why deepagents' summary came out empty\").",
             "Anchor the goal: a todo list (TodoListMiddleware, opt-in since deepagents 0.7) or a "
             "progress file; or build deepagents' summarization with its factory, which does not trim."),
        Text("压缩之后智能体问你要做什么，或者做着做着跑偏了。",
             "摘要没保住用户的原始请求：直接构造的 deepagents SummarizationMiddleware 用 langchain 的 "
             "trim_messages(strategy=\"last\", start_on=\"human\") 把要压缩的内容截到 4,000 词元，"
             "而保留的部分必须从一条用户（human）消息开始——最后一条用户消息若在 4,000 词元之外，"
             "就什么也总结不了"
             "（见 notebook 10“Why deepagents' summary came out empty”）。",
             "给目标下锚：todo 清单（TodoListMiddleware，deepagents 0.7 起需手动挂）或进度文件；"
             "或者用工厂函数创建 deepagents 的压缩中间件，它不截断。"),
        Knob("SummarizeMiddleware(model)", _SUMMARIZE),
        Knob("TodoListMiddleware()", "langchain.agents.middleware.TodoListMiddleware")),
    Row("repeated_work", ("14",),
        Text("The agent redoes steps it has already done.",
             "Compaction folded away the evidence that those steps were done.",
             "Keep progress in a file (/progress.md) that the agent rewrites after each step and "
             "reads when it loses track."),
        Text("智能体把已经做过的步骤又做了一遍。",
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
             "摘要丢了这个数字，也没有路可以找回：没有归档，或者没有打开归档的工具。",
             "金额、ID、日期放进文件：把被压缩的内容归档，并在摘要里写明路径（别砍掉 read_file 和 grep），"
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
             "卸载大结果、隔离产生大量中间结果的工作、少发工具定义。"
             "压缩本身不省钱：每次压缩都是一次读完整段历史的模型调用。"),
        Knob("OffloadMiddleware(tool_limit=8_000)", "labkit.offload.OffloadMiddleware", "tool_limit"),
        Knob("FilesystemMiddleware(tool_token_limit_before_evict=5_000)", _FS,
             "tool_token_limit_before_evict")),
    Row("tool_tax", ("06",),
        Text("Tool schemas are a large slice of every call, and a large cost over the run.",
             "Tools the task never calls are sent on every call anyway — a whole toolbox handed "
             "to the agent.",
             "Send only the tools the task needs: leave the rest out of tools=[...], exclude them "
             "by name (HarnessProfile(excluded_tools=...)), or give them to a subagent that needs "
             "them, so the parent carries only task()."),
        Text("每次调用里工具定义都占一大块，整次运行下来花费可观。",
             "任务从来不用的工具（整套工具箱都交给了智能体），每次调用照样发一遍。",
             "只发任务真正需要的工具：不用的别放进 tools=[...]，或按名字排除"
             "（HarnessProfile(excluded_tools=...)），或交给需要它们的子智能体，主智能体只带 task()。"),
        Knob("SubagentSpec(..., tools=scenario.toolbox())", "labkit.isolate.SubagentSpec", "tools"),
        Knob('register_harness_profile("provider:model", HarnessProfile(excluded_tools=frozenset(unused)))',
             "deepagents.HarnessProfile", "excluded_tools")),
    Row("cache_thrash", ("01", "05"),
        Text("Input costs far more than tokens × the cached price: little is read from the "
             "provider's prompt cache.",
             "The start of the request changes from call to call — a time or a per-call note in "
             "the system prompt, tools in a changing order, old messages rewritten (argument "
             "shortening, frequent compactions) — so no call begins as an earlier one did.",
             "Keep the start stable: put what changes at the end, in the newest message; keep the "
             "tool list and its order fixed; let rewrites of old messages fire rarely, since "
             "each re-sends everything after it at the full input price."),
        Text("输入花费远高于“词元数 × 缓存价”：几乎没有从服务商的提示缓存里读到什么。",
             "请求的开头每次调用都在变——系统提示词里写了时间或每次不同的说明、工具顺序在变、"
             "旧消息被改写（参数截断、频繁压缩）——没有一次调用的开头和之前的一样。",
             "让开头保持不变：会变的内容放到最后，放进最新一条消息；工具列表和顺序固定；"
             "改写旧消息的操作少触发，因为每次改写都会让其后的全部内容按全价重新计费。"),
        Knob("OffloadMiddleware(args_trigger=None)", "labkit.offload.OffloadMiddleware", "args_trigger"),
        Knob('AnthropicPromptCachingMiddleware(ttl="1h")',
             "langchain_anthropic.middleware.AnthropicPromptCachingMiddleware", "ttl")),
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
             "The subagent's system prompt sets no limit on its reply, so it returns everything "
             "its tools returned.",
             "In the subagent's system prompt, ask for a short report, with raw data in a file and "
             "only its path in the reply; cap its output as a last resort."),
        Text("一次 task() 调用之后，主智能体的上下文猛涨。",
             "子智能体的 system_prompt 没有限定回复的内容，它就把工具返回的原始数据整个交了回来。",
             "在子智能体的 system_prompt 里写明：只回简短报告，原始数据写进文件，回复里只给路径；"
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
    """The table's row for ``key`` (notebook 16)."""
    for r in ROWS:
        if r.key == key:
            return r
    raise KeyError(f"no row {key!r}; rows are {[r.key for r in ROWS]}")


def table(language: str = "en") -> Table:
    """The diagnostic table, in English (``"en"``) or Chinese (``"zh"``). Notebook 16."""
    lang = check_language(language)
    head = _HEADERS[lang]
    rows = []
    for r in ROWS:
        t = r.text(lang)
        rows.append(dict(zip(head, (t.symptom, t.cause, t.remedy, r.labkit.code, r.deepagents.code,
                                    ", ".join(r.notebooks), _YES_NO[lang][not r.detected]))))
    return Table(rows, head)


# -- the evidence of a finding: its numbers, in a sentence -----------------------------------------

EVIDENCE: dict[str, tuple[str, str]] = {
    "hard_overflow": (
        "Call {call} asked for {tokens:,} tokens and was refused (ContextOverflowError); the run "
        "stopped after {turns} finished turn(s). The largest tool result in the history is "
        "{largest:,} tokens ({tool}).",
        "第 {call} 次调用需要 {tokens:,} 词元，被拒绝（ContextOverflowError）；运行在完成 {turns} "
        "轮后终止。历史中最大的工具结果有 {largest:,} 词元（{tool}）。"),
    "overflow_rescued": (
        "{refused} call(s) refused — the first, call {call}, at {tokens:,} tokens — and the run "
        "went on: call {retry} was retried with {retry_tokens:,} tokens, {summary:,} of them a "
        "summary.",
        "{refused} 次调用被拒——第一次是第 {call} 次，{tokens:,} 词元——之后运行继续：第 {retry} "
        "次调用以 {retry_tokens:,} 词元重试，其中 {summary:,} 词元是摘要。"),
    "no_profile": (
        "model.profile is None, so deepagents falls back to trigger {trigger} and keep {keep}; "
        "call {call} was refused at {tokens:,} tokens, below that trigger, before any compaction.",
        "model.profile 为 None，deepagents 回退到触发阈值 {trigger}、keep {keep}；第 {call} 次调用"
        "在 {tokens:,} 词元时被拒，低于这个触发阈值，此前一次压缩也没有。"),
    "goal_lost": (
        "{count} of the agent's {answers} final replies say it can no longer see the request; "
        "{summarized} of its {calls} model calls saw a summary in place of older messages.",
        "智能体的 {answers} 次最终回复中有 {count} 次说看不到用户的请求了；{calls} 次模型调用中有 "
        "{summarized} 次看到的是摘要而不是旧消息。"),
    "repeated_work": (
        "{count} tool call(s) redid work already done, on: {steps}.{loop}",
        "{count} 次工具调用重复了已完成的工作，涉及：{steps}。{loop_zh}"),
    "needle_lost": (
        "The needle question was asked, and the last answer does not give the exact figure "
        "({figure}). Files that still hold it: {paths}.",
        "问了 needle 问题，最后的回答却没有给出精确数字（{figure}）。仍保存着它的文件：{paths}。"),
    "cost_blowup": (
        "{calls} model calls sent {sent:,} input tokens (${dollars:.2f} at the illustrative "
        "price); the average call carried {growth:.0f}× the {first:,} tokens of the first.",
        "{calls} 次模型调用共发送 {sent:,} 个输入词元（按示意价格 ${dollars:.2f}）；平均每次调用"
        "是第一次调用 {first:,} 词元的 {growth:.0f} 倍。"),
    "tool_tax": (
        "Tool schemas were {share:.0%} of all tokens sent: {per_call:,} tokens on each of "
        "{calls} calls, {tax:,} in all.",
        "工具定义占全部发送词元的 {share:.0%}：{calls} 次调用每次 {per_call:,} 词元，"
        "共 {tax:,}。"),
    "cache_thrash": (
        "A prompt cache could serve {share:.0%} of the input of {calls} calls ({read:,} of "
        "{possible:,} tokens, OpenAI's rule); {head} of them did not even share the tools and "
        "system prompt with an earlier call.",
        "提示缓存只能覆盖 {calls} 次调用输入的 {share:.0%}（{possible:,} 个词元中的 {read:,} 个，"
        "按 OpenAI 的规则）；其中 {head} 次连工具定义和系统提示词都没能和之前的调用共享。"),
    "orphan": (
        "Call {call} was refused as an invalid history ({reason}): a cut separated a tool call "
        "from its result.",
        "第 {call} 次调用因历史无效被拒（{reason}）：切点把工具调用和它的结果拆开了。"),
    "raw_dump": (
        "{count} of {replies} task replies were over {limit:,} tokens (the largest {largest:,}): "
        "the subagents returned raw data, not reports.",
        "{replies} 个 task 回复中有 {count} 个超过 {limit:,} 词元（最大 {largest:,}）："
        "子智能体交回的是原始数据，不是报告。"),
}
