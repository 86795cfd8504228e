"""Targeted evals: goal retention, needle recovery and repeated work, read off finished runs.

Notebook 14: :func:`forced_compaction` runs the scenario under deepagents with frequent forced
compaction, with or without a goal anchor; :func:`reminded` plays a user who repeats a request
the agent lost; :func:`claimed_done` finds the drift that asks nothing (a task said to be done
whose file was never written); :func:`drift` reads one table row off the run. Notebook 15 builds
the eval grid: a :class:`Setting` per configuration, :func:`trial` runs it, :func:`row` and
:func:`grid` read compactions, goal, needle (and :func:`needle_source`, where from) and tokens sent.

What it leaves out: judging a real model's wording — a goal loss is the lab model's fixed reply
(``prompts.GOAL_LOST``) or any model's question instead of work (``scenario.hands_back``). The
grid runs on ``LabModel`` only; :func:`row` and :func:`reminded` read any model's run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from deepagents.backends import StateBackend
from deepagents.middleware.filesystem import FilesystemMiddleware
from deepagents.middleware.summarization import SummarizationMiddleware, compute_summarization_defaults
from langchain.agents.middleware import TodoListMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from labkit import scenario
from labkit._paths import HISTORY_DIR, RESULTS_DIR
from labkit._sizes import check_count, check_limit
from labkit.model import PROGRESS_PATH, PROGRESS_PROMPT, TODO_TOOL, LabModel
from labkit.offload import OffloadMiddleware
from labkit.prompts import GOAL_LOST
from labkit.summarize import SummarizeMiddleware
from labkit.tokens import TokenCounter, message_text
from labkit.trace import Recorder, compactions  # compactions re-exported: notebook 15 reads it

__all__ = ["ANCHORS", "MIDDLEWARE", "NEEDLE_SOURCES", "RECOMMENDED_FILE_TOOLS", "RECOMMENDED_TOOL_LIMIT",
           "Setting", "anchor_calls", "claimed_done", "compactions", "drift", "forced_compaction", "grid",
           "needle_source", "reminded", "row", "stack", "trial"]

ANCHORS = ("none", "todo", "progress")
# labkit's recommended setting evicts tool results over 8,000 tokens (OffloadMiddleware's own default
# is deepagents' 20,000), under the smallest export: on the running example it sends the same tokens
# at 128k, 60k and 32k, at most half of deepagents' defaults and 2.5x the oracle lower bound
# (labkit.oracle), needle and goal kept, where 20,000 keeps CRVD's and EMBR's exports in context and
# misses that below 128k (tests/test_evals.py, notebook 15 section 5).
RECOMMENDED_TOOL_LIMIT = 8_000
# ...and it gives the agent only the file tools the running example calls, write_file and grep, with
# read_file, which deepagents' allowlist requires and the offload stub names (notebook 06's lesson:
# FilesystemMiddleware(tools=[...])): the four it never calls (ls, glob, edit_file, delete) cost 887
# tokens on every call, 81,670 tokens sent with them, 67,478 without (tests/test_evals.py).
RECOMMENDED_FILE_TOOLS = ("read_file", "write_file", "grep")
MIDDLEWARE = ("labkit", "deepagents")
NEEDLE_SOURCES = ("context", "archive", "offload file", "other file", "lost", "not asked")
_FOLDERS = {f"{HISTORY_DIR}/": "archive", f"{RESULTS_DIR}/": "offload file"}


def _handed_back(model, recorder: Recorder | None) -> bool:
    """Did the last reply hand the task back? From the recorder's records (any model) or else
    the lab model's own log (its ``GOAL_LOST`` reply)."""
    if recorder is not None:
        last = recorder.records[-1] if recorder.records else None
        if last is None or last.reply is None:
            return False
        worked = any(r.tool_calls for r in recorder.records if r.turn == last.turn)
        return not last.tool_calls and scenario.hands_back(last.reply, worked)
    last = next((c for c in reversed(model.calls) if c.kind == "agent"), None)
    return last is not None and last.response is not None and last.response.text == GOAL_LOST


