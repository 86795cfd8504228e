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
  (``scenario.NOTES_INSTRUCTION``) and it has ``write_file``, it saves the dump to
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

What it leaves out: any language understanding. Outside the scenario it says what it is and how
to switch to a real model (``LABKIT_MODEL``); when a tool is forced or written out literally as
``name(args)``, it calls it with those literal arguments or schema placeholders — never a guess.
"""

from __future__ import annotations

import ast
import html
import itertools
import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
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
from labkit.tokens import DEFAULT_ENCODING, TOKENS_PER_MESSAGE, TokenCounter, message_text

__all__ = ["Call", "InvalidHistoryError", "LabModel", "get_model", "prompt_sections"]

PROVIDER = "labkit"
MODEL_NAME = "lab-model"
_PATHS = re.compile(r"(/(?:large_tool_results|conversation_history|reports|research)/[^\s'\"<>`),;]+)")
_KPI = re.compile(r"kpi,([A-Z]{4}),(\w+),([\d.]+%?)")
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


@dataclass
class _View:
    """The model's context, pre-read: all text, and the answered tool calls."""

    messages: list[BaseMessage]
    text: str
    answered: dict[str, tuple[dict, str]] = field(default_factory=dict)  # id -> (call, result)


def _plain(message: BaseMessage) -> str:
    return html.unescape(message_text(message))


def _read(messages: list[BaseMessage]) -> _View:
    calls = {tc["id"]: tc for m in messages if isinstance(m, AIMessage) for tc in m.tool_calls}
    answered = {
        m.tool_call_id: (calls[m.tool_call_id], _plain(m))
        for m in messages
        if isinstance(m, ToolMessage) and m.tool_call_id in calls
    }
    return _View(messages, "\n".join(_plain(m) for m in messages), answered)


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


def _section(text: str, name: str) -> str:
    m = re.search(rf"##\s*{name}\s*\n(.*?)(?=\n##\s*[A-Z][A-Z ]+\n|</summary>|\Z)", text, re.S)
    return m.group(1).strip() if m else ""


def _is_summary_prompt(text: str) -> bool:
    return all(s in text for s in prompts.SUMMARY_SECTIONS) and (
        "<messages>" in text or "Context Extraction Assistant" in text
    )


def _active_task(view: _View) -> sc.Task | None:
    """The latest thing the user asked for that is still visible: a human message naming a task,
    or the last task in a summary's SESSION INTENT."""
    for m in reversed(view.messages):
        if m.type not in ("human", "system"):
            continue
        text = _plain(m)
        intent = _section(text, "SESSION INTENT")
        if intent:
            found = [(intent.rfind(t.marker), t) for t in sc.tasks() if t.marker in intent]
            if found:
                return max(found, key=lambda p: p[0])[1]
        for task in sc.tasks():
            if task.marker in text and not intent:
                return task
    return None


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
    _ids: Any = PrivateAttr(default_factory=lambda: itertools.count(1))
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
            self.counter.text(json.dumps(t["function"], ensure_ascii=False)) for t in tools)
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
        return {"name": name, "args": args, "id": f"call_{next(self._ids):03d}", "type": "tool_call"}

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
                return AIMessage(_MEMORY_SAVED.format(rule=rule, path=path, result=edits[-1]))
            if rule in content:
                return AIMessage(_MEMORY_HAD.format(rule=rule, path=path))
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


# -- pure helpers: the summary and the drafts ---------------------------------------------------


def summarize(text: str, keep_figures: bool = False) -> str:
    """The lab model's extractive four-section summary of a rendered history.

    It quotes the evidence of every step it finds (so the work is not redone), lists file paths,
    and keeps each KPI's name — but drops its value unless ``keep_figures``.
    """
    found = sorted((text.find(t.marker), t) for t in sc.tasks() if t.marker in text)
    intent = "\n".join(f"- {t.request}" for _, t in found) or "None"
    steps = {s.key: s for t in sc.tasks() for s in t.steps}
    done = [s for s in steps.values() if s.evidence in text]
    lines = [f"- {s.evidence}: done ({s.tool})." for s in done]
    for ticker, kpi, value in dict.fromkeys(_KPI.findall(text)):
        lines.append(f"- kpi,{ticker},{kpi},{value}" if keep_figures
                     else f"- {ticker} {kpi}: reported (exact figure not kept)")
    paths = list(dict.fromkeys(p.rstrip(".:") for p in _PATHS.findall(text)))
    last = found[-1][1] if found else None
    todo = [s for s in (last.steps if last else ()) if s.evidence not in text]
    next_steps = "\n".join(f"- {s.tool}({json.dumps(s.args)})" for s in todo) or "None"
    return (
        f"## SESSION INTENT\n{intent}\n\n## SUMMARY\n{chr(10).join(lines) or 'None'}\n\n"
        f"## ARTIFACTS\n{chr(10).join(f'- {p}' for p in paths) or 'None'}\n\n"
        f"## NEXT STEPS\n{next_steps}"
    )


