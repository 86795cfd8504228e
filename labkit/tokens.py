"""Token counting for the lab: real BPE, offline, and the chars/4 guess deepagents uses.

Notebook 02 introduces it. Two rulers: :func:`count_tokens` — tiktoken's byte-pair encoding
(``o200k_base``; ``cl100k_base`` on request), its tables shipped by a package, never downloaded;
and :func:`approx_tokens` — langchain's characters / 4, which deepagents uses for its triggers:
close for English, far off for Chinese or digits. A :class:`TokenCounter` counts each message
once, so re-counting a history that only grew costs only the new messages.

What it leaves out: exact provider accounting (Anthropic's and Gemini's tokenizers differ from
OpenAI's; providers add hidden per-request tokens). The lab treats o200k_base as *the* ruler;
a real provider's ``usage_metadata`` is the number to trust. Speed tricks that never change a
count: ``labkit._token_cache``, ``labkit._encode_thread``; offline tables: ``labkit._tiktoken_offline``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import tiktoken
from langchain_core.messages import BaseMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.utils.function_calling import convert_to_openai_tool

from labkit import _encode_thread
from labkit._tiktoken_offline import TIKTOKEN_FILES, seed
from labkit._token_cache import SameObjects, TextTokens, ToolTokens, openai_schema, tool_calls_of

__all__ = [
    "DEFAULT_ENCODING",
    "PRICES",
    "TOKENS_PER_MESSAGE",
    "TokenCounter",
    "approx_tokens",
    "cost",
    "count_tokens",
    "encoding",
    "message_text",
    "tool_schema_tokens",
]

DEFAULT_ENCODING = "o200k_base"

# Per-message framing, as OpenAI documents for chat models: each message costs a few tokens of
# role and separators on top of its content.
TOKENS_PER_MESSAGE = 3

# Illustrative prices in US dollars per million tokens (input, output). They are examples for
# the cost lesson, not quotes: check your provider's page before budgeting anything.
PRICES: dict[str, tuple[float, float]] = {
    "lab-model": (1.00, 4.00),
    "small": (0.15, 0.60),
    "medium": (1.00, 4.00),
    "large": (3.00, 15.00),
}

_encodings: dict[str, Any] = {}  # each table is loaded once per process
_TOOL_TOKENS = ToolTokens()  # shared by every counter: see labkit._token_cache
_TEXT_TOKENS = TextTokens()  # one encode per text, whichever counter asks
_SAME_OBJECTS: dict[str, SameObjects] = {}  # per encoding: each message object's key and count


def encoding(name: str = DEFAULT_ENCODING):
    """tiktoken's ``Encoding`` for ``name``, loaded without touching the network. Notebook 02."""
    if name not in TIKTOKEN_FILES:
        raise ValueError(
            f"unknown encoding {name!r}: labkit ships {sorted(TIKTOKEN_FILES)} offline"
        )
    if name not in _encodings:
        seed(name)  # copy the shipped table where tiktoken looks before it would download
        fresh = name not in getattr(getattr(tiktoken, "registry", None), "ENCODINGS", {name: None})
        enc = tiktoken.get_encoding(name)
        if fresh:  # nobody has encoded with it yet: labkit's counting thread is its first user
            _encode_thread.claim(enc)
        _encodings[name] = enc
    return _encodings[name]


_MEDIA = frozenset({"image", "image_url", "input_image", "audio", "input_audio", "video", "file"})
_IN_TOOL_CALLS = frozenset({"tool_use", "tool_call", "tool_call_chunk", "invalid_tool_call", "function_call"})


def message_text(message: BaseMessage, *, text_only: bool = False) -> str:
    """The text a message puts in the context: its text and reasoning blocks, joined by newlines,
    plus the name and JSON arguments of each tool call (an invalid call's raw arguments too).
    Notebook 06 (every count of notebook 02 goes through it).

    A provider's own blocks — OpenAI's Responses API ``reasoning`` summaries and ``function_call``
    items (``create_deep_agent`` uses that API for ``openai:`` models), Anthropic's server tools —
    are read through langchain's translation to its standard blocks (``message.content_blocks``):
    a server tool's call and result count as their JSON, a block langchain keeps as
    ``non_standard`` as the JSON of its value. A block the lab cannot count honestly (an image,
    audio, a file) raises ``ValueError`` naming its type. ``text_only=True`` gives what the message
    *says* instead: its text blocks alone (no reasoning, no tool-call arguments), any other block
    skipped — what offloading stores, what a score reads.
    """
    content = message.content
    if isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):
        parts = _block_texts(message, content, text_only)
    else:
        raise ValueError(f"{message.type} message content must be str or list, not {type(content).__name__}")
    calls = [] if text_only else tool_calls_of(message) or []
    for call in calls:
        parts.append(call["name"] + json.dumps(call.get("args", {}), ensure_ascii=False, sort_keys=True))
    if not text_only:  # sent too: a call whose arguments were not JSON, a legacy function call
        invalid = getattr(message, "invalid_tool_calls", None) or []
        legacy = None if calls or invalid else message.additional_kwargs.get("function_call")  # Gemini copies
        for bad in [*invalid, *([legacy] if legacy else [])]:
            if isinstance(bad, dict):
                parts.append(str(bad.get("name") or "") + str(bad.get("args") or bad.get("arguments") or ""))
    return "\n".join(p for p in parts if p)