def reminded(turns: Iterable[str], model, times: int = 2, *,
             recorder: Recorder | None = None) -> Iterator[str]:
    """Yield each user turn; after it, while the agent's last reply handed the task back (at most
    ``times`` in a row), yield the same turn again.

    Pass it as ``scenario.run(model, turns=reminded(scenario.TURNS, model))``: the run reads the
    turns one at a time, so each reminder sees the reply to the turn before it. A goal lost then
    costs what it costs in real life: the user repeats themselves, and the agent redoes whatever
    it can no longer see. Notebook 14.

    Without ``recorder`` it reads the lab model's own log for its ``GOAL_LOST`` reply. For any
    model, pass the run's recorder — ``rec = Recorder()``, then ``scenario.run(model, recorder=rec,
    turns=reminded(TURNS, model, recorder=rec))`` — and it reads the last recorded reply
    (``scenario.hands_back``: ``GOAL_LOST``, or a question in a turn with no tool call).
    """
    check_count("times", times, "reminders", least=0)
    if recorder is None and not hasattr(model, "calls"):
        raise TypeError(f"reminded() reads the lab model's call log; {type(model).__name__} has "
                        "no .calls: pass the run's recorder (recorder=rec) for any other model")
    for text in turns:
        yield text
        for _ in range(times):
            if not _handed_back(model, recorder):
                break
            yield text


def forced_compaction(anchor: str = "none", *, trigger: int = 8, keep: int = 4, reminders: int = 2,
                      model=None):
    """Run the scenario under ``create_deep_agent`` with deepagents' ``SummarizationMiddleware``
    firing every ``trigger`` messages and keeping ``keep``, the user re-sending a turn when the
    goal is lost (:func:`reminded`). ``anchor``: ``"none"``, ``"todo"`` (langchain's
    ``TodoListMiddleware``) or ``"progress"`` (``model.PROGRESS_PROMPT`` as the system prompt).

    The middleware keeps its constructor's default ``trim_tokens_to_summarize`` (4,000): langchain's
    ``trim_messages(strategy="last", start_on="human")`` keeps the last 4,000 tokens of what it
    folds and makes them start at a human message, so when the request is more than ~4,000 tokens
    back (here: behind a folded export) the summarizer gets nothing and the summary is a stub.
    (``create_summarization_middleware``, the factory ``create_deep_agent`` uses, sets it to
    ``None``.) Notebook 14.
    """
    if anchor not in ANCHORS:
        raise ValueError(f"anchor must be one of {ANCHORS}, not {anchor!r}")
    model = LabModel(window=1_000_000) if model is None else model
    middleware = [SummarizationMiddleware(model, backend=StateBackend(), trigger=("messages", trigger),
                                          keep=("messages", keep))]
    kwargs = {"system_prompt": PROGRESS_PROMPT} if anchor == "progress" else {}
    if anchor == "todo":
        middleware.insert(0, TodoListMiddleware())
    return scenario.run(model, middleware=middleware, harness="deep",
                        turns=reminded(scenario.TURNS, model, reminders), **kwargs)


def anchor_calls(messages: Iterable[BaseMessage]) -> list[dict]:
    """The tool calls in ``messages`` that keep an anchor: ``write_todos``, or a file tool whose
    path is ``/progress.md``. Notebook 14."""
    return [tc for m in messages if isinstance(m, AIMessage) for tc in m.tool_calls
            if tc["name"] == TODO_TOOL
            or PROGRESS_PATH in (tc["args"].get("file_path"), tc["args"].get("path"))]


def claimed_done(run) -> list[str]:
    """The tasks the agent said it had finished without their file: for each user turn that asks
    for a file (the report, the risks note), the turn ended in an answer that does not hand the
    task back (``scenario.hands_back``), yet no ``write_file``/``edit_file`` to that file was made
    by then. Read from ``run.messages`` alone, so it works on any model's run. Notebook 14.

    This is goal drift that asks nothing: the lab model with ``when_lost="finish"`` says the work
    it can see is the task. ``score.goal_lost`` and ``asked_user`` stay at 0; only the output
    that is not there gives it away.
    """
    messages, claimed, worked, wrote = list(run.messages), [], False, set()
    task = None
    for m in messages:
        if isinstance(m, HumanMessage):
            said = message_text(m, text_only=True)
            task = next((t for t in scenario.tasks() if t.marker in said), None)
            worked = False
        elif isinstance(m, AIMessage) and m.tool_calls:
            worked = True
            wrote |= {str(tc["args"].get("file_path", "")) for tc in m.tool_calls
                      if tc["name"] in ("write_file", "edit_file")}
        elif isinstance(m, AIMessage) and task is not None and task.output:
            answer = message_text(m, text_only=True)
            made = any(p == task.output or p.startswith(task.output.rstrip("/") + "/") for p in wrote)
            if not made and not scenario.hands_back(answer, worked):
                claimed.append(task.key)
    return claimed


