"""The later lessons' experiments for "On your model": compaction without deletion (09), the
summary itself (10), the wall (11), skills (13), goal anchors (14), the needle under forced
compaction (15) and the clinic (16).

Each returns an :class:`~labkit.yourmodel.Experiment` shaped like ``defences``' ones: the first user
turn (or the skill's request) with exports shrunk, checks that hold whatever the model chooses
(they test labkit's or deepagents' mechanism) and observations of what the model did. What it
leaves out: the lessons' other runs, and any judgement of the model's wording.
"""

from __future__ import annotations

from collections import Counter

from deepagents.backends import StateBackend
from deepagents.middleware.skills import SkillsMiddleware
from langchain_core.messages.utils import get_buffer_string

from labkit import prompts, scenario
from labkit._paths import HISTORY_DIR
from labkit.evals import anchor_calls, needle_source
from labkit.experiments._common import FIRST_TURN, archived, compacting, fetched
from labkit.model import PROGRESS_PATH, PROGRESS_PROMPT
from labkit.offload import OffloadMiddleware
from labkit.summarize import MANUAL_TOOL, SummarizeMiddleware, events_of
from labkit.tokens import count_tokens
from labkit.trace import Recorder
from labkit.yourmodel import Experiment

__all__ = ["anchors", "clinic", "needle_recovery", "skills", "summary_itself", "wall", "without_deletion"]

_WINDOW = 32_000


class _ReadOnlyBackend(StateBackend):
    """A backend whose writes fail: the archive cannot be written (notebook 10's section 4)."""

    def write(self, file_path, content):
        raise PermissionError(f"{file_path}: read-only file system")


def _compactions(run: scenario.Run) -> str:
    """An observation: how many compactions, and why each fired."""
    reasons = Counter(e.reason for e in events_of(run.state))
    return f"{sum(reasons.values())} compactions ({dict(reasons) or 'none'})"


def _summarize(model, trigger: int, keep: int, **options) -> SummarizeMiddleware:
    return SummarizeMiddleware(model, trigger=("tokens", trigger), keep=("messages", keep),
                               window=_WINDOW, **options)


def summary_itself(trigger: int = 6_000, keep: int = 4, scale: float = 0.05) -> Experiment:
    """Notebook 10: your model writes the summaries. Checks: every folded message is in the
    archive word for word. Observes: each summary's length, its sections, the needle's figure."""
    needle = scenario.needle()

    def observe(run: scenario.Run) -> list[str]:
        lines = [fetched(run), _compactions(run)]
        for e in events_of(run.state):
            sections = [s for s in prompts.SUMMARY_SECTIONS if s in e.summary]
            lines.append(f"summary {e.number}: {count_tokens(e.summary):,} tokens, sections {sections}, "
                         f"Brightloom's {needle.kpi} {'kept' if needle.answer in e.summary else 'dropped'}")
        return lines

    return Experiment(
        f"your model's summaries at {trigger:,} tokens, exports at {scale:.0%}", window=_WINDOW,
        checks=archived, observe=observe,
        run=lambda model, extra: scenario.run(
            model, middleware=[_summarize(model, trigger, keep), *extra], turns=FIRST_TURN,
            export_scale=scale))


