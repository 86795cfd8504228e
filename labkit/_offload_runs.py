"""The offload panel's runs: the scenario run once per way the model behaves, each setting derived.

Used by: labkit.widgets (``offload_panel``). A move of ``window``, ``export_scale`` or ``tool_limit``
changes what the tools return, what is evicted and where the run stops — rarely what the lab model
decides. So the panel runs the scenario on a window nothing overflows, its requests kept (a
:class:`Reference`), and answers a setting by walking that run's calls again (:func:`walk`): each
tool call re-executed by the real tool (the data tools at the new scale, deepagents' file tools on
the files written so far), each result through a real ``OffloadMiddleware``, each call measured by a
real ``Recorder`` and sent to a real ``LabModel``, which must answer what it answered in the
reference — else the walk gives up and the scenario is run. A smaller window only ends the run at
the first call over it (:func:`cut`). What it leaves out: langgraph's loop (the reference supplies
its plumbing: the order of messages, the tools and system prompt sent).
"""

from __future__ import annotations

import copy
import json
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from types import SimpleNamespace
from typing import Any

from deepagents.backends import StateBackend
from deepagents.middleware.filesystem import FilesystemMiddleware
from langchain.agents.middleware.types import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from labkit import scenario
from labkit._replay_summary import split_pieces
from labkit._token_cache import openai_schema
from labkit.errors import is_overflow
from labkit.model import LabModel
from labkit.offload import EXEMPT_TOOLS, OFFLOADED, OffloadMiddleware, _shortenable
from labkit.scenario.harness import _as_run
from labkit.tokens import TokenCounter, _remember
from labkit.trace import CallRecord, Recorder

__all__ = ["REFERENCE_WINDOW", "OffloadRuns", "Reference", "Walk", "apart", "cut", "data_tools",
           "reference", "walk"]

REFERENCE_WINDOW = 10_000_000  # a reference's window: far over any request the panel can make
_LINES: dict[str, int] = {}  # a line of a long tool result (PIECES) -> its BPE tokens


@dataclass(frozen=True)
class Reference:
    """A real run of the scenario on ``REFERENCE_WINDOW`` (``Recorder(keep_requests=True)``, no
    error), the ``tool_choice`` of each model call (the lab model's log), the limit it ran with
    and what its ``OffloadMiddleware`` weighed."""

    run: scenario.Run
    offload: bool
    choices: tuple
    tool_limit: int
    weighed: tuple


def reference(offload: bool, tool_limit: int, export_scale: float) -> Reference | None:
    """Run the scenario on ``REFERENCE_WINDOW``; ``None`` if the run cannot be walked again."""
    model, counter = LabModel(window=REFERENCE_WINDOW), TokenCounter()
    middleware = [OffloadMiddleware(tool_limit=tool_limit)] if offload else []
    run = scenario.run(model, middleware=middleware, export_scale=export_scale,
                       recorder=Recorder(keep_requests=True))
    if run.error is not None or set(run.state) - {"messages", "files"} or \
            len(model.calls) != len(run.records):
        return None
    for m in run.messages:  # the lines of its long results: a walk at another scale counts by them
        if isinstance(m, ToolMessage) and isinstance(m.content, str) and len(m.content) >= 4_000:
            _by_lines(counter, m.content)
    weighed = tuple(middleware[0].weighed) if offload else ()
    return Reference(run, offload, tuple(c.tool_choice for c in model.calls), tool_limit, weighed)


@dataclass
class Walk:
    """A reference walked at one ``tool_limit`` and export scale: the whole run (on
    ``REFERENCE_WINDOW``) and, per model call, what :func:`cut` needs to end the run there — the
    record as measured before the reply, the model's input tokens and what it was sent, the files
    and the count of results weighed so far. ``window_free``: no request had an argument the
    middleware could shorten, so the window decides only where the run stops."""

    ref: Reference
    tool_limit: int
    run: Any = None
    weighed: tuple = ()
    window_free: bool = True
    before: list[CallRecord] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    sent: list[tuple] = field(default_factory=list)
    files: list[dict] = field(default_factory=list)
    weighed_at: list[int] = field(default_factory=list)
    cuts: dict = field(default_factory=dict)  # window -> (run, weighed)