def drift(run, counter: TokenCounter | None = None) -> dict:
    """How a run fared against goal drift, as one table row: goal losses, claimed done (tasks said
    to be finished without their file, :func:`claimed_done`), steps repeated, goal completed,
    needle, model calls, tokens sent, anchor calls and the anchor's own tokens. Notebook 14.

    ``anchor tokens`` counts the anchor's own messages once each (its calls and the tools'
    answers); every later call that still sees them pays for them again, which ``tokens sent``
    includes. It needs the whole history in ``run.messages``, so it undercounts after a
    compaction that rewrites state (langchain's own ``SummarizationMiddleware``).
    """
    counter = counter or TokenCounter()
    score = run.score
    calls = anchor_calls(run.messages)
    ids = {tc["id"] for tc in calls}
    own = [m for m in run.messages
           if (isinstance(m, AIMessage) and m.tool_calls and all(tc["id"] in ids for tc in m.tool_calls))
           or (isinstance(m, ToolMessage) and m.tool_call_id in ids)]
    return {"goal losses": score.goal_lost, "claimed done": len(claimed_done(run)),
            "steps repeated": score.steps_repeated, "goal completed": score.goal_completed,
            "needle": score.needle_correct, "model calls": len(run.records),
            "tokens sent": sum(r.seen for r in run.records),
            "anchor calls": len(calls), "anchor tokens": sum(counter.message(m) for m in own)}


