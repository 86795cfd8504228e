"""The harness: build the agent the scenario runs on, and drive it through the user turns.

Notebook 01 introduces :func:`run`; notebook 10 streams the agent :func:`agent` builds. With
``harness="agent"`` it is langchain's ``create_agent`` with deepagents' file tools and nothing
else (their eviction off); with ``harness="deep"`` it is ``create_deep_agent`` and its whole stack.

:func:`capture` drives *any* compiled agent the same way — your own, with a ``Recorder`` last in its
middleware — and keeps what happened as a ``Run`` even when a call raises (notebook 16).

What it leaves out: a default model. Pass one — ``LabModel()``, or ``labkit.get_model()`` for
``LABKIT_MODEL`` — so the scenario never imports ``labkit.model`` (which reads the scenario).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from deepagents import create_deep_agent
from deepagents.backends.utils import create_file_data
from deepagents.middleware.filesystem import FilesystemMiddleware
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from labkit._checkpoint import SharedSaver
from labkit.scenario.data import tools
from labkit.scenario.results import Run
from labkit.scenario.texts import TURNS
from labkit.trace import Recorder

__all__ = ["agent", "capture", "run"]


def _file_text(data: Any) -> str:
    if isinstance(data, dict):
        content = data.get("content", "")
        return "\n".join(content) if isinstance(content, list) else str(content)
    return str(data)


def _seed_files(files: dict[str, Any] | None) -> dict[str, Any]:
    """``run(files=...)`` as deepagents file data; a path must be absolute, a value text or
    file data (a dict with ``content``)."""
    seed = {}
    for path, data in (files or {}).items():
        if not isinstance(path, str) or not path.startswith("/"):
            raise ValueError(f"files: {path!r} is not an absolute path such as '/skills/x/SKILL.md'")
        if isinstance(data, str):
            data = create_file_data(data)
        if not (isinstance(data, dict) and "content" in data):
            raise ValueError(f"files[{path!r}] must be text or deepagents file data (a dict with "
                             f"'content'), not {type(data).__name__}")
        seed[path] = data
    return seed


def agent(model, middleware: Sequence = (), harness: str = "agent", *, news_language: str = "en",
          export_scale: float = 1.0, checkpointer=None, **agent_kwargs):
    """The compiled agent :func:`run` drives, with the scenario's two data tools and a checkpointer:
    ``checkpointer``, or its own (langgraph's ``InMemorySaver`` keeping every checkpoint as the
    objects the graph produced, a message list sharing the newer lists it is a prefix of:
    ``labkit._checkpoint``; history, replay and forks answer as ``InMemorySaver``'s, and a long
    run's memory grows with what is new) — a thread that must be resumed by another process needs a
    database's, such as langgraph's ``SqliteSaver`` (notebook 13). Notebook 10 builds it to stream
    a run (``.stream`` / ``.astream_events``).

    ``harness="agent"`` is langchain's ``create_agent`` with deepagents' ``FilesystemMiddleware``
    first, its eviction switched off (nothing is offloaded unless one of your ``middleware`` does
    it), then your ``middleware`` in order; a ``FilesystemMiddleware`` among them takes the first
    one's place, as ``create_deep_agent`` replaces its own by name (notebook 06: an allowlist of
    file tools, ``tools=[...]``). ``harness="deep"`` is ``deepagents.create_deep_agent``
    with its whole default stack, your ``middleware`` after it. ``news_language`` and
    ``export_scale`` go to ``tools()``; ``agent_kwargs`` (``store=``, ``system_prompt=``,
    ``subagents=`` …) to the agent factory. Nothing records the calls unless you add a
    ``labkit.trace.Recorder`` (:func:`run` puts one last).

    Example:
        >>> # graph = scenario.agent(LabModel(), [SummarizeMiddleware(model)])
        >>> # graph.stream({"messages": [HumanMessage(scenario.REQUEST)]},
        >>> #              {"configurable": {"thread_id": "lab"}}, stream_mode="messages")
    """
    if harness not in ("agent", "deep"):
        raise ValueError(f"harness must be 'agent' or 'deep', not {harness!r}")
    data_tools = tools(news_language, export_scale)
    checkpointer = SharedSaver() if checkpointer is None else checkpointer
    if harness == "deep":
        return create_deep_agent(model, tools=data_tools, middleware=list(middleware),
                                 checkpointer=checkpointer, **agent_kwargs)
    mine = [m for m in middleware if m.name == FilesystemMiddleware.__name__]
    fs = mine[0] if mine else FilesystemMiddleware(tool_token_limit_before_evict=None,
                                                   human_message_token_limit_before_evict=None)
    return create_agent(model, tools=data_tools, middleware=[fs, *(m for m in middleware if m is not fs)],
                        checkpointer=checkpointer, **agent_kwargs)


def run(
    model,
    *,
    middleware: Sequence = (),
    harness: str = "agent",
    turns: Sequence[str] = TURNS,
    news_language: str = "en",
    export_scale: float = 1.0,
    recorder: Recorder | None = None,
    recursion_limit: int = 200,
    files: dict[str, Any] | None = None,
    thread_id: str = "lab",
    **agent_kwargs,
) -> Run:
    """Drive ``model`` through the scenario's user turns on one thread and return the :class:`Run`.
    Notebook 01.

    The agent is :func:`agent`'s, with a recording middleware (``labkit.trace.Recorder``) placed
    after your ``middleware``, so each record is what the model saw once they had edited the
    request. Under ``create_agent`` that is the innermost layer. Under ``create_deep_agent`` a few
    deepagents layers still come after it (prompt caching, unsupported-content notices, and the
    tool exclusion of a harness profile): with ``excluded_tools`` the record overcounts the tool
    schemas, and the model's ``reported_input`` is the true count.

    A model error — a context overflow above all — ends the run; it is kept in ``Run.error``.

    ``files`` seeds the thread's state files on the first turn (``{path: text or deepagents file
    data}``, e.g. ``skill_files()``); ``thread_id`` names the thread. Each run has its own
    checkpointer, so two runs never share a thread: what outlives one must live in a store
    (``store=`` goes to the agent with the other ``agent_kwargs``) — unless you pass one
    ``checkpointer=`` (a ``SqliteSaver``) to both: the second run with the same ``thread_id``
    resumes the first's thread.
    """
    recorder = Recorder() if recorder is None else recorder
    graph = agent(model, [*middleware, recorder], harness, news_language=news_language,
                  export_scale=export_scale, **agent_kwargs)
    config = {"configurable": {"thread_id": thread_id}, "recursion_limit": recursion_limit}
    return capture(graph, turns, recorder, config=config, files=files)


def capture(graph, turns: str | Iterable[str], recorder: Recorder | None = None, *,
            config: dict[str, Any] | None = None, files: dict[str, Any] | None = None) -> Run:
    """Drive a compiled agent through ``turns`` (one user message, or several) and keep what
    happened as a :class:`Run` — the state it reached, ``recorder``'s records of that thread (a
    Recorder shared by several captures keeps the others' records to itself; a resumed thread's
    earlier records come too; calls and turns numbered as this run's own), and the error that ended
    it, if one did. Notebook 16: bring your own agent, even one that fails.

    ``graph`` is any agent ``create_agent`` / ``create_deep_agent`` built, with a
    ``labkit.Recorder`` last in its middleware (pass the same ``recorder`` here). It is read back
    with ``get_state`` after the last turn — so a run whose model call raised (a context overflow,
    a provider error) still holds every message, file and private channel (compaction events,
    todos) up to that call. An agent built without a checkpointer is run on a copy that has one
    (langgraph's ``InMemorySaver``), so its turns follow each other on one thread as they would
    with yours. ``config`` names the thread (default ``thread_id="labkit"``) and the recursion
    limit (200); ``files`` seeds the state's files on the first turn.

    Example:
        >>> # rec = Recorder(); agent = create_agent(model, tools, middleware=[..., rec])
        >>> # run = scenario.capture(agent, "Prepare the weekly report", rec); run.save("my_run.json")
    """
    c = _Capture(graph, turns, recorder, config, files)
    c.resumed = bool(c.thread and c.graph.get_state(c.config).values.get("messages"))
    error, done = None, 0
    for update in c.updates():
        try:
            c.graph.invoke(update, config=c.config)
            done += 1
        except Exception as e:  # the run ends; what happened is kept for the learner
            error = e
            break
    return c.run(c.graph.get_state(c.config).values, error, done)


async def acapture(graph, turns: str | Iterable[str], recorder: Recorder | None = None, *,
                   config: dict[str, Any] | None = None, files: dict[str, Any] | None = None) -> Run:
    """:func:`capture` for an agent that must be run asynchronously — async-only tools (an MCP
    adapter's), an async checkpointer: ``run = await scenario.acapture(agent, turns, rec)``."""
    c = _Capture(graph, turns, recorder, config, files)
    c.resumed = bool(c.thread and (await c.graph.aget_state(c.config)).values.get("messages"))
    error, done = None, 0
    for update in c.updates():
        try:
            await c.graph.ainvoke(update, config=c.config)
            done += 1
        except Exception as e:  # the run ends; what happened is kept for the learner
            error = e
            break
    return c.run((await c.graph.aget_state(c.config)).values, error, done)


class _Capture:
    """What :func:`capture` and :func:`acapture` share: the thread, the turns, the Run."""

    def __init__(self, graph, turns, recorder, config, files) -> None:
        self.recorder = Recorder() if recorder is None else recorder
        self.turns = [turns] if isinstance(turns, str) else turns  # read one at a time: evals.reminded
        self.config = {"recursion_limit": 200, **(config or {})}
        self.config["configurable"] = {"thread_id": "labkit", **self.config.get("configurable", {})}
        self.thread = str(self.config["configurable"]["thread_id"])
        self.start, self.graph, self.seed = len(self.recorder.records), graph, _seed_files(files)
        self.resumed = False  # the thread had turns before: their records belong to the Run too
        if getattr(graph, "checkpointer", None) is None:  # a fresh thread: only this capture's records
            self.graph, self.thread = graph.copy(update={"checkpointer": InMemorySaver()}), None

    def updates(self) -> Iterator[dict[str, Any]]:
        for n, text in enumerate(self.turns):
            self.recorder.start_turn(text)
            yield {"messages": [HumanMessage(text)], **({"files": self.seed} if self.seed and not n else {})}

    def run(self, state, error: BaseException | None, done: int) -> Run:
        # a Recorder shared by captures, even at once: this thread's records since this capture
        # began, and before it too when the thread was resumed (its state holds those turns)
        records = [r for i, r in enumerate(self.recorder.records) if (i >= self.start or self.resumed)
                   and (self.thread is None or r.thread == self.thread)]
        turns = {t: k for k, t in enumerate(dict.fromkeys(r.turn for r in records))}
        if any(r.index != i or r.turn != turns[r.turn] for i, r in enumerate(records)):
            # numbered by a Recorder that served other runs too: this run's own call and turn numbers
            records = [replace(r, index=i, turn=turns[r.turn]) for i, r in enumerate(records)]
        return _as_run(dict(state), records, error, done)


def _as_run(state: dict[str, Any], records: list, error: BaseException | None, done: int) -> Run:
    messages: list[BaseMessage] = list(state.get("messages", []))
    files = {path: _file_text(data) for path, data in (state.get("files") or {}).items()}
    return Run(messages=messages, files=files, records=records, error=error,
               turns_completed=done, state=dict(state))