def _draft(task: sc.Task, step: sc.Step, view: _View) -> str:
    """The file a write step produces, built from what is visible."""
    if task.key == "report":
        return _with_preferences(_skill_report(view) or _draft_report(view.text), view)
    if task.key == "risks":
        return _draft_risks(view.text)
    ticker = step.args["file_path"].rsplit("/", 1)[-1].removesuffix(".md")
    c = next(c for c in sc.companies() if c["ticker"] == ticker)
    digest = next((r for call, r in view.answered.values() if call["name"] == "search_news"
                   and f"News digest — {c['name']} ({ticker})" in r), None)
    quoted = digest if digest else "(the news digest is no longer in my context)"
    return f"# Briefing — {c['name']} ({ticker})\n\n## This week's news, in full\n\n{quoted}\n"


def _headline(name: str, text: str) -> str | None:
    m = re.search(rf"## (\d{{4}}-\d\d-\d\d): {re.escape(name)} ([^\n]+)", text)
    if m:
        return f"{m.group(2)} ({m.group(1)})"
    noted = re.search(rf"News digest — {re.escape(name)} \([A-Z]+\): (.+ \(\d{{4}}-\d\d-\d\d\))$",
                      text, re.M)  # a subagent's research notes
    return noted.group(1) if noted else None


def _draft_report(text: str) -> str:
    out = [f"# Weekly competitor report — {sc._meta()['week']}",
           "_Built from the fictional labkit data set._", ""]
    for c in sc.companies():
        out.append(f"## {c['name']} ({c['ticker']})")
        exported = f"Market data export — {c['name']} ({c['ticker']})" in text
        out.append("- Market data: export reviewed." if exported else "- Market data: not reviewed.")
        news = _headline(c["name"], text)
        out.append(f"- News: {news}" if news else "- News: see the research notes.")
        out.append("")
    return "\n".join(out)


def _draft_risks(text: str) -> str:
    out = ["# Risks", ""]
    for c in sc.companies():
        news = _headline(c["name"], text)
        out.append(f"- {c['name']}: watch how '{news}' plays out." if news
                   else f"- {c['name']}: pricing pressure in {c['sector']}.")
    return "\n".join(out) + "\n"


def _research_report(ticker: str, text: str) -> str:
    c = next(c for c in sc.companies() if c["ticker"] == ticker)
    kpis = [f"{k}={v}" for t, k, v in dict.fromkeys(_KPI.findall(text)) if t == ticker]
    news = _headline(c["name"], text)
    return (f"{c['name']} ({ticker}) — research notes\n"
            f"- Market data export — {c['name']} ({ticker}): KPIs {', '.join(kpis) or 'not found'}\n"
            f"- News digest — {c['name']} ({ticker}): {news or 'no headline found'}")


def _raw_results(view: _View) -> str:
    return "\n\n".join(r for c, r in view.answered.values()
                       if c["name"] in ("fetch_market_data", "search_news"))


def _notes_to_write(task: sc.Task, view: _View, names: list[str]) -> dict | None:
    """A researcher asked for raw notes in a file writes them once, after its research steps."""
    if not task.key.startswith("research:") or sc.NOTES_INSTRUCTION not in view.text \
            or "write_file" not in names:
        return None
    path = sc.notes_path(task.key.split(":")[1])
    if f"Updated file {path}" in view.text:
        return None
    return {"file_path": path, "content": _raw_results(view)}


def _research_reply(ticker: str, view: _View, raw: bool) -> str:
    """What a researcher returns: the short report, or the raw dump; with notes saved, the path."""
    path = sc.notes_path(ticker)
    saved = f"Updated file {path}" in view.text
    if saved and raw:
        c = next(c for c in sc.companies() if c["ticker"] == ticker)
        return (f"{c['name']} ({ticker}) — raw notes saved to {path}\n"
                f"- Market data export — {c['name']} ({ticker}): in full in {path}\n"
                f"- News digest — {c['name']} ({ticker}): in full in {path}")
    if raw:
        return _raw_results(view)
    report = _research_report(ticker, view.text)
    return f"{report}\n- Raw notes: {path}" if saved else report


