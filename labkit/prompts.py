"""Text that learners read: the lab model's fixed replies and labkit's summary prompt.

Kept apart from the logic so a change to any of it is a visible diff (tests snapshot them).
"""

from __future__ import annotations

__all__ = [
    "ARG_TRUNCATED",
    "ARG_TRUNCATED_EDIT",
    "COMPACT_DONE",
    "COMPACT_REFUSED",
    "GOAL_LOST",
    "KEEP_FIGURES",
    "LAB_MODEL_INTRO",
    "NEEDLE_NOT_FOUND",
    "OFFLOAD_HUMAN_STUB",
    "OFFLOAD_RESULT_STUB",
    "SUMMARY_PROMPT",
    "SUMMARY_SECTIONS",
]

LAB_MODEL_INTRO = (
    "I am labkit's LabModel: a scripted, deterministic stand-in for a chat model, not a language "
    "model. I only act inside the course's lab scenarios (the weekly competitor report), using "
    "what is in my context. To talk to a real model, set LABKIT_MODEL=provider:model — for "
    "example LABKIT_MODEL=openai:gpt-4.1-mini or LABKIT_MODEL=anthropic:claude-haiku-4-5 — and "
    "restart the kernel; labkit.get_model() then returns it."
)

GOAL_LOST = (
    "I can no longer see what you asked me to do: neither your request nor a summary of it is in "
    "my context. What should I work on?"
)

NEEDLE_NOT_FOUND = (
    "I can't find Brightloom's exact Q3 net revenue retention in what I can see{detail}. I would "
    "have to guess, so I won't give a number."
)

SUMMARY_SECTIONS = ("SESSION INTENT", "SUMMARY", "ARTIFACTS", "NEXT STEPS")

# labkit's own summary prompt (notebook 10). The lab model recognizes it, and deepagents' prompt,
# by their four section names. {messages} is replaced by the history being folded.
SUMMARY_PROMPT = """You are compacting the history of a long-running agent. The text below will \
replace the messages it summarizes, so keep what the agent needs to carry on.

Write exactly four sections, each filled or marked "None":

## SESSION INTENT
The user's goal, in their words where possible.

## SUMMARY
Work done so far, decisions and their reasons.

## ARTIFACTS
Files created, changed or read, with their paths.

## NEXT STEPS
What remains to be done.

{fidelity}Respond only with the four sections.

<messages>
{messages}
</messages>"""

# What labkit's summary prompt puts in {fidelity} to keep figures; the lab model obeys it.
KEEP_FIGURES = "Keep exact figures and ids verbatim: amounts, percentages, dates, paths. "

# Offloading (notebooks 04-05). {path} is where the full text went; {preview} its head and tail.
OFFLOAD_RESULT_STUB = (
    "This tool result was too large for the context ({tokens:,} tokens), so it was saved to a "
    "file: {path}\n\n"
    "Read it in parts with the read_file tool (for example offset=0, limit=100), or search it "
    "with the grep tool.\n\n"
    "Preview ({lines:,} lines; the numbers are the file's own line numbers):\n{preview}"
)
OFFLOAD_HUMAN_STUB = (
    "The user's message was too large for the context ({tokens:,} tokens), so it was saved to a "
    "file: {path}\n\n"
    "Read it in parts with the read_file tool, giving an offset and a limit, or search it with "
    "the grep tool.\n\n"
    "Preview ({lines:,} lines; the numbers are the file's own line numbers):\n{preview}"
)
ARG_TRUNCATED = "…[{dropped:,} more characters not shown here: this call wrote the full text to {path}]"
ARG_TRUNCATED_EDIT = "…[{dropped:,} more characters not shown here; read {path} for the file as it is now]"

# Manual compaction (notebook 11): the compact_conversation tool's two answers.
COMPACT_DONE = ("Compacted: {n} older messages were folded into a summary; the full text is "
                "archived in {path}.")
COMPACT_REFUSED = ("Not compacted: {why}. Compaction loses detail, so it waits until there is "
                   "enough to gain.")