class _Files(StateBackend):
    """deepagents' ``StateBackend`` — its own reads, writes and grep — over a dict, outside a graph."""

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[str, Any] = {}

    def _read_files(self) -> dict[str, Any]:
        return self.files

    def _send_files_update(self, update: dict[str, Any]) -> None:
        for path, data in update.items():  # the files channel's reducer: None deletes
            if data is None:
                self.files.pop(path, None)
            else:
                self.files[path] = data


def _by_lines(counter: TokenCounter, text: str) -> int:
    """BPE tokens of ``text`` as the sum of its lines' (``labkit._replay_summary.PIECES``: no
    pre-token spans a boundary, so the sum is exact); each line counted once per process."""
    pieces = split_pieces(text)
    new = [p for p in dict.fromkeys(pieces) if p not in _LINES]
    if new:
        if len(_LINES) > 200_000:
            _LINES.clear()
        _LINES.update(zip(new, counter.texts(new)))
    return sum(_LINES[p] for p in pieces)


def _prime(counter: TokenCounter, text: str) -> None:
    """Make a long tool result's count known before the real counters weigh it: an export at a new
    scale is lines counted before, so it costs a sum, not a BPE pass."""
    if len(text) >= 4_000:
        _remember(text, lambda: _by_lines(counter, text))


@lru_cache(maxsize=1)
def _file_tools() -> tuple[_Files, dict]:
    """deepagents' file tools as the scenario's harness makes them, over one ``_Files`` (a walk
    empties it first): made once, as making them takes longer than a walk's use of them."""
    backend = _Files()
    middleware = FilesystemMiddleware(backend=backend, tool_token_limit_before_evict=None,
                                      human_message_token_limit_before_evict=None)
    return backend, {t.name: t for t in middleware.tools}


@lru_cache(maxsize=64)
def _data_tools(export_scale: float) -> dict:
    """The scenario's data tools at this scale, made once (each is a pydantic model: ~2 ms)."""
    return {t.name: t for t in scenario.tools(export_scale=export_scale)}


def data_tools(export_scale: float) -> Callable[[str, dict], Any]:
    """The output of the scenario's data tool ``name`` at this scale for ``args`` — the tool's own
    function, as the tool node calls it — each made once; ``None`` for another tool."""
    tools, outputs = _data_tools(export_scale), {}

    def output(name: str, args: dict) -> Any:
        if name not in tools:
            return None
        key = (name, json.dumps(args, sort_keys=True))
        if key not in outputs:
            outputs[key] = tools[name].func(**args)
        return outputs[key]
    return output


def _result(was: ToolMessage, call: dict, data: Callable, files: dict, counter: TokenCounter):
    """The tool message ``call`` gets now: its tool run again, the reference's message around it."""
    content, status = data(call["name"], call["args"]), was.status
    if content is None and call["name"] in files:
        try:
            runtime = SimpleNamespace(tool_call_id=was.tool_call_id)  # all deepagents' tools read of it
            new = files[call["name"]].func(**call["args"], runtime=runtime)
        except TypeError:
            return None
        if not isinstance(new, ToolMessage):
            return None
        content, status = new.content, new.status
    if content is None:
        return None
    if isinstance(content, str):
        _prime(counter, content)
    kwargs = {k: v for k, v in was.additional_kwargs.items() if k != OFFLOADED}
    return was.model_copy(update={"content": content, "status": status, "additional_kwargs": kwargs})