def _noted_figure(n: sc.Needle, text: str) -> str | None:
    """The needle's value as a subagent's research notes quote it (``kpi=value``)."""
    m = re.search(rf"\({n.ticker}\): KPIs [^\n]*\b{n.kpi}=(\d+(?:\.\d+)?%)", text)
    return m.group(1) if m else None


def _literal_args(schema: dict, view: _View) -> dict:
    """Arguments for a forced or literal call: those written as ``name(...)`` in the last human
    message, else the schema's defaults or visible placeholders."""
    fn = schema["function"]
    props = fn.get("parameters", {}).get("properties", {})
    order = list(props)
    humans = [_plain(m) for m in view.messages if m.type == "human"]
    args: dict[str, Any] = {}
    m = re.search(rf"\b{re.escape(fn['name'])}\s*\(([^()]*)\)", humans[-1] if humans else "")
    if m:
        try:
            call = ast.parse(f"f({m.group(1)})", mode="eval").body
            args = {order[i]: ast.literal_eval(a) for i, a in enumerate(call.args) if i < len(order)}
            args.update({k.arg: ast.literal_eval(k.value) for k in call.keywords})
        except (SyntaxError, ValueError):
            args = {}
    for name in fn.get("parameters", {}).get("required", []):
        if name not in args:
            args[name] = _placeholder(name, props.get(name, {}))
    return args


def _placeholder(name: str, prop: dict) -> Any:
    """A value that fits the schema and shows it was not understood: ``"<name>"`` for text."""
    if "default" in prop:
        return prop["default"]
    if prop.get("enum"):
        return prop["enum"][0]
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    return {"integer": 0, "number": 0.0, "boolean": False, "array": [], "object": {}}.get(
        kind, f"<{name}>")


# -- goal anchors: a todo list and a progress file (notebook 14) --------------------------------

TODO_TOOL = "write_todos"  # langchain's TodoListMiddleware adds it; deepagents does not by default
PROGRESS_PATH = "/progress.md"
PROGRESS_PROMPT = (
    f"Keep a progress file at {PROGRESS_PATH}. When you start a task of several steps, write the "
    "user's request in it as the goal; after each step, rewrite it with the steps done so far. "
    f"If you can no longer see what you were asked to do, read {PROGRESS_PATH} before asking."
)
# write_todos' own description: "If the user's request is trivial and takes less than 3 steps,
# it is better to NOT use this tool". The lab model follows it, for both anchors.
ANCHOR_MIN_STEPS = 3


def _progress_on(view: _View) -> bool:
    """The progress-file anchor is on when a system message names the file."""
    return any(m.type == "system" and PROGRESS_PATH in _plain(m) for m in view.messages)


def _todo_item(step: sc.Step) -> str:
    """A step as a todo item: its tool and argument — not its evidence, which only a result shows."""
    return f"{step.tool} {next(iter(step.args.values()))}"


def _todo_list(task: sc.Task, done: set[str]) -> list[dict]:
    """The user's request first (so the goal travels with the list), then one item per step."""
    todo = [s for s in task.steps if s.key not in done]
    items = [{"content": task.request, "status": "in_progress" if todo else "completed"}]
    for s in task.steps:
        status = "completed" if s.key in done else "in_progress" if s is todo[0] else "pending"
        items.append({"content": _todo_item(s), "status": status})
    return items


def _progress_text(task: sc.Task, done: set[str]) -> str:
    """The progress file: the goal, then the evidence of each step done (quoted, so it counts)."""
    lines = [f"- {s.evidence}" for s in task.steps if s.key in done] or ["- nothing yet"]
    return f"# Progress\n\nGoal: {task.request}\n\nDone:\n" + "\n".join(lines) + "\n"


def _latest_todos(view: _View) -> list[dict] | None:
    """The todo list of the latest write_todos call the tool accepted, if it is still visible.
    (TodoListMiddleware keeps the list in state but never shows it to the model: the model sees
    only its own call and the tool's answer.)"""
    for call, result in reversed(view.answered.values()):
        if call["name"] == TODO_TOOL and result.startswith("Updated todo list"):
            todos = call["args"].get("todos")
            if not isinstance(todos, list):  # the call's arguments were cleared: read the answer
                try:
                    todos = ast.literal_eval(result.removeprefix("Updated todo list to "))
                except (SyntaxError, ValueError):
                    return None
            return [dict(t) for t in todos if isinstance(t, dict)]
    return None


