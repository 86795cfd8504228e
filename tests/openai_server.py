"""A small OpenAI-compatible chat-completions server for the tests: a real model's wire format and
habits, none of the lab model's script. Bound to 127.0.0.1 on a free port; the standard library
and tiktoken's o200k tables (from labkit's offline copy) only.

It answers ``POST /v1/chat/completions`` (plain JSON, or SSE chunks with ``stream: true``, a usage
chunk when ``stream_options.include_usage``) and ``GET /v1/models``; counts prompt tokens its own
way (:func:`prompt_tokens`: o200k BPE of each message's text and tool calls, 3 tokens of framing
a message, each tool's JSON, 3 to prime the reply — OpenAI's documented recipe, written here
apart from labkit's counter so that the tests can hold one to the other); refuses a request
above its ``window`` with OpenAI's 400 ``context_length_exceeded`` body, and a history whose tool
calls and results do not pair up with OpenAI's 400 for that; and records every request
in ``server.requests`` with the tokens it counted in ``server.received``. It emulates OpenAI's
automatic prompt caching (:func:`cached`) and reports ``prompt_tokens_details.cached_tokens``.

Its policy, deterministic and unlike the lab model's: to a user turn with tools it makes two
*parallel* calls (``fetch_market_data`` and ``search_news`` for the first ticker it finds) — or,
offered a ``task`` tool, delegates the first three companies named to the first subagent listed,
in parallel; after
tool results it fetches the next ticker (unless it sees that call already), then stops early with
a short answer (no report); asked for an exact figure, it invents a percentage instead of
looking. Without tools (a summary request), it answers a one-line summary.

``behaviours`` add what real providers and models do (:data:`BEHAVIOURS`): a model that loops
after compaction, malformed or unknown tool calls, no usage, prose instead of tools, long or slow
answers; ``failures`` answers chosen requests with a 429 (and ``Retry-After``), a 500 or a reset
connection; ``key`` and ``models`` make a wrong key a 401 and an unknown model a 404.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from labkit.tokens import encoding

__all__ = ["BEHAVIOURS", "INVENTED", "OpenAIServer", "cached", "policy", "prompt_ids", "prompt_tokens"]

BEHAVIOURS = {
    "loop": "fetches every named ticker whose export it cannot see, and stops only when it sees all "
            "five: after a compaction hides them it fetches them again, without end",
    "bad_args": "every other reply with tool calls adds one call whose arguments are not JSON",
    "unknown_tool": "every reply with tool calls adds a call to a tool it was not offered",
    "no_usage": "reports no usage, in plain replies and in streams",
    "no_tools": "never calls a tool: answers every turn with prose",
    "long": "answers in long prose (about 1,500 words)",
    "slow": "waits 0.3 s before each answer",
}

NAMES = {"brightloom": "BRLM", "corvid": "CRVD", "driftwood": "DRFT", "emberline": "EMBR",
         "fernhollow": "FERN"}
KNOWN_TOOLS = ("fetch_market_data", "search_news")
INVENTED = "Brightloom's Q3 net revenue retention was 104.2%."  # made up, as a real model may


def _text(content: Any) -> str:
    """The text of a message's content: a string, or OpenAI's list of parts."""
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _tickers(text: str) -> list[str]:
    """The scenario's tickers named in ``text`` (by company or ticker), in order of appearance."""
    found = [(m.start(), NAMES[m.group(0).lower()]) for m in re.finditer("|".join(NAMES), text, re.I)]
    found += [(m.start(), m.group(0)) for m in re.finditer(r"\b[A-Z]{4}\b", text)
              if m.group(0) in NAMES.values()]
    return list(dict.fromkeys(t for _, t in sorted(found)))