def _media_error(message: BaseMessage, kind: str, where: str) -> ValueError:
    return ValueError(f"{message.type} message has a content block of type {kind!r} at {where}; "
                      "labkit counts text only (convert images and files to text or a file path)")


def _block_texts(message: BaseMessage, content: list, text_only: bool) -> list[str]:
    """The texts of a list of content blocks (see :func:`message_text`)."""
    parts: list[str] = []
    for i, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if isinstance(block, str):
            parts.append(block)
        elif kind in ("text", "text-plain"):
            parts.append(str(block.get("text", "")))
        elif text_only or kind in _IN_TOOL_CALLS:
            continue  # a tool call is also in message.tool_calls, counted there
        elif kind in ("reasoning", "thinking") and ("reasoning" in block or "thinking" in block):
            parts.append(str(block.get("reasoning") or block.get("thinking") or ""))
        elif not isinstance(block, dict):
            raise _media_error(message, type(block).__name__, f"index {i}")
        elif kind in _MEDIA:
            raise _media_error(message, kind, f"index {i}")
        else:  # a provider's own block: langchain's translation says what it is
            return _standard_texts(message, kind, i)
    return parts


def _standard_texts(message: BaseMessage, kind: Any, i: int) -> list[str]:
    """The texts of ``message.content_blocks``, langchain's standard blocks."""
    try:
        blocks = message.content_blocks
    except Exception as exc:  # noqa: BLE001 - a translator may refuse a block it does not know
        raise _media_error(message, kind, f"index {i}") from exc
    parts: list[str] = []
    dumps = functools.partial(json.dumps, ensure_ascii=False, sort_keys=True, default=str)
    for j, block in enumerate(blocks):
        kind = block.get("type")
        if kind in ("text", "text-plain"):
            parts.append(str(block.get("text", "")))
        elif kind == "reasoning":
            parts.append(str(block.get("reasoning") or ""))
        elif kind in _IN_TOOL_CALLS:
            continue
        elif kind == "server_tool_call":
            parts.append(str(block.get("name", "")) + dumps(block.get("args", {})))
        elif kind == "server_tool_result":
            parts.append(dumps(block["output"]) if "output" in block else "")
        elif kind == "non_standard":
            parts.append(dumps(block.get("value")))
        else:
            raise _media_error(message, kind, f"content_blocks index {j}")
    return parts


def _schema_json(tool: Any) -> str:
    """A tool's schema as providers send it: the JSON of its name, description and parameters."""
    if isinstance(tool, dict) and "function" in tool:
        return json.dumps(tool["function"], ensure_ascii=False)
    if isinstance(tool, dict) and tool.get("type") == "function" and "name" in tool:  # Responses API
        return json.dumps({k: v for k, v in tool.items() if k != "type"}, ensure_ascii=False)
    # the conversion LabModel.bind_tools made of this tool, if it made one (labkit._token_cache)
    return json.dumps(openai_schema(tool, convert_to_openai_tool)["function"], ensure_ascii=False)