def _latest_progress(view: _View) -> str | None:
    """The progress file as last seen: the latest write_file to it, or read_file of it."""
    for call, result in reversed(view.answered.values()):
        path = call["args"].get("file_path")
        if path != PROGRESS_PATH:
            continue
        if call["name"] == "write_file" and result.startswith("Updated file"):
            return str(call["args"].get("content", ""))
        if call["name"] == "read_file":
            return None if result.startswith("Error") else result
    return None


def _read_progress(view: _View) -> bool:
    """Is a read of the progress file still in view? (Then it is not read again.)"""
    return any(c["name"] == "read_file" and c["args"].get("file_path") == PROGRESS_PATH
               for c, _ in view.answered.values())


def _task_named(text: str) -> sc.Task | None:
    return next((t for t in sc.tasks() if t.marker in text), None)


def _progress_task(text: str) -> sc.Task | None:
    """The task named on a progress file's Goal line."""
    m = re.search(r"Goal: (.+)", text)
    return _task_named(m.group(1)) if m else None


def _anchored_task(view: _View) -> sc.Task | None:
    """The goal an anchor carries, for when no request or summary intent is visible: the first
    item of the latest todo list, or the Goal line of the progress file."""
    todos = _latest_todos(view)
    if todos:
        task = _task_named(str(todos[0].get("content", "")))
        if task:
            return task
    return _progress_task(_latest_progress(view) or "")


def _done_steps(task: sc.Task, view: _View) -> set[str]:
    """Steps whose evidence is visible (a result, a summary line, a progress-file line), or that
    the latest todo list marks completed."""
    done = {s.key for s in task.steps if s.evidence in view.text}
    completed = {str(t.get("content")) for t in _latest_todos(view) or () if t.get("status") == "completed"}
    return done | {s.key for s in task.steps if _todo_item(s) in completed}


def _anchor_call(task: sc.Task, view: _View, names: list[str], done: set[str]) -> tuple | None:
    """The anchor update due before the next step, as (tool, args): write the todo list if it is
    not the one visible; with the progress file on, read it first if it is not in view, then
    rewrite it if it is out of date."""
    if len(task.steps) < ANCHOR_MIN_STEPS:
        return None
    if TODO_TOOL in names and _latest_todos(view) != _todo_list(task, done):
        return TODO_TOOL, {"todos": _todo_list(task, done)}
    if not (_progress_on(view) and "write_file" in names):
        return None
    seen = _latest_progress(view)
    if seen is None and "read_file" in names and not _read_progress(view):
        return "read_file", {"file_path": PROGRESS_PATH}
    if seen is None or _progress_task(seen) is not task or not all(
            s.evidence in seen for s in task.steps if s.key in done):
        return "write_file", {"file_path": PROGRESS_PATH, "content": _progress_text(task, done)}
    return None


def _recall_call(view: _View, names: list[str]) -> tuple | None:
    """Lost the goal, with the progress file on: read it once before giving up."""
    if _progress_on(view) and "read_file" in names and not _read_progress(view):
        return "read_file", {"file_path": PROGRESS_PATH}
    return None


# -- skills and memory: what deepagents adds to the system prompt (notebook 13) ----------------

_SECTIONS = {"skills": "## Skills System", "memory": "<agent_memory>",
             "memory guidelines": "<memory_guidelines>"}
_SKILL_LISTED = re.compile(r"^- \*\*(?P<name>[a-z0-9-]+)\*\*: (?P<description>[^\n]*)\n"
                           r"(?:  -> Allowed tools: [^\n]*\n)?  -> Read `(?P<path>[^`]+)`", re.M)
_ACRONYM = re.compile(r"\b[A-Z]{2,}\b")
_PREFERENCES = {"tldr": re.compile(r"start every report with a one-line TL;DR", re.I),
                "sources": re.compile(r"end reports with a 'Sources' line", re.I)}
_MEMORY_SAVED = ("Noted. I added \"- {rule}\" to my memory file {path} (edit_file answered: "
                 "{result})")
_MEMORY_HAD = "That preference is already in my memory file {path}: \"- {rule}\""


def prompt_sections(messages: Sequence[BaseMessage]) -> dict[str, str]:
    """The system prompt of a request, split where deepagents' middleware appended to it:
    ``prompt`` (the authored part), ``skills`` (SkillsMiddleware's section), ``memory``
    (MemoryMiddleware's ``<agent_memory>`` block) and ``memory guidelines``. Missing parts are
    empty strings; no system message gives all empty."""
    system = next((m for m in messages if m.type == "system"), None)
    text = _plain(system) if system is not None else ""
    starts = sorted((text.find(marker), name) for name, marker in _SECTIONS.items()
                    if marker in text)
    out = dict.fromkeys(["prompt", *_SECTIONS], "")
    out["prompt"] = text[: starts[0][0]].strip() if starts else text.strip()
    for (start, name), (end, _) in zip(starts, [*starts[1:], (len(text), "")]):
        out[name] = text[start:end].strip()
    return out