def wall(limit: int = 1_500, trigger: int = 6_000, keep: int = 4, scale: float = 0.1) -> Experiment:
    """Notebook 11: offloading first, then summarization with the ``compact_conversation`` tool.
    Checks: no result over ``limit`` reached the context; every compact call got one answer."""

    def checks(run: scenario.Run) -> list[str]:
        problems = [f"a {count_tokens(m.text):,}-token result reached the context" for m in run.messages
                    if m.type == "tool" and m.name != MANUAL_TOOL and count_tokens(m.text) > limit]
        answers = Counter(m.tool_call_id for m in run.messages if m.type == "tool")
        problems += [f"{MANUAL_TOOL} call {tc['id']} got {answers[tc['id']]} answers"
                     for tc in run.tool_calls(MANUAL_TOOL) if answers[tc["id"]] != 1]
        return problems

    def observe(run: scenario.Run) -> list[str]:
        return [fetched(run), f"it called {MANUAL_TOOL} {len(run.tool_calls(MANUAL_TOOL))} times; "
                + _compactions(run)]

    return Experiment(
        f"offloading above {limit:,} then compaction at {trigger:,} with {MANUAL_TOOL}, exports at "
        f"{scale:.0%}", window=_WINDOW, checks=checks, observe=observe,
        run=lambda model, extra: scenario.run(
            model, middleware=[OffloadMiddleware(tool_limit=limit, args_trigger=None),
                               _summarize(model, trigger, keep, manual_tool=True), *extra],
            turns=FIRST_TURN, export_scale=scale))


def anchors(trigger: int = 8, keep: int = 4, scale: float = 0.01) -> Experiment:
    """Notebook 14: a progress-file anchor under compaction every ``trigger`` messages. Checks: the
    anchor's instruction is in every request's system prompt; every folded message is archived."""
    recorders: list[Recorder] = []

    def run(model, extra):
        recorders.append(Recorder(keep_requests=True))
        return scenario.run(model, middleware=[SummarizeMiddleware(
            model, trigger=("messages", trigger), keep=("messages", keep), window=_WINDOW), *extra],
            turns=FIRST_TURN, export_scale=scale, system_prompt=PROGRESS_PROMPT, recorder=recorders[-1])

    def checks(run: scenario.Run) -> list[str]:
        missing = [r.index for r in run.records if r.request is None or r.request.system is None
                   or PROGRESS_PROMPT not in r.request.system.text]
        problems = [f"calls {missing} were sent without the anchor's instruction"] if missing else []
        return problems + archived(run)

    def observe(run: scenario.Run) -> list[str]:
        fetches = Counter(tc["args"].get("ticker") for tc in run.tool_calls("fetch_market_data"))
        again = sorted(str(t) for t, n in fetches.items() if n > 1)
        return [fetched(run), _compactions(run), f"{len(anchor_calls(run.messages))} anchor calls "
                f"(its progress file {'written' if PROGRESS_PATH in run.files else 'never written'}); "
                f"exports fetched again: {again or 'none'}"]

    return Experiment(f"a progress file under compaction every {trigger} messages, exports at {scale:.0%}",
                      window=_WINDOW, run=run, checks=checks, observe=observe)


def clinic(trigger: int = 6_000, keep: int = 4, scale: float = 0.05) -> Experiment:
    """Notebook 16: the lost needle's setting — compaction whose archive write fails. Checks: no
    compaction names an archive, and no archive file exists. ``on_your_model`` prints what
    ``diagnose()`` finds in your run."""

    def checks(run: scenario.Run) -> list[str]:
        named = [e.number for e in events_of(run.state) if e.archive]
        problems = [f"compactions {named} name an archive the backend refused"] if named else []
        return problems + [f"{p} exists though every write failed" for p in run.files
                           if p.startswith(HISTORY_DIR + "/")]

    def observe(run: scenario.Run) -> list[str]:
        return [fetched(run), _compactions(run) + "; none of them archived"]

    return Experiment(
        f"compaction at {trigger:,} tokens with no archive (the lost needle), exports at {scale:.0%}",
        window=_WINDOW, checks=checks, observe=observe,
        run=lambda model, extra: scenario.run(
            model, middleware=[_summarize(model, trigger, keep, backend=_ReadOnlyBackend()), *extra],
            turns=FIRST_TURN, export_scale=scale))