class TokenCounter:
    """BPE counter that counts each message once. Notebook 02.

    The cache key is the message's role and text, so an unchanged message is counted once however
    often the history is re-sent, and an edited message (a truncated argument, an evicted result)
    is counted afresh. ``misses`` counts the messages this counter had not counted before (their
    text is encoded once per process, whichever counter asks first: ``labkit._token_cache``).

    ``non_text="count"`` counts a message :func:`message_text` refuses (an image, a file) as the
    BPE of its whole content, data included — more than a provider bills, never less — where the
    default raises: the instruments (``Recorder``, ``Meter``) and the middleware use it, so an
    agent that sends an image still runs and its caps still hold; the lab model's own count raises.
    ``by_object=False`` reads every message's text again rather than trusting an object counted
    before: the Meter's cap, which a key set inside a message's content must not slip past.

    Example:
        >>> counter = TokenCounter()
        >>> counter.text("hello world")
        2
    """

    def __init__(self, encoding_name: str = DEFAULT_ENCODING, non_text: str = "raise", *,
                 by_object: bool = True) -> None:
        if non_text not in ("raise", "count"):
            raise ValueError(f"TokenCounter: non_text must be 'raise' or 'count', not {non_text!r}")
        self.encoding_name = encoding_name
        self.non_text, self.by_object = non_text, by_object
        self._cache: dict[tuple[str, str], int] = {}  # (role, text) -> tokens
        self._same = _SAME_OBJECTS.setdefault(encoding_name, SameObjects())  # speed only, shared
        self.misses = 0

    def text(self, text: str) -> int:
        """BPE tokens of a string (special-token text such as ``<|endoftext|>`` counts as text)."""
        return _TEXT_TOKENS.get(self.encoding_name, text,
                                lambda: _encode_thread.count(encoding(self.encoding_name), text))

    def texts(self, texts: Sequence[str]) -> list[int]:
        """BPE tokens of each string; those not counted before are encoded together."""
        enc = encoding(self.encoding_name)
        return _TEXT_TOKENS.get_many(self.encoding_name, list(texts),
                                     lambda missing: _encode_thread.count_many(enc, missing))

    def message(self, message: BaseMessage) -> int:
        """Tokens of one message: its text plus ``TOKENS_PER_MESSAGE`` of framing."""
        hit = self._same.get(message) if self.by_object else None
        if hit is not None:  # this very object, counted by some counter of this encoding
            key, n = hit
            if key not in self._cache:
                self.misses += 1
                self._cache[key] = n
            return n
        try:
            key = (message.type, message_text(message))
        except ValueError:
            if self.non_text == "raise" or not isinstance(message.content, list):
                raise
            key = (message.type, "\0" + str(message.content))  # not remembered by object: a
            n = self._cache.get(key)  # counter that raises must still see it
            if n is None:
                self.misses += 1
                n = self._cache[key] = self.text(key[1][1:]) + TOKENS_PER_MESSAGE
            return n
        n = self._cache.get(key)
        if n is None:
            self.misses += 1
            n = self._cache[key] = self.text(key[1]) + TOKENS_PER_MESSAGE
        self._same.put(message, key, n)
        return n

    def messages(self, messages: Iterable[BaseMessage]) -> int:
        """Tokens of a list of messages."""
        return sum(self.message(m) for m in messages)

    def tool(self, tool: Any) -> int:
        """Tokens of one tool's schema — its name, description and parameters as JSON, as
        providers send them (a LangChain tool, or a schema dict with a ``function`` part)."""
        return _TOOL_TOKENS.get(tool, self.encoding_name, lambda: self.text(_schema_json(tool)))

    def __call__(self, text_or_messages: str | BaseMessage | Sequence[BaseMessage]) -> int:
        if isinstance(text_or_messages, str):
            return self.text(text_or_messages)
        if isinstance(text_or_messages, BaseMessage):
            return self.message(text_or_messages)
        if isinstance(text_or_messages, Sequence):
            for i, m in enumerate(text_or_messages):
                if not isinstance(m, BaseMessage):
                    raise TypeError(
                        f"item {i} is a {type(m).__name__}, not a message: pass a str or a list "
                        "of langchain messages"
                    )
            return self.messages(text_or_messages)
        raise TypeError(
            "count_tokens takes a str, a message or a list of messages, not "
            f"{type(text_or_messages).__name__}"
        )


@functools.cache
def _shared(encoding_name: str) -> TokenCounter:
    """One counter per encoding behind :func:`count_tokens`, so counting again hits its cache."""
    encoding(encoding_name)  # validates the name (an error is not cached)
    return TokenCounter(encoding_name)


def count_tokens(
    text_or_messages: str | BaseMessage | Sequence[BaseMessage],
    encoding_name: str = DEFAULT_ENCODING,
) -> int:
    """Count BPE tokens of a string, one message, or a list of messages. Notebook 02.

    Messages cost their text plus ``TOKENS_PER_MESSAGE`` each; results are cached per message.

    Example:
        >>> count_tokens("hello world")
        2
    """
    return _shared(encoding_name)(text_or_messages)


def tool_schema_tokens(tools: Sequence[Any], encoding_name: str = DEFAULT_ENCODING) -> int:
    """Tokens the tool schemas add to every call: the JSON of each tool's name, description and
    parameters, as providers send them. Notebook 06."""
    return sum(_shared(encoding_name).tool(t) for t in tools)


def _remember(text: str, count: Callable[[], int], encoding_name: str = DEFAULT_ENCODING) -> None:
    """The count of ``text`` from ``count()`` — a caller that counts it exactly in pieces no
    pre-token spans (``labkit._offload_runs``) — unless known: the next count of it is a look-up."""
    _TEXT_TOKENS.get(encoding_name, text, count)


def approx_tokens(text_or_messages: str | BaseMessage | Sequence[BaseMessage]) -> int:
    """langchain's ``count_tokens_approximately`` — chars/4 plus 3 per message — which deepagents
    uses for its summarization trigger. A plain string counts as ``ceil(len / 4)``. Notebook 02."""
    if isinstance(text_or_messages, str):
        return -(-len(text_or_messages) // 4)
    if isinstance(text_or_messages, BaseMessage):
        text_or_messages = [text_or_messages]
    return count_tokens_approximately(list(text_or_messages))


def cost(input_tokens: int, output_tokens: int = 0, price: str | tuple[float, float] = "lab-model") -> float:
    """Dollars for one call at an illustrative price (see ``PRICES``, notebook 01). Notebook 06."""
    if isinstance(price, str):
        if price not in PRICES:
            raise ValueError(f"unknown price {price!r}: choose one of {sorted(PRICES)} or pass (in, out)")
        price = PRICES[price]
    per_in, per_out = price
    return (input_tokens * per_in + output_tokens * per_out) / 1_000_000