def _memory_sources(view: _View) -> dict[str, str]:
    """``path -> content`` of each memory file inside ``<agent_memory>`` (none if not loaded)."""
    block = prompt_sections(view.messages)["memory"]
    body = block.removeprefix("<agent_memory>").split("</agent_memory>")[0].strip()
    parts = re.split(r"(?m)^(/\S+)\n\n", body)
    return {path: content.strip() for path, content in zip(parts[1::2], parts[2::2])}


def _stated_preference(view: _View) -> tuple[int, str] | None:
    """(position, rule) if the latest user message states a lasting preference."""
    for i in range(len(view.messages) - 1, -1, -1):
        m = view.messages[i]
        if isinstance(m, HumanMessage) and not m.additional_kwargs.get("lc_source"):
            said = re.match(r"\s*from now on,\s*(.+?)\s*$", _plain(m), re.I | re.S)
            if not said:
                return None
            rule = said.group(1)
            return i, rule[0].upper() + rule[1:]
    return None


def _skill_to_read(task: sc.Task | None, view: _View, names: list[str]) -> str | None:
    """The SKILL.md to read first: listed in the prompt, sharing an acronym with the request,
    not yet read (its read_file result is not in view), with a step of the task still to do."""
    if task is None or "read_file" not in names:
        return None
    listed = list(_SKILL_LISTED.finditer(prompt_sections(view.messages)["skills"]))
    if not listed or all(s.evidence in view.text for s in task.steps):
        return None
    asked = next((_plain(m) for m in reversed(view.messages)
                  if m.type == "human" and task.marker in _plain(m)), "")
    read = {c["args"].get("file_path") for c, _ in view.answered.values() if c["name"] == "read_file"}
    for skill in listed:
        shared = set(_ACRONYM.findall(skill["description"])) & set(_ACRONYM.findall(asked))
        if shared and skill["path"] not in read:
            return skill["path"]
    return None


def _skill_report(view: _View) -> str | None:
    """The report in the format of a SKILL.md read into context: its title and ``## `` headings."""
    for call, result in view.answered.values():
        path = str(call["args"].get("file_path", ""))
        if call["name"] != "read_file" or not path.endswith("/SKILL.md"):
            continue
        headings = re.findall(r"^\s*(?:\d+\s+)?- `(## [^`]+)`", result, re.M)
        title = re.search(r"`(# [^`]+)`", result)
        if headings:
            return _draft_formatted(view.text, title.group(1) if title else None, headings)
    return None


def _draft_formatted(text: str, title: str | None, headings: list[str]) -> str:
    week = sc._meta()["week"]
    out = [(title or "# Competitor report — <week>").replace("<week>", week),
           "_Built from the fictional labkit data set, in the format its skill asks for._", ""]
    companies = sc.companies()
    for heading in headings:
        out.append(heading)
        h = heading.lower()
        if "summary" in h:
            seen = sum(f"Market data export — {c['name']} ({c['ticker']})" in text for c in companies)
            out.append(f"- {seen} of {len(companies)} competitors' market data reviewed this week.")
        elif "scorecard" in h or "competitor" in h:
            for c in companies:
                seen = f"Market data export — {c['name']} ({c['ticker']})" in text
                out.append(f"- {c['name']} ({c['ticker']}): market data "
                           f"{'reviewed' if seen else 'not reviewed'}; news: "
                           f"{_headline(c['name'], text) or 'see the research notes'}")
        elif "risk" in h:
            out.extend(_draft_risks(text).splitlines()[2:])
        else:
            out.append("- (nothing in my context for this section)")
        out.append("")
    return "\n".join(out)


def _with_preferences(draft: str, view: _View) -> str:
    """The draft with each preference visible in ``<agent_memory>`` applied."""
    memory = "\n".join(_memory_sources(view).values())
    lines = draft.rstrip("\n").split("\n")
    if _PREFERENCES["tldr"].search(memory):
        seen = sum(f"Market data export — {c['name']}" in view.text for c in sc.companies())
        lines.insert(1, f"TL;DR: {seen} of {len(sc.companies())} competitors researched this "
                        "week; the details follow.")
    if _PREFERENCES["sources"].search(memory):
        lines += ["", "Sources: each competitor's market-data export and news digest "
                      "(fictional labkit data)."]
    return "\n".join(lines) + "\n"


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
