"""LabModel, the chat-model side of the lab model: what LangChain and deepagents see of it.

A real ``BaseChatModel`` (notebook 01): ``bind_tools`` with ``tool_choice``, streaming,
``usage_metadata``, a ``profile``, every call logged in ``model.calls``, a context window whose
overflow raises ``ContextOverflowError``, tool-call ids that never repeat in a context.

What it leaves out: deciding what to say — that is ``labkit.model.behaviour.act``; refusing a bad
history is ``labkit.model.history``; choosing between it and a real model is ``get_model``.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.chat_models import LangSmithParams
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr, SecretStr, field_validator

from labkit._token_cache import openai_schema
from labkit.model._context import is_summary_prompt, plain, read_view
from labkit.model._grader import grader_reply, is_grader_prompt
from labkit.model.behaviour import act, summary_reply
from labkit.model.history import check_history
from labkit.tokens import DEFAULT_ENCODING, TOKENS_PER_MESSAGE, TokenCounter

__all__ = ["MODEL_NAME", "PROVIDER", "Call", "LabModel"]

PROVIDER = "labkit"
MODEL_NAME = "lab-model"


@dataclass
class Call:
    """One call to the lab model: exactly what it received and what it answered. Notebook 01.

    The lab model's own log (``LabModel.calls``); the Recorder (``labkit.trace``) logs the same
    for any model.
    """

    messages: list[BaseMessage]
    tools: list[str]
    input_tokens: int
    kind: str  # "agent", "summary" or "grader" (RubricMiddleware's grader, notebook 14)
    response: AIMessage | None = None
    error: str | None = None
    tool_choice: Any = None


class LabModel(BaseChatModel):
    """The course's offline chat model: a short script, not a language model. Notebook 01.

    It looks only at the messages it is sent, so every context decision has a visible
    consequence; what it does with them is :func:`labkit.model.behaviour.act` (as a summarizer,
    :func:`~labkit.model.behaviour.summary_reply`). Around that script it is a real chat model:

    * **Overflow is real.** Input above ``window`` tokens (BPE, tool schemas included) raises
      ``langchain_core.exceptions.ContextOverflowError``; a history no provider would accept
      raises :class:`~labkit.model.history.InvalidHistoryError`.
    * **Every call is logged** in ``model.calls`` (a :class:`Call` each): what it was sent and
      what it answered — the lab model's own record of "what the model saw".
    * **Tool-call ids read** ``call_<tag>_<n>``: ``tag`` is 4 hex digits of the sha256 of the
      text of the first human message it was sent (a middleware's summary aside; a child's is its
      task), ``n`` counts that context's tool calls — so children with their own models, given
      different tasks, do not share ids. (Two contexts with the same first message, or none left
      in view after a compaction, share a tag; ``labkit.isolate`` reports the file conflict that
      could follow.)

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
    when_lost: Literal["ask", "finish"] = Field(
        default="ask",
        description="What it says when it can no longer see its goal: ask the user what to do "
                    "(prompts.GOAL_LOST), or declare the work it can see finished "
                    "(prompts.CLAIMED_DONE) — goal drift that no question gives away (notebook 14).")
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
                "keep_figures": self.keep_figures, "compact_when": self.compact_when,
                "when_lost": self.when_lost}

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
        """The BPE counter it measures its input with (``encoding_name``), built on first use."""
        if self._counter is None:
            self._counter = TokenCounter(self.encoding_name)
        return self._counter

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: str | dict | bool | None = None,
                   **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools as OpenAI-style schemas. ``tool_choice`` may be ``"auto"``, ``"none"``,
        ``"any"``/``"required"``/``True`` (some tool must be called) or a tool's name."""
        schemas = [openai_schema(t, convert_to_openai_tool) for t in tools]
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
        check_history(messages)
        names = [t["function"]["name"] for t in tools]
        counter = self.counter  # a private attribute: pydantic's slow lookup, once per call
        n_in = counter.messages(messages) + sum(map(counter.tool, tools))
        last = plain(messages[-1])
        kind = "summary" if is_summary_prompt(last) else "grader" if is_grader_prompt(last) else "agent"
        call = Call(list(messages), names, n_in, kind, tool_choice=tool_choice)
        self._calls.append(call)
        if n_in > self.window:
            call.error = (f"prompt is too long: {n_in} tokens exceed the lab model's context window "
                          f"of {self.window} tokens (maximum context length exceeded)")
            raise ContextOverflowError(call.error)
        if call.kind == "summary":
            message = AIMessage(summary_reply(last, self.keep_figures))
        elif call.kind == "grader":  # deepagents' RubricMiddleware (notebook 14)
            message = grader_reply(last, names)
            self._number(message, messages)
        else:
            message = act(read_view(messages), tools, tool_choice, compact_when=self.compact_when,
                          delegate_research=self.delegate_research,
                          raw_subagent_output=self.raw_subagent_output, when_lost=self.when_lost)
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
