"""Isolation (隔离): noisy work runs in a subagent with its own context, behind a ``task`` tool.

Notebook 12 introduces it. Offloading and summarization repair a context after it has grown;
isolation keeps the noise out from the start. :class:`IsolateMiddleware` gives the agent one tool,
``task(description, subagent_type)``; each call runs a fresh child agent (a :class:`SubagentSpec`)
that starts from the description alone, shares the parent's files, and sends back one message —
its last AI text, capped — while its own model calls are accounted apart (:class:`ChildRun`).
The pure helpers (:func:`child_state`, :func:`final_text`, :func:`cap_output`; ``check_call`` and
``file_updates`` from its private modules) are what the middleware is made of.

What it leaves out: structured output, forked context (``mode="fork"``), async remote subagents
and human-in-the-loop; how it differs from deepagents' ``SubAgentMiddleware`` is in the class.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from deepagents.middleware.filesystem import FilesystemMiddleware, FilesystemState
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain.tools import ToolRuntime
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langgraph.errors import GraphBubbleUp
from langgraph.types import Command

from labkit._isolate_accounting import ChildRun, calls_by_context, cost_rows
from labkit._isolate_disk import as_files, recording, restore_claims
from labkit._isolate_files import Claim, conflict_reply, digest, file_updates, locate, own_claims, settle
from labkit._isolate_task import TASK_TOOL, TaskArgs, check_call, task_description
from labkit._sizes import check_count
from labkit.prompts import (  # the task tool's texts, importable from here as before
    BAD_CALL,  # noqa: F401
    CHILD_FAILED,
    CHILD_FILES_KEPT,
    GENERAL_PURPOSE_DESCRIPTION,
    GENERAL_PURPOSE_PROMPT,
    NO_TEXT,
    TASK_DESCRIPTION,  # noqa: F401
    TRUNCATED,
)
from labkit.tokens import encoding
from labkit.trace import Recorder

__all__ = ["GENERAL_PURPOSE_PROMPT", "TASK_TOOL", "ChildRun", "IsolateMiddleware", "SubagentSpec",
           "calls_by_context", "cap_output", "check_call", "child_state", "cost_rows", "file_updates",
           "final_text", "general_purpose", "task_description"]


# -- the spec ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SubagentSpec:
    """One kind of subagent: what the parent's ``task`` tool lists, and how a child is built.
    Notebook 12.

    ``tools`` are the child's own (file tools are added by the middleware); ``output_cap`` is the
    most tokens of its reply the parent gets; ``model`` overrides the middleware's model.

    Example:
        >>> from labkit import scenario
        >>> spec = SubagentSpec(**scenario.researcher(), output_cap=400)
        >>> spec.name, len(spec.tools), spec.output_cap
        ('researcher', 2, 400)
    """

    name: str
    description: str
    system_prompt: str
    tools: Sequence[Any] = ()
    output_cap: int | None = None
    model: BaseChatModel | None = None

    def __post_init__(self) -> None:
        for key in ("name", "description", "system_prompt"):
            value = getattr(self, key)
            if not isinstance(value, str):
                raise TypeError(f"SubagentSpec.{key} must be text, got {type(value).__name__}")
        if not self.name.strip() or self.name != self.name.strip() or " " in self.name:
            raise ValueError(f"SubagentSpec.name must be one word with no spaces, got {self.name!r}")
        if not self.description.strip():
            raise ValueError(f"SubagentSpec {self.name!r} needs a description: the parent picks "
                             "a subagent by reading it")
        if isinstance(self.tools, (str, bytes)) or not isinstance(self.tools, Sequence):
            raise TypeError(f"SubagentSpec {self.name!r}: tools must be a list of tools, got "
                            f"{type(self.tools).__name__}")
        object.__setattr__(self, "tools", tuple(self.tools))
        check_count(f"SubagentSpec {self.name!r}: output_cap", self.output_cap, allow_none=True)
        if self.model is not None and not isinstance(self.model, BaseChatModel):
            raise TypeError(f"SubagentSpec {self.name!r}: model must be a chat model or None, got "
                            f"{type(self.model).__name__}")


def general_purpose(tools: Sequence[Any] = (), **overrides: Any) -> SubagentSpec:
    """A ``general-purpose`` spec, like the one deepagents adds by default. Notebook 12."""
    spec = {"name": "general-purpose", "description": GENERAL_PURPOSE_DESCRIPTION,
            "system_prompt": GENERAL_PURPOSE_PROMPT, "tools": tools, **overrides}
    return SubagentSpec(**spec)


# -- pure helpers --------------------------------------------------------------------------------


def child_state(description: str, files: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The child's first state: the description as its only message, and the parent's files
    (nothing of the parent's conversation goes down). Notebook 12."""
    return {"messages": [HumanMessage(description)], "files": dict(files or {})}


