"""A small OpenAI-compatible chat-completions server for the tests: a real model's wire format and
habits, none of the lab model's script. Standard library only; bound to 127.0.0.1 on a free port.

It answers ``POST /v1/chat/completions`` (plain JSON, or SSE chunks with ``stream: true``, a usage
chunk when ``stream_options.include_usage``) and ``GET /v1/models``; counts prompt tokens as
``len(json of messages and tools) // 4``; refuses a request above its ``window`` with OpenAI's 400
``context_length_exceeded`` body; and records every request in ``server.requests``.

Its policy, deterministic and unlike the lab model's: to a user turn with tools it makes two
*parallel* calls (``fetch_market_data`` and ``search_news`` for the first ticker it finds); after
tool results it fetches the next ticker (unless it sees that call already), then stops early with
a short answer (no report); asked for an exact figure, it invents a percentage instead of
looking. Without tools (a summary request), it answers a one-line summary.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["INVENTED", "OpenAIServer", "policy"]

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


def policy(messages: list[dict], tools: list[dict]) -> tuple[str, list[tuple[str, dict]]]:
    """``(text, [(tool, args), ...])``: the reply to ``messages`` with ``tools`` offered."""
    names = [t.get("function", {}).get("name") for t in tools]
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    request = _text(messages[users[-1]]["content"]) if users else ""
    tickers = _tickers(request)
    usable = [n for n in KNOWN_TOOLS if n in names]
    if not tools:  # a summary request: name what it is about, as a terse summarizer would
        named = _tickers(" ".join(_text(m.get("content")) for m in messages))
        return f"Summary: the user wants a report on {', '.join(named) or 'nothing named'}.", []
    last = messages[-1].get("role")
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

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        owner = self.server.owner
        number = owner.record(self.path, body)
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
        messages, tools = body.get("messages", []), body.get("tools", [])
        prompt = len(json.dumps(messages)) // 4 + len(json.dumps(tools)) // 4
        if prompt > owner.window:
            return self._json(400, {"error": {
                "message": f"This model's maximum context length is {owner.window} tokens. However, "
                           f"your messages resulted in {prompt} tokens. Please reduce the length.",
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
        text, calls = policy(messages, tools)
        calls = [{"id": f"call_{number}_{i}", "type": "function",
                  "function": {"name": name, "arguments": json.dumps(args)}}
                 for i, (name, args) in enumerate(calls)]
        completion = (len(text) + len(json.dumps(calls))) // 4 + 1
        usage = {"prompt_tokens": prompt, "completion_tokens": completion,
                 "total_tokens": prompt + completion}
        head = {"id": f"chatcmpl-{number}", "created": 0, "model": body.get("model", owner.model)}
        finish = "tool_calls" if calls else "stop"
        if not body.get("stream"):
            message = {"role": "assistant", "content": text or None}
            if calls:
                message["tool_calls"] = calls
            return self._json(200, {**head, "object": "chat.completion", "usage": usage, "choices": [
                {"index": 0, "message": message, "finish_reason": finish}]})
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

    ``requests`` holds ``{"path", "body"}`` for every request, in the order they arrived.
    """

    def __init__(self, window: int = 32_000, model: str = "fake-model") -> None:
        self.window, self.model = window, model
        self.requests: list[dict] = []
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

    def record(self, path: str, body: dict | None) -> int:
        """Keep a request; return its 1-based number."""
        with self._lock:
            self.requests.append({"path": path, "body": body})
            return len(self.requests)

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
