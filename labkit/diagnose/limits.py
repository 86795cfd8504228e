"""When not to use offloading, summarization or isolation at all, in English and Chinese.

Notebook 16 ends with it: a short task, exact figures with no archive, what a summary costs,
isolation's per-child tax. :data:`WHEN_NOT` is the data; :func:`when_not` shows it as a table.
What it leaves out: the symptoms and their remedies (``rows``).
"""

from __future__ import annotations

from dataclasses import dataclass

from labkit.diagnose.rows import check_language
from labkit.tables import Table

__all__ = ["WHEN_NOT", "When", "when_not"]


@dataclass(frozen=True)
class When:
    """One case where offloading, summarization or isolation is the wrong tool (notebook 16)."""

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
          "三招一个都不会触发，它们的提示词和工具定义却每次调用都白白带着。",
          "直接用 create_agent，只给任务需要的工具。")),
    ("exact_figures",
     When("Answers must quote exact figures or text, and nothing is archived.",
          "Summaries and subagent reports are lossy; without an archive the original is gone.",
          "Offload only — it loses nothing — and read the exact text back with read_file or grep."),
     When("答案必须逐字引用精确数字或原文，却没有归档。",
          "摘要和子智能体报告都有损；没有归档，原文就没了。",
          "只用卸载（零损失），需要原文时用 read_file 或 grep 精确读回。")),
    ("summary_cost",
     When("Hoping summarization will cut the bill, or a chat that must answer fast.",
          "Each compaction is one more model call that reads the long history before the reply "
          "can go on.",
          "Save with offloading, isolation and fewer tools; keep the trigger high so compaction "
          "is rare; move long jobs off the chat path."),
     When("指望压缩来省钱，或者要求低延迟的对话。",
          "每次压缩都多一次模型调用，要先读完长历史，回复才能继续。",
          "省钱靠卸载、隔离和少发工具；触发阈值设高些，让压缩少发生；长活儿挪到对话之外异步做。")),
    ("per_child_tax",
     When("Splitting a small job across subagents.",
          "Each child pays its own system prompt and tool schemas on every call, and parallel "
          "children add them up.",
          "Delegate only work whose raw data is much bigger than that per-child tax."),
     When("把一件小活拆给好几个子智能体。",
          "每个子智能体每次调用都要重付自己的系统提示词和工具定义，并行时成倍叠加。",
          "只把原始数据远大于这笔固定开销的活派出去。")),
    ("audit",
     When("You need the whole conversation in the model's context, for an audit.",
          "Compaction replaces old messages in the model's view; the archive is a file, not context.",
          "Turn summarization off and control size with offloading and isolation; keep the full "
          "record in traces."),
     When("审计要求模型上下文里保留完整对话。",
          "压缩会把旧消息从模型视图里换掉；归档在文件里，不在上下文里。",
          "关掉压缩，用卸载和隔离控制容量；完整记录交给追踪系统。")),
)

_WHEN_HEADERS = {"en": ("situation", "why not", "instead"), "zh": ("场景", "为什么不用", "该怎么做")}


def when_not(language: str = "en") -> Table:
    """When not to use offloading, summarization or isolation, in English or Chinese. Notebook 16."""
    lang = check_language(language)
    head = _WHEN_HEADERS[lang]
    return Table([dict(zip(head, (w.situation, w.why, w.instead)))
                  for _, en, zh in WHEN_NOT for w in [en if lang == "en" else zh]], head)
