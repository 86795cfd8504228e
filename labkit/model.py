"""LabModel — the offline, deterministic chat model the course runs on — and ``get_model()``.

Notebook 01 introduces it; every notebook uses it.

LabModel is a real LangChain ``BaseChatModel`` (``bind_tools`` with ``tool_choice``, streaming,
``usage_metadata``, a ``profile``), but it is **not a language model**. It is a short script that
looks only at the messages it is sent, so every context decision has a visible consequence:

* **Overflow is real.** Input above ``window`` tokens (BPE, tool schemas included) raises
  ``langchain_core.exceptions.ContextOverflowError``.
* **It works from evidence.** A task is a list of steps (``labkit.scenario``); it takes the first
  step whose evidence — the tool result's header, or a summary line quoting it — is not in its
  context. Summarize the evidence away and it repeats the work.
* **It needs the goal.** If neither the user's request nor a summary's SESSION INTENT is
  visible, it says it has lost track — goal drift you can count.
* **It recovers facts only from context or files.** Asked the needle question, it answers from
  context; else it greps (or pages through) a file path it can see — an offload stub, a summary's
  archive; else it declines to give a number.
* **As a summarizer** (a prompt with SESSION INTENT / SUMMARY / ARTIFACTS / NEXT STEPS, labkit's or
  deepagents'), it writes an extractive summary that drops exact figures unless
  ``keep_figures=True`` or the prompt asks to keep exact figures.
* **As a subagent** it researches one company and returns a short report, or the raw dump with
  ``raw_subagent_output=True``. If its context asks for raw notes in a file
  (``scenario.NOTES_INSTRUCTION``, or the shared file's) and it has ``write_file``, it saves the dump to
  ``scenario.notes_path(ticker)`` first and names the path in its reply (only the path, in raw mode).
* **As a parent** (notebook 12), with ``delegate_research=True`` and a ``task`` tool bound during
  the report task, it delegates: one ``task`` call per company whose research evidence is not
  visible — all in one AI message — to ``"researcher"`` if the tool's description lists it, else
  ``"general-purpose"``. A company whose task came back without the evidence is not delegated
  again: the parent does that step itself. It reads figures and headlines from the reports.
* **It keeps a goal anchor when given one** (notebook 14), for a task of 3 or more steps (the
  threshold in ``write_todos``' own description). With ``write_todos`` bound (langchain's
  ``TodoListMiddleware``) it writes a todo list — the user's request first, then one item per
  step — at the start of the task and again after each step, statuses from the evidence it sees.
  With a system prompt naming ``/progress.md`` (``PROGRESS_PROMPT``) it keeps that file with
  ``write_file`` — the goal and the evidence of each step done — reading it first whenever it is
  not in view. When no request or summary intent is visible, it takes the goal and the steps done
  from the latest visible todo list or progress file; with the progress file on and nothing in
  view, it reads the file before saying it has lost track.
* **It uses skills and memory when deepagents shows them** (notebook 13). When the system
  prompt's skills section lists a skill whose description shares an acronym (``QBR``) with the
  user's request, it reads that ``SKILL.md`` with ``read_file`` before its first step, and drafts
  the report in the format it finds there (title and required ``## `` headings) — only while the
  read result is in its context. It applies the preferences it can see in ``<agent_memory>``
  (a TL;DR line, a Sources line) and nowhere else; when the user states one ("From now on, …"),
  it adds it to the memory file shown there with ``edit_file`` and says so.
* **It compacts by hand only when told how** (notebook 11). With a ``compact_conversation`` tool
  bound, ``compact_when`` sets a fixed policy: ``"never"`` (the default: it ignores the tool);
  ``"boundary"``: when the latest message is a user request naming a scenario task and the
  message before it is a finished answer (the previous task is done), it calls the tool first —
  once per turn, since the next message is the tool's answer; ``"every_step"``: after every tool
  result, mid-task. Never right after ``compact_conversation``'s own answer (no loops), and
  never when the task is lost.

Every call is logged in ``model.calls`` — the course's main instrument for "what the model saw".
Its tool-call ids read ``call_<tag>_<n>``: ``tag`` is 4 hex digits of the sha256 of the text of
the first human message it was sent (a middleware's summary aside; a child's is its task), ``n``
counts that context's tool calls — so children with their own models, given different tasks,
do not share ids. (Two contexts with the same first message, or none left in view after a
compaction, share a tag; labkit.isolate reports the file conflict that could follow.)

What it leaves out: any language understanding. Outside the scenario it says what it is and how
to switch to a real model (``LABKIT_MODEL``); when a tool is forced or written out literally as
``name(args)``, it calls it with those literal arguments or schema placeholders — never a guess.

The helpers it is made of live in private modules, one concept each: ``_lab_context`` (reading
the context), ``_lab_writing`` (the summary, drafts and replies it writes), ``_lab_anchors``
(the goal anchors) and ``_lab_skills`` (skills and memory).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.chat_models import LangSmithParams
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr, SecretStr, field_validator

from labkit import prompts
from labkit import scenario as sc
from labkit._lab_anchors import (  # the constants are re-exported: evals and notebook 14 use them
    ANCHOR_MIN_STEPS,
    TODO_TOOL,
    _anchor_call,
    _anchored_task,
    _done_steps,
    _recall_call,
)
from labkit._lab_context import _PATHS, _active_task, _is_summary_prompt, _plain, _read, _View
from labkit._lab_skills import _memory_sources, _skill_to_read, _stated_preference, prompt_sections
from labkit._lab_writing import (  # summarize is re-exported: replay and the tests use it
    _draft,
    _literal_args,
    _noted_figure,
    _notes_to_write,
    _research_reply,
    summarize,
)
from labkit.prompts import PROGRESS_PATH, PROGRESS_PROMPT  # re-exported, like the anchors
from labkit.tokens import DEFAULT_ENCODING, TOKENS_PER_MESSAGE, TokenCounter, message_text

__all__ = ["Call", "InvalidHistoryError", "LabModel", "get_model", "prompt_sections"]

PROVIDER = "labkit"
MODEL_NAME = "lab-model"
COMPACT_TOOL = "compact_conversation"  # labkit's and deepagents' manual-compaction tool


class InvalidHistoryError(ValueError):
    """A message history no provider would accept (an orphan tool result, say)."""

    status_code = 400


@dataclass
class Call:
    """One call to the lab model: exactly what it received and what it answered."""

    messages: list[BaseMessage]
    tools: list[str]
    input_tokens: int
    kind: str  # "agent" or "summary"
    response: AIMessage | None = None
    error: str | None = None
    tool_choice: Any = None


def _check_history(messages: list[BaseMessage]) -> None:
    """Refuse what a provider would refuse: nothing to answer, non-text content, a tool result
    that answers no call, or a tool call left without its result."""
    if not messages:
        raise InvalidHistoryError("LabModel was called with an empty message list: there is "
                                  "nothing to answer. Pass at least one human message.")
    pending: dict[str, int] = {}
    for i, m in enumerate(messages):
        if not isinstance(m, BaseMessage):
            raise InvalidHistoryError(f"item {i} is a {type(m).__name__}, not a langchain message")
        try:
            message_text(m)
        except ValueError as e:
            raise InvalidHistoryError(f"message {i}: {e}") from e
        if isinstance(m, ToolMessage):
            if m.tool_call_id not in pending:
                raise InvalidHistoryError(
                    f"orphan tool message at position {i} (tool_call_id={m.tool_call_id!r}): it "
                    "answers no tool call of the AI message before it. Real providers reject this "
                    "history (OpenAI: 'messages with role \"tool\" must be a response to a "
                    "preceding message with \"tool_calls\"')."
                )
            del pending[m.tool_call_id]
            continue
        if pending:
            raise _unanswered(pending, f"the {m.type} message at position {i}")
        if isinstance(m, AIMessage):
            pending = {tc["id"]: i for tc in m.tool_calls}
    if pending:
        raise _unanswered(pending, "the end of the history")


def _unanswered(pending: dict[str, int], where: str) -> InvalidHistoryError:
    return InvalidHistoryError(
        f"the AI message at position {min(pending.values())} made tool calls {sorted(pending)} "
        f"that have no tool result before {where}. Real providers reject this history "
        "(Anthropic: 'tool_use ids were found without tool_result blocks immediately after')."
    )


class LabModel(BaseChatModel):
    """The course's offline chat model. See the module docstring for how it behaves.

    It takes the standard chat-model parameters (``model``, ``max_tokens``, ``stop``,
    ``streaming``, ``temperature``...) and refuses unknown ones, so a typo is not a silent
    default. ``with_structured_output`` works through a forced tool call: the fields come back as
    placeholders such as ``"<setup>"``.

    Example:
        >>> model = LabModel(window=128_000)
        >>> model.profile["max_input_tokens"]
        128000
        >>> LabModel(window=128_000, profile=None).profile is None  # the no-profile trap
        True
    """

    window: int = 128_000
    """Context window in tokens; input above it raises ContextOverflowError."""
    keep_figures: bool = False
    """As a summarizer, keep exact figures and ids instead of dropping them."""
    raw_subagent_output: bool = False
    """As a subagent, return the raw tool output instead of a short report."""
    delegate_research: bool = False
    """As a parent with a ``task`` tool, hand each company's research to a subagent."""
    compact_when: Literal["never", "boundary", "every_step"] = Field(
        default="never",
        description="When to call a bound compact_conversation tool: never; at a task boundary "
                    "(a new user request after a finished answer, once per turn); or after every "
                    "tool result (mid-task).")
    max_output_tokens: int = Field(default=4096, alias="max_tokens")
    """Reported in the profile (deepagents budgets with it); the lab model's replies are not cut."""
    model_name: str = Field(default=MODEL_NAME, alias="model")
    encoding_name: str = DEFAULT_ENCODING
    # The standard chat-model parameters, so LabModel drops in where a provider model was.
    stop: list[str] | None = None  # applied: a reply is cut at the first stop sequence
    streaming: bool = False  # applied: invoke() goes through _stream, as with provider models
    temperature: float | None = None  # no effect: the script is deterministic
    timeout: float | None = None  # no effect (nor max_retries, api_key): no network, no key
    max_retries: int | None = None
    api_key: SecretStr | None = None

    _calls: list[Call] = PrivateAttr(default_factory=list)
    _ids: dict[str, int] = PrivateAttr(default_factory=dict)  # context tag -> last number used
    _ids_lock: Any = PrivateAttr(default_factory=threading.Lock)  # children may share one model
    _counter: TokenCounter | None = PrivateAttr(default=None)

    model_config = {"populate_by_name": True, "extra": "forbid"}

    @field_validator("window", "max_output_tokens", mode="before")
    @classmethod
    def _positive(cls, v: Any, info) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"{info.field_name} must be a positive whole number of tokens, "
                             f"got {v!r}")
        return v

    def _resolve_model_profile(self):
        if "profile" in self.model_fields_set:  # profile=None given explicitly: keep none
            return None
        return {"max_input_tokens": self.window, "max_output_tokens": self.max_output_tokens,
                "tool_calling": True, "tool_choice": True, "structured_output": False,
                "text_inputs": True, "text_outputs": True, "image_inputs": False,
                "audio_inputs": False, "video_inputs": False, "pdf_inputs": False}

    # -- what the lab knows about itself -------------------------------------------------------

    @property
    def _llm_type(self) -> str:
        return "labkit-lab-model"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "window": self.window,
                "keep_figures": self.keep_figures, "compact_when": self.compact_when}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = LangSmithParams(ls_provider=PROVIDER, ls_model_type="chat",
                                 ls_model_name=kwargs.get("model") or self.model_name,
                                 ls_max_tokens=self.max_output_tokens)
        if self.temperature is not None:
            params["ls_temperature"] = self.temperature
        if stop or self.stop:
            params["ls_stop"] = stop or self.stop
        return params

    @property
    def calls(self) -> list[Call]:
        """Every call so far, oldest first: what the model received and what it answered."""
        return self._calls

    @property
    def counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = TokenCounter(self.encoding_name)
        return self._counter

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: str | dict | bool | None = None,
                   **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools as OpenAI-style schemas. ``tool_choice`` may be ``"auto"``, ``"none"``,
        ``"any"``/``"required"``/``True`` (some tool must be called) or a tool's name."""
        schemas = [convert_to_openai_tool(t) for t in tools]
        names = [s["function"]["name"] for s in schemas]
        if isinstance(tool_choice, dict):
            tool_choice = tool_choice.get("function", {}).get("name") or tool_choice.get("name")
        if isinstance(tool_choice, str) and tool_choice not in ("auto", "none", "any", "required") \
                and tool_choice not in names:
            raise ValueError(f"tool_choice {tool_choice!r} names no bound tool; bound: {names}")
        return super().bind(tools=schemas, tool_choice=tool_choice, **kwargs)

    # -- the call ------------------------------------------------------------------------------

    def _respond(self, messages: list[BaseMessage], stop: list[str] | None, tools=None,
                 tool_choice: Any = None, model: str | None = None, **_: Any) -> AIMessage:
        """One call: check the history, log it, refuse an overflow, act, then stamp the reply.
        ``model`` (a per-call override) only renames the reply: there is one script."""
        tools = list(tools or [])
        _check_history(messages)
        names = [t["function"]["name"] for t in tools]
        n_in = self.counter.messages(messages) + sum(
            self.counter.tool(t) for t in tools)
        last = _plain(messages[-1])
        call = Call(list(messages), names, n_in, "summary" if _is_summary_prompt(last) else "agent",
                    tool_choice=tool_choice)
        self._calls.append(call)
        if n_in > self.window:
            call.error = (f"prompt is too long: {n_in} tokens exceed the lab model's context window "
                          f"of {self.window} tokens (maximum context length exceeded)")
            raise ContextOverflowError(call.error)
        if call.kind == "summary":
            message = AIMessage(self._summarize(last, prompt=last))
        else:
            message = self._act(_read(messages), tools, tool_choice)
            self._number(message, messages)
        for s in stop or self.stop or ():
            if s and s in message.content:
                message.content = message.content[: message.content.index(s)]
        n_out = self.counter.message(message) - TOKENS_PER_MESSAGE
        message.usage_metadata = {"input_tokens": n_in, "output_tokens": n_out,
                                  "total_tokens": n_in + n_out}
        message.response_metadata = {"model_name": model or self.model_name,
                                     "model_provider": PROVIDER,
                                     "finish_reason": "tool_calls" if message.tool_calls else "stop"}
        call.response = message
        return message

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        message = self._respond(messages, stop, **kwargs)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None,
                **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        """The reply word by word, then one last chunk with the tool calls, the usage and the
        metadata (so usage is counted once when chunks are added up)."""
        message = self._respond(messages, stop, **kwargs)
        for piece in re.findall(r"\S+\s*|\s+", message.content):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece, id=message.id))
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk
        yield ChatGenerationChunk(message=AIMessageChunk(
            content="", id=message.id, chunk_position="last",
            tool_call_chunks=[{"name": tc["name"], "args": json.dumps(tc["args"]), "id": tc["id"],
                               "index": i, "type": "tool_call_chunk"}
                              for i, tc in enumerate(message.tool_calls)],
            usage_metadata=message.usage_metadata, response_metadata=message.response_metadata))

    # -- behaviour -----------------------------------------------------------------------------

    def _tool_call(self, name: str, args: dict) -> dict:
        return {"name": name, "args": args, "id": None, "type": "tool_call"}  # _number sets it

    def _number(self, message: AIMessage, messages: list[BaseMessage]) -> None:
        """Give the reply's tool calls their ids: ``call_<tag>_<n>``, ``n`` past both this model's
        last number for the context and any id of that form already in it (a history another
        model made), so an id never repeats in a context."""
        if not message.tool_calls:
            return
        first = next((m for m in messages if isinstance(m, HumanMessage)  # not a summary: its
                      and not m.additional_kwargs.get("lc_source")), None)  # archive name is random
        text = first.text if first is not None else ""
        tag = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:4]
        mine = re.compile(rf"call_{tag}_(\d+)")
        seen = [int(hit.group(1)) for m in messages if isinstance(m, AIMessage)
                for tc in m.tool_calls if (hit := mine.fullmatch(tc["id"] or ""))]
        with self._ids_lock:
            n = max([self._ids.get(tag, 0), *seen])
            self._ids[tag] = n + len(message.tool_calls)
        message.tool_calls = [{**tc, "id": f"call_{tag}_{n + k:03d}"}
                              for k, tc in enumerate(message.tool_calls, start=1)]

    def _act(self, view: _View, tools: list[dict], tool_choice: Any) -> AIMessage:
        """Decide from the context alone; ``tool_choice`` narrows the tools it may call ("none":
        none, a name: that one) and, if it forces a call the script did not make, the call is
        made with literal arguments or placeholders."""
        names = [t["function"]["name"] for t in tools]
        forced = bool(names) and (tool_choice in ("any", "required", True) or tool_choice in names)
        if tool_choice == "none" or tool_choice in names:
            names = [n for n in names if n == tool_choice]
            tools = [t for t in tools if t["function"]["name"] in names]
        task = _active_task(view) or _anchored_task(view)
        noted = self._skills_and_memory(task, view, names)  # notebook 13
        if noted is not None:
            message = noted
        elif task is not None and _wants_compaction(self.compact_when, view, names):
            message = AIMessage("", tool_calls=[self._tool_call(COMPACT_TOOL, {})])
        elif task is None:
            recall = _recall_call(view, names)
            message = AIMessage("", tool_calls=[self._tool_call(*recall)]) if recall \
                else self._outside(view, tools)
        elif task.key == "needle":
            message = self._answer_needle(view, names)
        else:
            message = self._delegate(task, view, tools) or self._work(task, view, names)
        if forced and not message.tool_calls:
            message = AIMessage("", tool_calls=[
                self._tool_call(names[0], _literal_args(tools[0], view))])
        return message

    def _work(self, task: sc.Task, view: _View, names: list[str]) -> AIMessage:
        done = _done_steps(task, view)
        anchor = _anchor_call(task, view, names, done)
        if anchor:
            return AIMessage("", tool_calls=[self._tool_call(*anchor)])
        for step in task.steps:
            if step.key in done or step.tool not in names:
                continue
            args = dict(step.args)
            if step.tool == "write_file":
                args["content"] = _draft(task, step, view)
            return AIMessage("", tool_calls=[self._tool_call(step.tool, args)])
        notes = _notes_to_write(task, view, names)
        if notes:
            return AIMessage("", tool_calls=[self._tool_call("write_file", notes)])
        return AIMessage(self._finish(task, view, names))

    def _delegate(self, task: sc.Task, view: _View, tools: list[dict]) -> AIMessage | None:
        """As a parent: one ``task`` call per company not yet researched nor delegated."""
        schema = next((t["function"] for t in tools if t["function"]["name"] == "task"), None)
        if not self.delegate_research or task.key != "report" or schema is None:
            return None
        listed = re.search(r"^\s*- researcher:", schema.get("description", ""), re.M)
        kind = "researcher" if listed else "general-purpose"
        asked = {c["args"].get("description") for c, _ in view.answered.values() if c["name"] == "task"}
        calls = []
        for research in (t for t in sc.tasks() if t.key.startswith("research:")):
            if research.request in asked or all(s.evidence in view.text for s in research.steps):
                continue
            calls.append(self._tool_call("task", {"description": research.request,
                                                  "subagent_type": kind}))
        return AIMessage("", tool_calls=calls) if calls else None

    def _finish(self, task: sc.Task, view: _View, names: list[str]) -> str:
        if task.key.startswith("research:"):
            return _research_reply(task.key.split(":")[1], view, self.raw_subagent_output)
        if task.output and "write_file" not in names:
            body = "\n".join(_draft(task, s, view) for s in task.steps if s.tool == "write_file")
            return f"I have no write_file tool, so here is the draft for {task.output}:\n\n{body}"
        if task.key == "briefings":
            return f"One briefing per competitor is written under {sc.BRIEFINGS_DIR}/."
        if task.key == "report":
            return f"The weekly competitor report is written to {sc.REPORT_PATH}; it covers all " \
                   "five competitors."
        return f"The risks note is saved to {sc.RISKS_PATH}, one line per competitor."

    def _answer_needle(self, view: _View, names: list[str]) -> AIMessage:
        n = sc.needle()
        value = n.find(view.text) or _noted_figure(n, view.text)
        if value:
            return AIMessage(f"Brightloom's Q3 net revenue retention was {value}, as recorded in "
                             f"its market-data export (KPI `{n.kpi}`).")
        searched: dict[str, int] = {}  # path -> next offset (grep counts as all)
        for call, result in view.answered.values():
            path = call["args"].get("path") or call["args"].get("file_path")
            if call["name"] == "grep" and path:
                searched[path] = 10**9
            elif call["name"] == "read_file" and path:
                m = re.search(r"lines \d+-(\d+) of (\d+)", result)
                done = not m or int(m.group(1)) >= int(m.group(2))
                searched[path] = 10**9 if done else max(searched.get(path, 0), int(m.group(1)))
        for path in dict.fromkeys(p.rstrip(".:") for p in _PATHS.findall(view.text)):
            if path.startswith("/reports/") or searched.get(path, 0) >= 10**9:
                continue
            if "grep" in names:
                return AIMessage("", tool_calls=[self._tool_call(
                    "grep", {"pattern": n.pattern, "path": path, "output_mode": "content"})])
            if "read_file" in names:
                return AIMessage("", tool_calls=[self._tool_call(
                    "read_file", {"file_path": path, "offset": searched.get(path, 0), "limit": 200})])
        detail = ""
        if f"{n.ticker} {n.kpi}" in view.text or "exact figure not kept" in view.text:
            detail = " — my summary says the figure was reported, but not its value"
        return AIMessage(prompts.NEEDLE_NOT_FOUND.format(detail=detail))

    def _skills_and_memory(self, task: sc.Task | None, view: _View, names: list[str]
                           ) -> AIMessage | None:
        """Record a preference the user just stated, or read a skill that fits the request."""
        said = _stated_preference(view)
        memory = _memory_sources(view) if said else {}
        if memory:
            i, rule = said
            path, content = next(iter(memory.items()))
            after = {m.tool_call_id for m in view.messages[i + 1:] if isinstance(m, ToolMessage)}
            edits = [r for cid, (c, r) in view.answered.items() if cid in after
                     and c["name"] == "edit_file" and c["args"].get("file_path") == path]
            if edits:
                return AIMessage(prompts.MEMORY_SAVED.format(rule=rule, path=path,
                                                             result=edits[-1]))
            if rule in content:
                return AIMessage(prompts.MEMORY_HAD.format(rule=rule, path=path))
            if "edit_file" in names:
                last = [line for line in content.splitlines() if line.strip()][-1]
                return AIMessage("", tool_calls=[self._tool_call("edit_file", {
                    "file_path": path, "old_string": last, "new_string": f"{last}\n- {rule}"})])
        path = _skill_to_read(task, view, names)
        if path:
            return AIMessage("", tool_calls=[self._tool_call(
                "read_file", {"file_path": path, "limit": 1000})])
        return None

    def _outside(self, view: _View, tools: list[dict]) -> AIMessage:
        """No scenario task is visible: goal lost, a literal tool call, or the plain intro."""
        lab_context = any(s.evidence in view.text for t in sc.tasks() for s in t.steps) or \
            "SESSION INTENT" in view.text
        if lab_context:
            return AIMessage(prompts.GOAL_LOST)
        humans = [i for i, m in enumerate(view.messages) if m.type == "human"]
        if humans and tools:
            i = humans[-1]
            asked = _plain(view.messages[i])
            results = [m for m in view.messages[i + 1:] if isinstance(m, ToolMessage)]
            if results:
                return AIMessage(f"The tool returned: {_plain(results[-1])}")
            for t in tools:
                name = t["function"]["name"]
                if re.search(rf"\b{re.escape(name)}\s*\(", asked):
                    return AIMessage("", tool_calls=[self._tool_call(name, _literal_args(t, view))])
        return AIMessage(prompts.LAB_MODEL_INTRO)

    def _summarize(self, text: str, prompt: str) -> str:
        body = text
        if "<messages>" in text:
            body = text[text.rfind("<messages>") + len("<messages>"):]
            body = body[: body.rfind("</messages>")] if "</messages>" in body else body
        keep = self.keep_figures or "exact figures" in prompt.lower().replace(body.lower(), "")
        return summarize(body, keep_figures=keep)