def pairing_error(messages: list[dict]) -> str | None:
    """OpenAI's 400 for a history whose tool calls and results do not pair up, or None: every
    ``tool`` message must answer a call of the assistant message before it, and every call must
    be answered before the next non-tool message."""
    open_calls: set[str] = set()
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "tool":
            if m.get("tool_call_id") not in open_calls:
                return ("Invalid parameter: messages with role 'tool' must be a response to a "
                        f"preceeding message with 'tool_calls'. (messages.[{i}])")
            open_calls.discard(m.get("tool_call_id"))
            continue
        if open_calls:
            return ("An assistant message with 'tool_calls' must be followed by tool messages responding "
                    f"to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                    f"{', '.join(sorted(open_calls))}")
        open_calls = {c.get("id") for c in m.get("tool_calls") or []} if role == "assistant" else set()
    return None


CACHE_MINIMUM, CACHE_STEP = 1024, 128  # OpenAI's automatic prompt caching (labkit.caching.RULES)


def prompt_ids(messages: list[dict], tools: list[dict]) -> list[int]:
    """The prompt as a token sequence, in the order :func:`prompt_tokens` counts it — the tools,
    then each message (3 framing tokens naming its role, its text, its tool calls) — for the
    cache: a prefix is cached when an earlier prompt began with the very same tokens."""
    enc = encoding("o200k_base")
    ids: list[int] = []
    for t in tools:
        ids += enc.encode(json.dumps(t.get("function", t), ensure_ascii=False), disallowed_special=())
    for m in messages:
        ids += [-1, -2 - sum(map(ord, str(m.get("role")))), -3]
        ids += enc.encode(_text(m.get("content")), disallowed_special=())
        for call in m.get("tool_calls") or []:
            function = call.get("function", {})
            ids += enc.encode(function.get("name", "") + function.get("arguments", ""), disallowed_special=())
    return ids


def cached(ids: list[int], earlier: list[list[int]]) -> int:
    """OpenAI's automatic prompt caching, emulated: the longest prefix ``ids`` shares with an
    earlier prompt, cached from 1,024 tokens on in steps of 128 (0 below)."""
    common = max((_common(ids, old) for old in earlier), default=0)
    if common < CACHE_MINIMUM:
        return 0
    return CACHE_MINIMUM + (common - CACHE_MINIMUM) // CACHE_STEP * CACHE_STEP


def _common(a: list[int], b: list[int]) -> int:
    """The length of the longest common prefix (a binary search over slices compared in C)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def prompt_tokens(messages: list[dict], tools: list[dict]) -> int:
    """The prompt's tokens as this server bills them: OpenAI's recipe for chat models in o200k."""
    enc = encoding("o200k_base")

    def n(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    total = 3  # every reply is primed with <|start|>assistant<|message|>
    for m in messages:
        total += 3 + n(_text(m.get("content")))
        for call in m.get("tool_calls") or []:
            function = call.get("function", {})
            total += n(function.get("name", "") + function.get("arguments", ""))
    return total + sum(n(json.dumps(t.get("function", t), ensure_ascii=False)) for t in tools)


_PROSE = ("The competitors moved in different directions this quarter, and the report weighs each "
          "one's market data against its news before drawing any conclusion. ")


def _looping(messages: list[dict], tickers: list[str], names: list) -> tuple[str, list[tuple[str, dict]]]:
    """The ``loop`` behaviour: fetch the first named ticker whose export is not in view."""
    called = " ".join(c.get("function", {}).get("arguments", "") for m in messages
                      if m.get("role") == "assistant" for c in m.get("tool_calls") or [])
    todo = [t for t in tickers if t not in called]
    if todo and "fetch_market_data" in names:
        return "", [("fetch_market_data", {"ticker": todo[0]})]
    return f"Done: I looked at {', '.join(tickers)}.", []


def policy(messages: list[dict], tools: list[dict], behaviours: frozenset[str] = frozenset()
           ) -> tuple[str, list[tuple[str, dict]]]:
    """``(text, [(tool, args), ...])``: the reply to ``messages`` with ``tools`` offered, by the
    default policy or by the ``loop`` / ``no_tools`` / ``long`` behaviours."""
    names = [t.get("function", {}).get("name") for t in tools]
    if tools and "no_tools" in behaviours:
        return "I will answer from what I know, without tools. " + _PROSE * 2, []
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    request = _text(messages[users[-1]]["content"]) if users else ""
    tickers = _tickers(request)
    usable = [n for n in KNOWN_TOOLS if n in names]
    if not tools:  # a summary request: name what it is about, as a terse summarizer would
        named = _tickers(" ".join(_text(m.get("content")) for m in messages))
        return f"Summary: the user wants a report on {', '.join(named) or 'nothing named'}.", []
    if tools and "loop" in behaviours and "task" not in names:
        users = [m for m in messages if m.get("role") == "user"]
        everything = _tickers(" ".join(_text(m.get("content")) for m in users))
        return _looping(messages, everything, names)
    last = messages[-1].get("role")
    if last == "user" and "task" in names and tickers:  # delegate: one child per company, in parallel
        task = next(t["function"] for t in tools if t.get("function", {}).get("name") == "task")
        kinds = re.findall(r"^- ([\w-]+):", task.get("description", ""), re.M) or ["general-purpose"]
        return "", [("task", {"description": f"Research {t}: fetch its market data and news, and "
                              "reply with a short report.", "subagent_type": kinds[0]})
                    for t in tickers[:3]]
    if last == "user":
        if "exact" in request.lower():
            return INVENTED, []
        if usable and tickers:
            return "", [(n, {"ticker": tickers[0]}) for n in usable[:2]]
        return "I have no tool for that.", []
    # one more call, unless it can already see it made that call (stateless, so a compaction
    # that hides the call would make it call again — as a real model might)
    called = " ".join(c.get("function", {}).get("arguments", "") for m in messages
                      if m.get("role") == "assistant" for c in m.get("tool_calls") or [])
    if last == "tool" and len(tickers) > 1 and tickers[1] not in called and "fetch_market_data" in names:
        return "", [("fetch_market_data", {"ticker": tickers[1]})]
    return f"Done: I looked at {', '.join(tickers[:2]) or 'nothing'} and stopped there.", []


class _Handler(BaseHTTPRequestHandler):
    server: _HTTP

    def log_message(self, format: str, *args: Any) -> None:  # quiet: pytest shows failures anyway
        pass

    def _json(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/") != "/v1/models":
            return self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
        owner = self.server.owner
        owner.record(self.path, None)
        self._json(200, {"object": "list", "data": [{"id": owner.model, "object": "model",
                                                     "created": 0, "owned_by": "labkit-tests"}]})

    def _reset(self) -> None:
        """Cut the connection with a TCP reset, nothing answered."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def _refuse(self, owner: OpenAIServer, body: dict) -> bool:
        """A wrong key (401) or an unknown model (404); True if answered."""
        key = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        if owner.key is not None and key != owner.key:
            self._json(401, {"error": {"message": f"Incorrect API key provided: {key[:3]}***. You can "
                                       "find your API key in your account settings.",
                                       "type": "invalid_request_error", "code": "invalid_api_key"}})
            return True
        if owner.models is not None and body.get("model") not in owner.models:
            self._json(404, {"error": {"message": f"The model `{body.get('model')}` does not exist or "
                                       "you do not have access to it.", "type": "invalid_request_error",
                                       "code": "model_not_found"}})
            return True
        return False

    def _fail(self, failure: str) -> None:
        if failure == "reset":
            return self._reset()
        if failure == "429":
            data = json.dumps({"error": {"message": "Rate limit reached for requests per min. Please "
                               "try again in 1s.", "type": "requests", "code": "rate_limit_exceeded"}})
            self.send_response(429)
            self.send_header("Retry-After", "0")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data.encode())
            return None
        return self._json(500, {"error": {"message": "The server had an error while processing your "
                                          "request. Sorry about that!", "type": "server_error"}})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        owner = self.server.owner
        messages, tools = body.get("messages", []), body.get("tools", [])
        chat = self.path.rstrip("/") == "/v1/chat/completions"
        prompt = prompt_tokens(messages, tools) if chat else 0
        number = owner.record(self.path, body, prompt)
        if not chat:
            return self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
        if self._refuse(owner, body):
            return None
        if number in owner.failures:
            return self._fail(owner.failures[number])
        unpaired = pairing_error(messages)
        if unpaired:
            return self._json(400, {"error": {"message": unpaired, "type": "invalid_request_error",
                                              "param": "messages", "code": None}})
        if prompt > owner.window:
            return self._json(400, {"error": {
                "message": f"This model's maximum context length is {owner.window} tokens. However, "
                           f"your messages resulted in {prompt} tokens. Please reduce the length.",
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
        if "slow" in owner.behaviours:
            time.sleep(0.3)
        text, calls = policy(messages, tools, owner.behaviours)
        if "long" in owner.behaviours and not calls:  # long answers and long summaries
            text = text + " " + _PROSE * 60
        calls = [{"id": f"call_{number}_{i}", "type": "function",
                  "function": {"name": name, "arguments": json.dumps(args)}}
                 for i, (name, args) in enumerate(calls)]
        calls += owner.extra_calls(number, calls)
        completion = (len(text) + len(json.dumps(calls))) // 4 + 1
        usage = None if "no_usage" in owner.behaviours else {
            "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": owner.cache(messages, tools)}}
        head = {"id": f"chatcmpl-{number}", "created": 0, "model": body.get("model", owner.model)}
        finish = "tool_calls" if calls else "stop"
        if not body.get("stream"):
            message = {"role": "assistant", "content": text or None}
            if calls:
                message["tool_calls"] = calls
            reply = {**head, "object": "chat.completion", "choices": [
                {"index": 0, "message": message, "finish_reason": finish}]}
            return self._json(200, reply if usage is None else {**reply, "usage": usage})
        self._stream(head, text, calls, finish,
                     usage if (body.get("stream_options") or {}).get("include_usage") else None)

    def _stream(self, head: dict, text: str, calls: list[dict], finish: str, usage: dict | None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()  # HTTP/1.0: the body ends when the connection closes

        def send(delta: dict | None, finish_reason: str | None = None, **extra: Any) -> None:
            choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
            chunk = {**head, "object": "chat.completion.chunk", "choices": choices, **extra}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())

        send({"role": "assistant", "content": ""})
        for piece in re.findall(r"\S+\s*", text):
            send({"content": piece})
        for i, call in enumerate(calls):
            send({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                  "function": {"name": call["function"]["name"], "arguments": ""}}]})
            send({"tool_calls": [{"index": i, "function": {"arguments": call["function"]["arguments"]}}]})
        send({}, finish)
        if usage is not None:
            send(None, usage=usage)
        self.wfile.write(b"data: [DONE]\n\n")


