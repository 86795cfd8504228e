"""Text that learners read: the lab model's fixed replies, labkit's summary prompt, the offload
stubs, the progress-file instruction and the ``task`` tool's texts.

Kept apart from the logic so a change to any of it is a visible diff (tests snapshot them). The
modules that use a text re-export it where it was first taught: ``labkit.model.PROGRESS_PROMPT``,
``labkit.isolate.TASK_DESCRIPTION`` and the ``task`` tool's answers.
"""

from __future__ import annotations

__all__ = [
    "ARG_TRUNCATED",
    "ARG_TRUNCATED_EDIT",
    "BAD_CALL",
    "CHILD_FAILED",
    "CHILD_FILES_KEPT",
    "CLAIMED_DONE",
    "COMPACT_DONE",
    "COMPACT_REFUSED",
    "COMPACT_TWICE",
    "CONFLICT_DELETED",
    "CONFLICT_REPLY",
    "CONFLICT_SAVED",
    "FILE_CONFLICT",
    "GENERAL_PURPOSE_DESCRIPTION",
    "GENERAL_PURPOSE_PROMPT",
    "GOAL_LOST",
    "KEEP_FIGURES",
    "LAB_MODEL_INTRO",
    "MEMORY_HAD",
    "MEMORY_SAVED",
    "NEEDLE_NOT_FOUND",
    "NO_TEXT",
    "OFFLOAD_HUMAN_STUB",
    "OFFLOAD_RESULT_STUB",
    "PROGRESS_PATH",
    "PROGRESS_PROMPT",
    "SUMMARY_PROMPT",
    "SUMMARY_SECTIONS",
    "TASK_DESCRIPTION",
    "TRUNCATED",
]

LAB_MODEL_INTRO = (
    "I am labkit's LabModel: a scripted, deterministic stand-in for a chat model, not a language "
    "model. I only act inside the course's lab scenarios (the weekly competitor report), using "
    "what is in my context. To talk to a real model, set LABKIT_MODEL=provider:model — for "
    "example LABKIT_MODEL=openai:gpt-4.1-mini or LABKIT_MODEL=anthropic:claude-haiku-4-5 — and "
    "restart the kernel; labkit.get_model() then returns it."
)

# The lab model's other face of goal drift (``LabModel(when_lost="finish")``, notebook 14): with
# its goal out of view it takes the work it can see for the whole task and says it is finished.
CLAIMED_DONE = "Done: {work}. That completes the task."

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
COMPACT_TWICE = ("Error: compact_conversation was called more than once in one message; only the "
                 "first call ({first}) compacts. Call it once, at a task boundary.")
COMPACT_REFUSED = ("Not compacted: {why}. Compaction loses detail, so it waits until there is "
                   "enough to gain.")

# Skills and memory (notebook 13): the lab model's answer when the user states a preference.
MEMORY_SAVED = ("Noted. I added \"- {rule}\" to my memory file {path} (edit_file answered: "
                "{result})")
MEMORY_HAD = "That preference is already in my memory file {path}: \"- {rule}\""

# Goal anchors (notebook 14): the instruction that turns the progress-file anchor on. The lab
# model keeps the file when a system message names PROGRESS_PATH.
PROGRESS_PATH = "/progress.md"
PROGRESS_PROMPT = (
    f"Keep a progress file at {PROGRESS_PATH}. When you start a task of several steps, write the "
    "user's request in it as the goal; after each step, rewrite it with the steps done so far. "
    f"If you can no longer see what you were asked to do, read {PROGRESS_PATH} before asking."
)

# Isolation (notebook 12): the task tool's description ({agents}: one "- name: description" line
# per subagent), the general-purpose subagent labkit.isolate.general_purpose() makes, and what the
# task tool answers when a reply is cut, a call is malformed, a child has no text or fails.
TASK_DESCRIPTION = """Launch a subagent for one self-contained piece of work. It starts from your \
description alone — a fresh context with its own system prompt and tools — and returns one \
message: its final reply. You never see its intermediate steps.

Available subagent types:
{agents}

Usage:
- Put everything the subagent needs in `description`, and say what it should reply with.
- Independent tasks run at once: make several task calls in one message.
- A subagent shares your files: ask for long results in a file and the path in the reply."""

GENERAL_PURPOSE_PROMPT = (
    "You are a subagent. Complete the task you are given with your tools. The caller sees only "
    "your final reply, not your tool calls or their results: make it complete and short."
)
GENERAL_PURPOSE_DESCRIPTION = (
    "General-purpose agent for multi-step tasks: it has the tools it was given and the shared files."
)
TRUNCATED = ("\n\n[… cut by the task tool: {name!r} has an output cap of {cap:,} tokens and its "
             "reply had {total:,}. Ask for long results in a file, and the path in the reply.]")
BAD_CALL = ("Error: task takes exactly two arguments: description (text: the whole task and what "
            "to reply with) and subagent_type (one of {types}). {problems}")
NO_TEXT = "(the subagent finished without a text reply)"
CHILD_FAILED = "Error: the {name!r} subagent stopped before replying: {error}"
CHILD_FILES_KEPT = " The files it wrote before it stopped are kept: {paths}."

# Two calls of one parallel block (the tool calls of one AI message: task children, or the
# parent's own file tools) changed the same file differently: the later one to finish gets this
# answer. {first} and {this} name the calls; {outcome} is CONFLICT_SAVED, or CONFLICT_DELETED when
# its change was a deletion; one FILE_CONFLICT per path, then CONFLICT_REPLY with its own answer.
FILE_CONFLICT = ("Error: file conflict on {path}. {first} changed it too, in parallel, and finished "
                 "first: its change stands. {this} {outcome}.")
CONFLICT_SAVED = ("wrote a different version, which is saved at {saved} — compare the two and merge "
                  "what matters")
CONFLICT_DELETED = "deleted it; that deletion was not applied — delete the file yourself if it should go"
CONFLICT_REPLY = "{conflicts}\n\n{who} answered:\n\n{reply}"