def _wants_compaction(policy: str, view: _View, names: list[str]) -> bool:
    """Should the next reply be a ``compact_conversation`` call? (The ``compact_when`` policy.)"""
    if policy == "never" or COMPACT_TOOL not in names:
        return False
    last = view.messages[-1]
    if policy == "every_step":
        if not isinstance(last, ToolMessage):
            return False
        call = view.answered.get(last.tool_call_id)
        return (call[0]["name"] if call else last.name) != COMPACT_TOOL
    before = view.messages[-2] if len(view.messages) > 1 else None
    return (isinstance(last, HumanMessage) and not last.additional_kwargs.get("lc_source")
            and any(t.marker in _plain(last) for t in sc.tasks())
            and isinstance(before, AIMessage) and not before.tool_calls)


# -- choosing a model ---------------------------------------------------------------------------

_PROVIDERS = {
    "openai": ("langchain_openai", "langchain-openai", "OPENAI_API_KEY"),
    "anthropic": ("langchain_anthropic", "langchain-anthropic", "ANTHROPIC_API_KEY"),
    "ollama": ("langchain_ollama", "langchain-ollama", None),
}


def get_model(spec: str | None = None, **kwargs: Any) -> BaseChatModel:
    """The model the notebooks use: the lab model unless ``LABKIT_MODEL`` names a real one.

    ``LABKIT_MODEL=provider:model`` with provider ``openai``, ``anthropic`` or ``ollama``. For an
    OpenAI-compatible endpoint such as DeepSeek's, use ``openai:deepseek-chat`` and set
    ``LABKIT_BASE_URL=https://api.deepseek.com`` (and ``OPENAI_API_KEY`` to that service's key).
    Keyword arguments go to ``LabModel`` or to ``init_chat_model``.
    """
    spec = (spec if spec is not None else os.environ.get("LABKIT_MODEL", "")).strip()
    if spec in ("", "lab", "labkit", MODEL_NAME):
        return LabModel(**kwargs)
    provider, sep, name = spec.partition(":")
    if not (provider and sep and name):
        raise ValueError(f"LABKIT_MODEL must look like provider:model (e.g. openai:gpt-4.1-mini), "
                         f"got {spec!r}")
    if provider not in _PROVIDERS:
        raise ValueError(f"unknown provider {provider!r} in LABKIT_MODEL={spec!r}; labkit supports "
                         f"{', '.join(sorted(_PROVIDERS))} (or unset it for the offline lab model)")
    module, package, key = _PROVIDERS[provider]
    try:
        __import__(module)
    except ImportError as e:
        raise ImportError(f"LABKIT_MODEL={spec!r} needs the {package} package, which is not "
                          f"installed: run `make setup` (it installs the providers extra), or `.tools/bin/uv pip install --python .venv {package}`") from e
    if os.environ.get("LABKIT_BASE_URL"):
        kwargs.setdefault("base_url", os.environ["LABKIT_BASE_URL"])
    if key and not os.environ.get(key) and "api_key" not in kwargs:
        raise RuntimeError(f"LABKIT_MODEL={spec!r} needs an API key in the {key} environment "
                           "variable; set it (never in a notebook cell) and restart the kernel")
    from langchain.chat_models import init_chat_model

    return init_chat_model(f"{provider}:{name}", **kwargs)