class _HTTP(ThreadingHTTPServer):
    daemon_threads = True
    owner: OpenAIServer


class OpenAIServer:
    """The server: ``with OpenAIServer(window=32_000) as s: ChatOpenAI(base_url=s.base_url, ...)``.

    ``requests`` holds ``{"path", "body", "tokens"}`` for every request, in the order they
    arrived (``tokens``: the prompt as the server counted it). ``behaviours``: names from
    :data:`BEHAVIOURS`; ``failures``: request number (1-based, every path) -> ``"429"``, ``"500"``
    or ``"reset"``; ``key``: the one API key accepted (None: any); ``models``: the model names
    it knows (None: any).
    """

    def __init__(self, window: int = 32_000, model: str = "fake-model", *, behaviours=(),
                 failures: dict[int, str] | None = None, key: str | None = None,
                 models: tuple[str, ...] | None = None) -> None:
        unknown = set(behaviours) - set(BEHAVIOURS)
        if unknown:
            raise ValueError(f"unknown behaviours {sorted(unknown)}; choose from {sorted(BEHAVIOURS)}")
        self.window, self.model, self.behaviours = window, model, frozenset(behaviours)
        self.failures, self.key, self.models = dict(failures or {}), key, models
        self.requests: list[dict] = []
        self.prompts: list[list[int]] = []  # every answered prompt's tokens: the prompt cache
        self._lock = threading.Lock()
        self._http = _HTTP(("127.0.0.1", 0), _Handler)
        self._http.owner = self
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``, what ``LABKIT_BASE_URL`` is set to."""
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    @property
    def chat_requests(self) -> list[dict]:
        """The bodies of the chat-completion requests."""
        return [r["body"] for r in self.requests if r["path"].rstrip("/") == "/v1/chat/completions"]

    @property
    def received(self) -> int:
        """Prompt tokens received over every chat request, refused and failed ones included."""
        return sum(r["tokens"] for r in self.requests)

    def record(self, path: str, body: dict | None, tokens: int = 0) -> int:
        """Keep a request; return its 1-based number."""
        with self._lock:
            self.requests.append({"path": path, "body": body, "tokens": tokens})
            return len(self.requests)

    def cache(self, messages: list[dict], tools: list[dict]) -> int:
        """The tokens of this prompt read from the cache; the prompt is cached in its turn."""
        ids = prompt_ids(messages, tools)
        with self._lock:
            read = cached(ids, self.prompts)
            self.prompts.append(ids)
        return read

    def extra_calls(self, number: int, calls: list[dict]) -> list[dict]:
        """The misbehaving calls added to a reply that has ``calls``: a call with arguments that
        are not JSON (``bad_args``, every other such reply) and a call to a tool it was not
        offered (``unknown_tool``)."""
        extra = []
        if calls and "bad_args" in self.behaviours and number % 2 == 0:
            extra.append({"id": f"call_{number}_bad", "type": "function",
                          "function": {"name": calls[0]["function"]["name"], "arguments": '{"ticker": "BR'}})
        if calls and "unknown_tool" in self.behaviours:
            extra.append({"id": f"call_{number}_web", "type": "function",
                          "function": {"name": "browse_web", "arguments": '{"url": "https://example.com"}'}})
        return extra

    def start(self) -> OpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