def needle_recovery(scale: float = 0.02) -> Experiment:
    """Notebook 15: the first turn and the needle question, compacting every 6 messages. Checks:
    whenever a compaction folded the export holding the needle's exact line, the archive holds
    that line — so the figure can always be read back, whatever the model then does."""
    needle = scenario.needle()

    def checks(run: scenario.Run) -> list[str]:
        events = events_of(run.state)
        if not events or not events[-1].archive:
            return []
        folded = get_buffer_string(run.messages[:events[-1].cut], format="xml")
        archive = run.files.get(events[-1].archive, "")
        if needle.find(folded) and not needle.find(archive):  # the archive holds every word raw
            return ["the needle's line was folded but is not in the archive"]
        return []

    def observe(run: scenario.Run) -> list[str]:
        return [fetched(run), f"{len(events_of(run.state))} compactions; answered the needle "
                f"{'correctly' if run.score.needle_correct else 'wrongly or not at all'}, "
                f"from {needle_source(run)}"]

    return Experiment(
        f"the needle after forced compaction, exports at {scale:.0%}", window=_WINDOW, checks=checks,
        observe=observe,
        run=compacting(("messages", 6), ("messages", 2), scale=scale,
                       turns=(*FIRST_TURN, scenario.NEEDLE_QUESTION)))


def without_deletion(scale: float = 0.05) -> Experiment:
    """Notebook 09: compaction every 6 messages, keeping 2. Checks: state still holds the whole
    conversation (the user's request first, every tool call answered), and the archive holds every
    folded message word for word — whatever the model does between compactions."""

    def checks(run: scenario.Run) -> list[str]:
        problems = []
        if not run.messages or run.messages[0].type != "human":
            problems.append("the user's request is no longer the first message in state")
        answered = {m.tool_call_id for m in run.messages if m.type == "tool"}
        if {tc["id"] for tc in run.tool_calls()} - answered:
            problems.append("a tool call in state has no result: a message was deleted")
        return problems + archived(run)

    def observe(run: scenario.Run) -> list[str]:
        events = events_of(run.state)
        return [fetched(run), f"{len(events)} compactions; state holds {len(run.messages)} messages, "
                f"the last call saw {run.records[-1].messages_seen if run.records else 0}"]

    return Experiment(
        f"compaction every 6 messages keeping 2, exports at {scale:.0%}", window=_WINDOW, checks=checks,
        observe=observe,
        run=compacting(("messages", 6), ("messages", 2), scale=scale))


def skills(scale: float = 0.02) -> Experiment:
    """Notebook 13: the QBR request with deepagents' SkillsMiddleware. Checks: every request's
    system prompt lists the skill, and none carries its body — progressive disclosure is the
    middleware's, whatever the model does. Observes whether the model read the skill."""
    body = next(line for line in scenario.skill_text().splitlines() if line.startswith("## Required"))

    def checks(run: scenario.Run) -> list[str]:
        systems = [r.request.system.text if r.request and r.request.system else "" for r in run.records]
        problems = [f"call {i}'s system prompt does not list the skill" for i, s in enumerate(systems)
                    if "qbr-report" not in s]
        return problems + [f"call {i}'s system prompt carries the skill's body" for i, s in enumerate(systems)
                           if body in s]

    def observe(run: scenario.Run) -> list[str]:
        read = [tc for tc in run.tool_calls("read_file")
                if tc["args"].get("file_path") == scenario.QBR_SKILL_PATH]
        report = run.files.get(scenario.REPORT_PATH, "")
        first = report.splitlines()[0] if report else "no report written"
        return [fetched(run), f"it read the skill {len(read)} times; the report begins {first!r}"]

    return Experiment(
        f"the QBR request with the skill listed, exports at {scale:.0%}", window=_WINDOW, checks=checks,
        observe=observe,
        run=lambda model, extra: scenario.run(
            model, middleware=[SkillsMiddleware(backend=StateBackend(), sources=[scenario.SKILLS_SOURCE]),
                               *extra],
            turns=(scenario.QBR_REQUEST,), files=scenario.skill_files(), export_scale=scale,
            recorder=Recorder(keep_requests=True)))