def final_text(messages: Sequence[BaseMessage]) -> str:
    """The child's reply: its last AI message with text (as deepagents picks it). Notebook 12."""
    for m in reversed(messages):
        if isinstance(m, AIMessage) and m.text.strip():
            return m.text.rstrip()
    return NO_TEXT


def cap_output(text: str, cap: int | None, name: str = "subagent",
               encoding_name: str = "o200k_base") -> tuple[str, int]:
    """Cut ``text`` to its first ``cap`` BPE tokens and say so; returns (text, tokens before).
    Notebook 12."""
    enc = encoding(encoding_name)
    ids = enc.encode(text, disallowed_special=())
    if cap is None or len(ids) <= cap:
        return text, len(ids)
    kept = enc.decode_bytes(ids[:cap]).decode("utf-8", "ignore")  # a character cut in two: left out
    return kept + TRUNCATED.format(name=name, cap=cap, total=len(ids)), len(ids)


# -- the middleware ------------------------------------------------------------------------------


class IsolateMiddleware(AgentMiddleware):
    """A ``task`` tool that runs each call in a fresh child agent. Notebook 12.

    For each call: **a fresh context** (the child starts from ``[HumanMessage(description)]``, its
    own system prompt and tools); **shared files** (the child gets the parent's files and its
    writes come back; when two calls of one AI message change a path differently — two children,
    or the parent's own file tool and a child — the first keeps it and the later version goes to
    ``<path>.<its tool call id>``, its reply an error naming both; on a disk or a store too);
    **one message back** (the last AI text, cut to ``output_cap`` tokens); **separate
    accounting** (one :class:`ChildRun` per call, thread-safe: the calls of one AI message run in
    parallel). A failing child is answered with the files it wrote, and the parent's run goes on.

    Unlike deepagents' ``SubAgentMiddleware`` (notebook 12 runs both): only ``files`` is passed
    down, no general-purpose subagent is added (:func:`general_purpose` makes one), a deleted file
    is deleted in the parent too, and parallel children never overwrite each other silently.

    ``model`` runs every child whose spec names none. With ``file_tools`` (the default) each child
    gets deepagents' file tools on ``backend`` (``StateBackend`` if None), eviction off;
    ``child_middleware`` is added to every child — the same instances, in parallel children, so
    they must keep no per-run state. Without file tools a child's files still come back if its
    middleware keeps any (an offloader).

    Example:
        >>> from labkit import LabModel, scenario
        >>> iso = IsolateMiddleware(LabModel(), [SubagentSpec(**scenario.researcher())])
        >>> # run = scenario.run(LabModel(delegate_research=True), middleware=[iso])
        >>> # iso.children[0].records, iso.children[0].reply
    """

    name = "labkit.IsolateMiddleware"
    state_schema = FilesystemState

    def __init__(self, model: BaseChatModel, subagents: Sequence[SubagentSpec], *,
                 backend: Any = None, file_tools: bool = True,
                 child_middleware: Sequence[AgentMiddleware] = (),
                 price: str | tuple[float, float] = "lab-model") -> None:
        super().__init__()
        if not isinstance(model, BaseChatModel):
            raise TypeError(f"IsolateMiddleware needs a chat model, got {type(model).__name__}")
        specs = list(subagents)
        if not specs or not all(isinstance(s, SubagentSpec) for s in specs):
            raise TypeError("subagents must be a non-empty list of SubagentSpec (for a dict, "
                            "write SubagentSpec(**d))")
        names = [s.name for s in specs]
        if len(set(names)) != len(names):
            raise ValueError(f"subagent names must be unique, got {names}")
        Recorder(price)  # validates the price now
        self.model, self.specs, self.backend = model, specs, backend
        self.file_tools, self.child_middleware, self.price = file_tools, list(child_middleware), price
        self._children: list[ChildRun] = []
        self._blocks: dict[tuple, dict[str, Claim]] = {}  # parallel block -> who changed which path
        self._pending: dict[tuple, set[str]] = {}  # parallel block -> its calls still running
        self._written: dict[str, dict[str, str]] = {}  # task call -> its child's writes outside state
        self._texts: dict[str, str] = {}  # digest -> text of each version written outside state
        self._lock = threading.Lock()
        self.tools = [self._task_tool()]

    @property
    def children(self) -> list[ChildRun]:
        """Every task call so far, in the order the parent made them. Notebook 12."""
        with self._lock:
            return sorted(self._children, key=lambda c: c.order)

    def _task_tool(self) -> StructuredTool:
        def task(description: str, subagent_type: str, runtime: ToolRuntime) -> Command:
            return self._run(description, subagent_type, runtime.state, runtime.tool_call_id)

        async def atask(description: str, subagent_type: str, runtime: ToolRuntime) -> Command:
            return await self._arun(description, subagent_type, runtime.state, runtime.tool_call_id)

        return StructuredTool.from_function(task, coroutine=atask, name=TASK_TOOL,
                                            description=task_description(self.specs),
                                            args_schema=TaskArgs, infer_schema=False)

    # the task call, in three parts: build the child, run it, fold its result back

    def _child(self, spec: SubagentSpec, recorder: Recorder, tool_call_id: str):
        backend, wrote = recording(self.backend)  # a disk or a store: note what the child writes
        if wrote is not None:
            self._written[tool_call_id] = wrote
        stack = [FilesystemMiddleware(backend=backend, tool_token_limit_before_evict=None,
                                      human_message_token_limit_before_evict=None)] \
            if self.file_tools else []
        model = self.model if spec.model is None else spec.model
        return create_agent(model, tools=list(spec.tools),
                            system_prompt=spec.system_prompt or None, name=spec.name,
                            middleware=[*stack, *self.child_middleware, recorder])

    def _start(self, description: str, subagent_type: str, state: Mapping, tool_call_id: str):
        spec = next(s for s in self.specs if s.name == subagent_type)
        run = ChildRun(locate(state.get("messages", []), tool_call_id)[0], tool_call_id,
                       subagent_type, description)
        recorder = Recorder(self.price)
        run.records = recorder.records
        with self._lock:
            self._children.append(run)
        agent = self._child(spec, recorder, tool_call_id)
        return spec, run, agent, child_state(description, state.get("files"))

    def _settle(self, state: Mapping, tool_call_id: str, subagent_type: str, changed: dict):
        messages = state.get("messages", [])
        block = locate(messages, tool_call_id)[1]
        with self._lock:
            if block not in self._blocks:  # the parent's own file tools in the block come first
                self._blocks[block] = own_claims(messages, tool_call_id)
            return settle(self._blocks[block], changed, tool_call_id, subagent_type,
                          state.get("files") or {})

    def _done(self, request) -> None:
        """A call of the parent finished: forget its block's claims once all its calls have."""
        block = locate(request.state.get("messages", []), request.tool_call["id"])[1]
        with self._lock:
            pending = self._pending.setdefault(block, set(block[1]))
            pending.discard(request.tool_call["id"])
            if not pending:
                self._pending.pop(block)
                self._blocks.pop(block, None)

    def _finish(self, spec, run: ChildRun, result, error, state, tool_call_id) -> Command:
        """The parent's update: the child's reply (or its failure) and the files it wrote — a child
        that failed hands back what it had written by its last finished step, archive included."""
        update: dict[str, Any] = {}
        if error is not None:
            run.error = f"{type(error).__name__}: {error}"
            text, status = CHILD_FAILED.format(name=spec.name, error=run.error), "error"
        else:
            text, run.reply_tokens = cap_output(final_text(result["messages"]), spec.output_cap,
                                                spec.name)
            run.capped = spec.output_cap is not None and run.reply_tokens > spec.output_cap
            status = "success"
        # no "files" key: the child had no files-aware middleware (not "every file deleted")
        after = result.get("files") if isinstance(result, Mapping) else None
        changed = file_updates(state.get("files") or {}, after) if isinstance(after, Mapping) else {}
        wrote = self._written.pop(tool_call_id, None) or {}
        outside = as_files(wrote)  # written to a disk or a store: settled like files in state
        self._texts.update({digest(data): wrote[path] for path, data in outside.items()})
        changed, conflicts = self._settle(state, tool_call_id, spec.name, {**changed, **outside})
        run.files = sorted({*changed, *wrote})  # on a disk or a store too
        with self._lock:
            restore_claims(self.backend, conflicts, self._texts, changed, wrote)
        if changed:
            update["files"] = changed
            if error is not None:
                text += CHILD_FILES_KEPT.format(paths=", ".join(run.files))
        if conflicts:  # the parent hears of each, and still gets the whole reply
            run.conflicts = {c.path: c.saved for c in conflicts}
            this = Claim(tool_call_id, spec.name, None)
            text, status = conflict_reply(text, conflicts, this), "error"
        run.reply = text
        update["messages"] = [ToolMessage(text, tool_call_id=tool_call_id, name=TASK_TOOL,
                                          status=status)]
        return Command(update=update)

    def _run(self, description, subagent_type, state, tool_call_id) -> Command:
        spec, run, agent, first = self._start(description, subagent_type, state, tool_call_id)
        result, error = None, None
        try:  # the state after each step: a child that fails still hands back its files
            for result in agent.stream(first, stream_mode="values"):
                pass
        except GraphBubbleUp:
            raise
        except Exception as e:  # the parent hears about it; its run goes on
            error = e
        return self._finish(spec, run, result, error, state, tool_call_id)

    async def _arun(self, description, subagent_type, state, tool_call_id) -> Command:
        spec, run, agent, first = self._start(description, subagent_type, state, tool_call_id)
        result, error = None, None
        try:
            async for result in agent.astream(first, stream_mode="values"):
                pass
        except GraphBubbleUp:
            raise
        except Exception as e:
            error = e
        return self._finish(spec, run, result, error, state, tool_call_id)

    # malformed calls are answered before the tool node validates them

    def _refusal(self, request) -> ToolMessage | None:
        call = request.tool_call
        if call.get("name") != TASK_TOOL:
            return None
        problem = check_call(call.get("args"), self.specs)
        return None if problem is None else ToolMessage(
            problem, tool_call_id=call["id"], name=TASK_TOOL, status="error")

    @contextmanager
    def _finishing(self, request):
        """Mark the call done when it returns or fails — not on an interrupt (it runs again)."""
        try:
            yield
        except GraphBubbleUp:
            raise
        except BaseException:
            self._done(request)
            raise
        self._done(request)

    def wrap_tool_call(self, request, handler):
        with self._finishing(request):
            refusal = self._refusal(request)
            return refusal if refusal is not None else handler(request)

    async def awrap_tool_call(self, request, handler):
        with self._finishing(request):
            refusal = self._refusal(request)
            return refusal if refusal is not None else await handler(request)