# -- notebook 15: the eval grid ------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One configuration of the eval grid. Notebook 15.

    ``middleware="labkit"``: ``OffloadMiddleware`` (if ``offload``), then ``SummarizeMiddleware``
    (if ``summarize``) — offload first — under ``create_agent`` (``harness="agent"``, its default)
    or ``create_deep_agent`` (``"deep"``: labkit's summarizer takes the place of deepagents' by
    name). ``middleware="deepagents"``: ``create_deep_agent``'s own stack, untouched unless a knob
    is set; then its ``SummarizationMiddleware`` is built as its factory builds it, with the knobs.
    ``offload=False`` switches deepagents' tool-result eviction off, on either harness;
    ``tool_limit`` is labkit's eviction limit (``RECOMMENDED_TOOL_LIMIT``, 8,000 tokens); ``evict``
    deepagents' own (``FilesystemMiddleware(tool_token_limit_before_evict=evict)``, None: its
    default, 20,000 — four characters a token), to tune deepagents as labkit is tuned.
    ``file_tools``: the file tools the agent is given, an allowlist for deepagents'
    ``FilesystemMiddleware(tools=...)`` (it must hold ``read_file``) or ``"all"``; ``None``: labkit's
    ``RECOMMENDED_FILE_TOOLS`` with ``middleware="labkit"``, ``"all"`` with deepagents' (notebook 06).

    ``trigger``/``keep``: ``None`` for the middleware's defaults (85% / 10% of the window with a
    profile). ``archive=False``: no archive — labkit's summarizer is built with ``archive=False``
    (it writes none), deepagents' gets a backend that refuses every write — so no summary points
    to an archive. ``trim``: deepagents' ``trim_tokens_to_summarize`` (``None``, as its factory
    sets it; the constructor's default is 4,000). ``reminders``: how many times the user re-sends a
    turn after the agent lost track (:func:`reminded`). ``when_lost``: the lab model's habit when
    it cannot see its goal — ``"ask"`` the user, or ``"finish"``: declare the visible work done
    (``LabModel(when_lost=...)``, notebook 14).
    """

    name: str
    middleware: str = "labkit"
    harness: str | None = None
    window: int = 128_000
    trigger: tuple | None = None
    keep: tuple | None = None
    offload: bool = True
    tool_limit: int = RECOMMENDED_TOOL_LIMIT
    summarize: bool = True
    archive: bool = True
    trim: int | None = None
    reminders: int = 2
    when_lost: str = "ask"
    evict: int | None = None
    file_tools: tuple[str, ...] | str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a setting needs a name, got {self.name!r}")
        if self.middleware not in MIDDLEWARE:
            raise ValueError(f"{self.name}: middleware must be one of {MIDDLEWARE}, not {self.middleware!r}")
        harness = self.harness or ("agent" if self.middleware == "labkit" else "deep")
        if harness not in ("agent", "deep"):
            raise ValueError(f"{self.name}: harness must be 'agent' or 'deep', not {harness!r}")
        object.__setattr__(self, "harness", harness)
        if self.middleware == "deepagents" and (harness != "deep" or not self.summarize):
            raise ValueError(f"{self.name}: deepagents' middleware runs on harness='deep' and always "
                             "summarizes (its SummarizationMiddleware is part of the default stack)")
        if self.trim is not None and self.middleware != "deepagents":
            raise ValueError(f"{self.name}: trim is deepagents' trim_tokens_to_summarize; labkit's "
                             "summarizer always reads everything it folds")
        check_limit(f"{self.name}: window", self.window, allow_none=False)
        if self.when_lost not in ("ask", "finish"):
            raise ValueError(f"{self.name}: when_lost must be 'ask' or 'finish', not {self.when_lost!r}")
        if not self.summarize and (self.trigger, self.keep) != (None, None):
            raise ValueError(f"{self.name}: trigger and keep need summarize=True")
        if self.evict is not None and (self.middleware != "deepagents" or not self.offload):
            raise ValueError(f"{self.name}: evict is deepagents' eviction limit: it needs "
                             "middleware='deepagents' and offload=True (labkit's is tool_limit)")
        tools = self.file_tools
        if tools is None:
            tools = RECOMMENDED_FILE_TOOLS if self.middleware == "labkit" else "all"
        elif tools != "all" and (isinstance(tools, str) or "read_file" not in tools):
            raise ValueError(f"{self.name}: file_tools is 'all' or a list of deepagents' file tools "
                             f"that holds read_file (FilesystemMiddleware requires it), not {tools!r}")
        object.__setattr__(self, "file_tools", tools if tools == "all" else tuple(tools))


class _NoArchive(StateBackend):
    """A state backend whose writes fail: deepagents' summarizer cannot archive (``archive=False``;
    it has no switch of its own)."""

    def write(self, file_path, content):
        raise PermissionError(f"{file_path}: this eval runs without an archive")

    def edit(self, file_path, *args, **kwargs):
        raise PermissionError(f"{file_path}: this eval runs without an archive")


def _files(setting: Setting) -> list:
    """The ``FilesystemMiddleware`` that replaces the harness's own by name, if the setting changes
    it: which tools it gives, and (on ``create_deep_agent``) whether and where it evicts."""
    files = {} if setting.file_tools == "all" else {"tools": list(setting.file_tools)}
    if setting.harness == "deep":
        if not setting.offload or setting.evict is not None:
            files["tool_token_limit_before_evict"] = setting.evict
    elif files:  # the create_agent harness's own has its eviction off (scenario.agent)
        files |= {"tool_token_limit_before_evict": None, "human_message_token_limit_before_evict": None}
    return [FilesystemMiddleware(**files)] if files else []


def stack(setting: Setting, model) -> list:
    """The middleware list ``scenario.run`` gets for ``setting`` with ``model``: what :func:`trial`
    runs. Notebook 16: the clinic's recipes add a failure to the recommended setting's."""
    layers = _files(setting)
    if setting.middleware == "labkit":
        if setting.offload:
            layers.append(OffloadMiddleware(tool_limit=setting.tool_limit))
        if setting.summarize:
            layers.append(SummarizeMiddleware(model, trigger=setting.trigger, keep=setting.keep,
                                              archive=setting.archive))
        return layers
    if (setting.trigger, setting.keep, setting.trim, setting.archive) != (None, None, None, True):
        defaults = compute_summarization_defaults(model)
        layers.append(SummarizationMiddleware(
            model, backend=StateBackend() if setting.archive else _NoArchive(),
            trigger=setting.trigger or defaults["trigger"], keep=setting.keep or defaults["keep"],
            trim_tokens_to_summarize=setting.trim, truncate_args_settings=defaults["truncate_args_settings"]))
    return layers


def trial(setting: Setting):
    """Run the scenario under ``setting`` on a fresh ``LabModel(window=setting.window)``, the user
    reminding it ``setting.reminders`` times when it loses track. Returns ``(run, model)``.
    Notebook 15."""
    if not isinstance(setting, Setting):
        raise TypeError(f"trial takes an evals.Setting, not {type(setting).__name__}")
    model = LabModel(window=setting.window, when_lost=setting.when_lost)
    run = scenario.run(model, middleware=stack(setting, model), harness=setting.harness,
                       turns=reminded(scenario.TURNS, model, setting.reminders))
    return run, model


def needle_source(run) -> str:
    """Where the run's answer to the needle question came from (one of ``NEEDLE_SOURCES``).

    Read from ``run.messages`` after the question: the first tool result holding the needle's
    exact line names the file by its path (``/conversation_history/`` is the archive,
    ``/large_tool_results/`` an offload file); a right answer with no such result came from the
    context itself (the export, or a summary that kept the figure). Notebook 15.
    """
    messages = list(run.messages)
    said = [message_text(m, text_only=True) for m in messages]
    asked = next((i for i, m in enumerate(messages)
                  if isinstance(m, HumanMessage) and said[i] == scenario.NEEDLE_QUESTION), None)
    if asked is None:
        return "not asked"
    if not run.score.needle_correct:
        return "lost"
    the_needle, after = scenario.needle(), messages[asked:]
    calls = {tc["id"]: tc for m in after if isinstance(m, AIMessage) for tc in m.tool_calls}
    for m, text in zip(after, said[asked:]):
        if isinstance(m, ToolMessage) and m.tool_call_id in calls and the_needle.find(text):
            args = calls[m.tool_call_id]["args"]
            path = str(args.get("path") or args.get("file_path") or "")
            return next((kind for folder, kind in _FOLDERS.items() if path.startswith(folder)), "other file")
    return "context"


def row(setting: Setting, run, model) -> dict:
    """One grid row for a finished trial: compactions, goal kept, goal lost (asked) or claimed done
    (:func:`claimed_done`), needle and where it came from,
    steps repeated, calls, and tokens sent, summary calls included. Notebook 15.

    ``tokens sent`` is every input token the model received: the agent's calls (as the Recorder
    measured them; a refused call costs nothing) plus the summary calls (the lab model's own log).
    :func:`drift`'s ``tokens sent`` is the agent's part only. Any other model (no ``.calls``):
    one summary call per compaction, their tokens unknown (``None``: the summarizer calls the
    model outside the agent's Recorder), and ``tokens sent`` is the agent's part.
    """
    score = run.score
    agent = [r for r in run.records if r.error is None]
    agent_tokens, marks = sum(r.seen for r in agent), compactions(run)
    if hasattr(model, "calls"):
        summaries = [c for c in model.calls if c.kind == "summary" and c.error is None]
        n_summaries, summary_tokens = len(summaries), sum(c.input_tokens for c in summaries)
    else:
        n_summaries, summary_tokens = len(marks), None
    return {"setting": setting.name, "compactions": len(marks),
            "goal completed": score.goal_completed, "goal losses": score.goal_lost,
            "claimed done": len(claimed_done(run)),
            "needle": score.needle_correct, "needle from": needle_source(run),
            "steps repeated": score.steps_repeated, "agent calls": len(agent),
            "summary calls": n_summaries, "peak request": max((r.seen for r in agent), default=0),
            "summary tokens": summary_tokens, "tokens sent": agent_tokens + (summary_tokens or 0)}


def grid(settings: Sequence[Setting]) -> list[dict]:
    """Run every setting (:func:`trial`) and return one :func:`row` each, in order. Notebook 15."""
    settings = list(settings)
    names = [s.name for s in settings if isinstance(s, Setting)]
    if len(set(names)) != len(names):
        raise ValueError(f"each setting needs its own name; repeated: "
                         f"{sorted({n for n in names if names.count(n) > 1})}")
    return [row(s, *trial(s)) for s in settings]