def walk(ref: Reference, tool_limit: int, export_scale: float, window: int = REFERENCE_WINDOW,
         data: Callable | None = None) -> Walk | None:
    """The run ``scenario.run`` would make at this setting (with ``ref.offload``), or ``None``
    where the lab model decides otherwise than in ``ref`` (or the run has a step not walked again).
    ``data``: :func:`data_tools` at this scale, if made already."""
    backend, files = _file_tools()
    backend.files = {}
    data = data or data_tools(export_scale)
    offload = OffloadMiddleware(tool_limit=tool_limit, backend=backend) if ref.offload else None
    model, recorder, counter = LabModel(window=window), Recorder(), TokenCounter()
    done, bound = Walk(ref, tool_limit), {}  # bound: id(tool) -> (tool, schema), as bind_tools converts

    def send(request):
        done.before.append(replace(recorder.records[-1]))  # as measured: what a refusal keeps
        for t in request.tools:
            if id(t) not in bound:
                bound[id(t)] = t, openai_schema(t, convert_to_openai_tool)
        schemas = [bound[id(t)][1] for t in request.tools]
        sent = ([request.system_message] if request.system_message else []) + list(request.messages)
        done.sent.append((sent, schemas, request.tool_choice))
        reply = model._respond(sent, None, tools=schemas, tool_choice=request.tool_choice)
        done.inputs.append(model.calls[-1].input_tokens)
        return ModelResponse(result=[reply])

    was, out, calls, error = ref.run.messages, [], {}, None
    for record, choice in zip(ref.run.records, ref.choices):
        for m in was[len(out):record.messages_stored]:
            if isinstance(m, ToolMessage):
                call = calls.get(m.tool_call_id)
                m = None if call is None else _result(m, call, data, files, counter)
                if m is not None and offload is not None:
                    m = offload.wrap_tool_call(SimpleNamespace(tool_call=call), lambda _, m=m: m)
                if not isinstance(m, ToolMessage):
                    return None
            elif isinstance(m, HumanMessage):
                recorder.start_turn(m.text)
            else:
                return None  # an AI message no model call of the reference made
            out.append(m)
        state = list(out)
        done.files.append(dict(backend.files))
        done.weighed_at.append(len(offload.weighed) if offload else 0)
        done.window_free &= offload is None or offload.args_trigger is None or \
            not _shortenable(state, offload.arg_max_length)
        request = ModelRequest(model=model, messages=state, system_message=record.request.system,
                               tool_choice=choice, tools=list(record.request.tools),
                               state={"messages": state})
        try:
            if offload is None:
                response = recorder.wrap_model_call(request, send)
            else:
                response = offload.wrap_model_call(request, lambda r: recorder.wrap_model_call(r, send))
        except Exception as e:  # the run ends here, as scenario.run's would
            error = e
            break
        if not isinstance(response, ModelResponse) or len(was) <= len(out):
            return None  # a middleware changed the state (a human message offloaded): not walked
        reply, said = response.result[0], was[len(out)]
        if not isinstance(said, AIMessage) or (reply.tool_calls, reply.content) != (said.tool_calls,
                                                                                     said.content):
            return None  # the lab model decides otherwise
        out.append(said.model_copy(update={"usage_metadata": reply.usage_metadata}))
        calls.update((c["id"], c) for c in said.tool_calls)
    if error is None and len(out) != len(was):
        return None
    for mine, theirs in zip([*recorder.records, *done.before], [*ref.run.records] * 2):
        mine.thread, mine.agent, mine.scope = theirs.thread, theirs.agent, theirs.scope  # the graph's
    turns = len(recorder.turns) - (error is not None)
    done.run = _as_run({"messages": out, "files": dict(backend.files)}, recorder.records, error, turns)
    done.weighed = tuple(offload.weighed) if offload is not None else ()
    return done


def cut(done: Walk, window: int) -> tuple[scenario.Run, tuple]:
    """``(run, weighed)`` of ``done`` on a smaller window: the run as it was up to the first call
    over it, that call refused by the lab model itself (a ``LabModel`` on ``window`` asked again)
    and recorded as the ``Recorder`` records a refusal. Needs ``done.window_free``."""
    if window in done.cuts:
        return done.cuts[window]
    k = next((i for i, n in enumerate(done.inputs) if n > window), None)
    if k is None:
        return done.run, done.weighed
    sent, schemas, choice = done.sent[k]
    try:
        LabModel(window=window)._respond(sent, None, tools=schemas, tool_choice=choice)
    except Exception as e:  # noqa: BLE001 — whatever the model raises ends the run
        error = e
    else:
        raise AssertionError(f"the lab model accepted {done.inputs[k]:,} tokens on a {window:,} window")
    refused = replace(done.before[k], error=f"{type(error).__name__}: {error}", overflow=is_overflow(error))
    records = [copy.copy(r) for r in done.run.records[:k]] + [refused]
    run = _as_run({"messages": done.run.messages[:refused.messages_stored], "files": done.files[k]},
                  records, error, refused.turn)
    done.cuts[window] = run, done.weighed[:done.weighed_at[k]]
    return done.cuts[window]


def apart(ref: Reference, tool_limit: int, data: Callable) -> int:
    """How many of ``ref``'s weighed results a setting (``tool_limit``, ``data``: its data tools)
    would evict otherwise than ``ref`` did: the reference evicting most alike is walked first."""
    if not ref.offload:
        return 0
    calls = {c["id"]: c for m in ref.run.messages if isinstance(m, AIMessage) for c in m.tool_calls}
    results = [calls[m.tool_call_id] for m in ref.run.messages if isinstance(m, ToolMessage)
               and m.tool_call_id in calls and calls[m.tool_call_id]["name"] not in EXEMPT_TOOLS]
    counter, differ = TokenCounter(), 0
    for call, was in zip(results, ref.weighed):
        now = data(call["name"], call["args"])
        if isinstance(now, str):
            _prime(counter, now)
        n = counter.text(now) if isinstance(now, str) else was
        differ += (n > tool_limit) != (was > ref.tool_limit)
    return differ


class OffloadRuns:
    """What the offload panel computes: ``(run, weighed)`` per setting, from as few real runs of
    the scenario as the lab model's decisions need (one per way it behaves, kept as references).

    ``fallback(window=, offload=, tool_limit=, export_scale=)`` runs the scenario at the setting
    itself, for a run that cannot be walked. ``references``: ``(offload, tool_limit,
    export_scale)`` settings run first; ``scales``: export scales whose data tools are made now.
    Walks are kept for the 64 settings used last."""

    def __init__(self, fallback: Callable[..., tuple], references: Iterable[tuple] = (),
                 scales: Iterable[float] = ()) -> None:
        self.fallback = fallback
        self.references = [r for r in (reference(*setting) for setting in references) if r is not None]
        self.walks: OrderedDict[tuple, list[Walk]] = OrderedDict()
        for scale in scales:
            _data_tools(scale)

    def __call__(self, window: int, offload: bool, tool_limit: int, export_scale: float) -> tuple:
        key = (offload, export_scale)
        same = self.walks.setdefault(key, [])
        self.walks.move_to_end(key)
        while len(self.walks) > 64:
            self.walks.popitem(last=False)
        done = next((w for w in same if not offload or all(  # the same evict-or-keep decisions
            (n > tool_limit) == (n > w.tool_limit) for n in w.weighed)), None)
        if done is None:
            done = self._walk(offload, tool_limit, export_scale)
            if done is None:
                return self.fallback(window=window, offload=offload, tool_limit=tool_limit,
                                     export_scale=export_scale)
            same.append(done)
        if done.window_free:
            return cut(done, window)
        at_window = walk(done.ref, tool_limit, export_scale, window)
        return (at_window.run, at_window.weighed) if at_window else self.fallback(
            window=window, offload=offload, tool_limit=tool_limit, export_scale=export_scale)

    def _walk(self, offload: bool, tool_limit: int, export_scale: float) -> Walk | None:
        """A walk from the first reference the lab model agrees with, else from a new one."""
        data = data_tools(export_scale)
        mine = [r for r in self.references if r.offload == offload]
        for ref in sorted(mine, key=lambda r: apart(r, tool_limit, data)):  # stable: most recent first
            if (done := walk(ref, tool_limit, export_scale, data=data)) is not None:
                self.references.remove(ref)
                self.references.insert(0, ref)
                return done
        ref = reference(offload, tool_limit, export_scale)
        if ref is None:
            return None
        self.references.insert(0, ref)
        return walk(ref, tool_limit, export_scale, data=data)
