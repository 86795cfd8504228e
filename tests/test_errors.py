"""labkit.errors: an overflow recognised exactly as the installed deepagents recognises one, in the
one place SummarizeMiddleware, the Recorder, diagnose and the On-your-model report ask — live and
after Run.save / load_run — and every provider error said with its message and what to do."""

from __future__ import annotations

import httpx
import openai
import pytest
from deepagents.middleware.summarization import _is_context_overflow
from langchain_core.exceptions import ContextOverflowError

from labkit import errors, scenario
from labkit.diagnose import diagnose
from labkit.model import get_model
from labkit.summarize import SummarizeMiddleware
from labkit.summarize.middleware import is_overflow as summarize_is_overflow

URL = "http://127.0.0.1:1/v1/chat/completions"


def status_error(status: int, message: str, code: str | None = None, headers: dict | None = None):
    """The error the openai client raises for a ``status`` answer with OpenAI's error body."""
    body = {"message": message, "type": "invalid_request_error", "code": code}
    response = httpx.Response(status, json={"error": body}, headers=headers,
                              request=httpx.Request("POST", URL))
    kinds = {400: openai.BadRequestError, 401: openai.AuthenticationError, 404: openai.NotFoundError,
             413: openai.APIStatusError, 422: openai.UnprocessableEntityError, 429: openai.RateLimitError,
             500: openai.InternalServerError}
    return kinds[status](message, response=response, body=body)


CASES = [
    status_error(400, "This model's maximum context length is 8192 tokens.", "context_length_exceeded"),
    status_error(400, "Input is too long.", "context_length_exceeded"),
    status_error(413, "prompt is too long: 250000 tokens > 200000 maximum"),
    status_error(422, "Input tokens exceed the configured limit of 32768 tokens."),
    status_error(400, "the request exceeds the available context size, try increasing it"),
    status_error(400, "Invalid value for 'tools[0].function.name'."),
    status_error(500, "maximum context length exceeded (but a server error)"),
    status_error(429, "Rate limit reached."),
    ContextOverflowError("anything"),
    ValueError("maximum context length"),
    httpx.HTTPStatusError("400: maximum context length", request=httpx.Request("POST", URL),
                          response=httpx.Response(400, request=httpx.Request("POST", URL))),
]


def _raised_from(outer: Exception, inner: Exception) -> Exception:
    try:
        try:
            raise inner
        except Exception as e:
            raise outer from e
    except Exception as caught:
        return caught


CASES += [_raised_from(RuntimeError("prompt is too long"), CASES[0]),
          _raised_from(ValueError("while handling it"), CASES[0])]


@pytest.mark.parametrize("error", CASES, ids=lambda e: f"{type(e).__name__}:{str(e)[:30]}")
def test_overflow_is_recognised_as_deepagents_recognises_it(error):
    assert errors.is_overflow(error) == _is_context_overflow(error)


def test_the_phrases_are_the_installed_deepagents_phrases():
    """If deepagents adds a phrase, this fails: labkit's list is a copy, kept in step here."""
    import inspect

    source = inspect.getsource(_is_context_overflow).lower()
    assert all(f'"{phrase}"' in source for phrase in errors.OVERFLOW_PHRASES)
    assert source.count('",') + source.count('"\n') >= len(errors.OVERFLOW_PHRASES)


def test_summarize_asks_the_same_function():
    assert summarize_is_overflow is errors.is_overflow


@pytest.mark.parametrize(("error", "kind", "advice"), [
    (status_error(401, "Incorrect API key provided: sk-ab***."), "authentication failed (401)",
     "OPENAI_API_KEY"),
    (status_error(404, "The model `gpt-9` does not exist."), "not found (404)", "LABKIT_MODEL"),
    (status_error(429, "Rate limit reached."), "rate limited (429)", "wait a minute"),
    (status_error(500, "The server had an error."), "server error (500)", "run the cell again later"),
    (status_error(400, "This model's maximum context length is 8192 tokens."), "context overflow",
     "LABKIT_WINDOW"),
    (httpx.ConnectError("[Errno 111] Connection refused"), "connection refused", "LABKIT_BASE_URL"),
    (httpx.ReadTimeout("timed out"), "timeout", "run the cell again"),
    (httpx.RemoteProtocolError("Server disconnected without sending a response."), "connection reset",
     "run the cell again"),
])
def test_explain_gives_the_kind_the_providers_message_and_what_to_do(error, kind, advice):
    model = get_model("openai:gpt-4.1-mini", api_key="sk-test")
    said = errors.explain(error, model)
    assert said.startswith(kind + ": ") and advice in said, said
    assert errors.provider_message(error) in said
    assert errors.kind(error) == kind


def test_an_ollama_server_that_is_down_says_ollama_serve():
    model = get_model("ollama:llama3.1")
    assert "`ollama serve`" in errors.explain(httpx.ConnectError("[Errno 111] Connection refused"), model)


def test_a_wrapped_connection_error_gives_the_root_cause():
    try:
        try:
            raise httpx.ConnectError("[Errno 111] Connection refused")
        except httpx.ConnectError as e:
            raise openai.APIConnectionError(request=httpx.Request("POST", URL)) from e
    except openai.APIConnectionError as wrapped:
        assert errors.provider_message(wrapped) == "[Errno 111] Connection refused"
        assert not errors.retryable(wrapped), "a refused connection is not sent again"


def test_retry_after_reads_the_header():
    assert errors.retry_after(status_error(429, "slow down", headers={"retry-after": "7"}), 1.0) == 7.0
    assert errors.retry_after(status_error(429, "slow down", headers={"retry-after-ms": "250"}), 1.0) == 0.25
    assert errors.retry_after(status_error(429, "slow down"), 1.5) == 1.5
    assert errors.retryable(status_error(429, "x")) and errors.retryable(status_error(500, "x"))
    assert not errors.retryable(status_error(401, "x")) and not errors.retryable(CASES[0])


@pytest.fixture
def server_model(monkeypatch):
    """The model of a server with a 6,000-token window."""
    from tests.openai_server import OpenAIServer

    with OpenAIServer(window=6_000) as server:
        for key, value in {"LABKIT_MODEL": "openai:fake-model", "LABKIT_BASE_URL": server.base_url,
                           "OPENAI_API_KEY": "dummy", "LABKIT_WINDOW": "6000"}.items():
            monkeypatch.setenv(key, value)
        yield get_model(max_retries=0)


def test_diagnose_finds_openais_400_as_a_hard_overflow_live_and_after_save(server_model, tmp_path):
    """langchain-openai raises OpenAIInvalidRequestError (not ContextOverflowError) for the server's
    400: the clinic still names the overflow, and a saved run keeps it."""
    run = scenario.run(server_model, turns=scenario.TURNS[:1], export_scale=0.2)
    assert run.error is not None and not isinstance(run.error, ContextOverflowError)
    assert run.records[-1].overflow
    loaded = scenario.load_run(run.save(tmp_path / "run.json"))
    for r in (run, loaded):
        found = {f.key: f for f in diagnose(r, server_model)}
        assert "hard_overflow" in found and found["hard_overflow"].numbers["largest"] > 0
    assert type(loaded.error).__name__ == type(run.error).__name__


def test_diagnose_finds_openais_400_rescued_live_and_after_save(server_model, tmp_path):
    summarize = SummarizeMiddleware(server_model, trigger=("tokens", 1_000_000), keep=("messages", 2))
    run = scenario.run(server_model, middleware=[summarize], turns=scenario.TURNS[:1], export_scale=0.1)
    assert run.error is None and any(r.overflow for r in run.records)
    loaded = scenario.load_run(run.save(tmp_path / "run.json"))
    assert "overflow_rescued" in {f.key for f in diagnose(run)}
    assert "overflow_rescued" in {f.key for f in diagnose(loaded)}


def test_a_cut_that_orphans_a_tool_result_is_refused_by_the_server_and_diagnosed(monkeypatch):
    """The server refuses an unpaired history as OpenAI does (400); the clinic's orphan detector
    reads that provider error as it reads the lab model's InvalidHistoryError."""
    from labkit.diagnose import NaiveCut
    from tests.openai_server import OpenAIServer

    with OpenAIServer(window=1_000_000, behaviours=("loop",)) as server:
        monkeypatch.setenv("LABKIT_BASE_URL", server.base_url)
        model = get_model("openai:fake-model", api_key="dummy", max_retries=0)
        run = scenario.run(model, middleware=[NaiveCut(trigger=4, keep=1)], turns=scenario.TURNS[:1],
                           export_scale=0.02)
    assert errors.status_of(run.error) == 400 and "role 'tool' must be a response" in str(run.error)
    assert [f.key for f in diagnose(run)] == ["orphan"]


def test_only_an_error_status_is_a_status_and_only_the_client_refusing_is_a_refused_connection():
    ok = httpx.Response(200, request=httpx.Request("POST", URL))
    parse = ValueError("could not parse the reply")
    parse.response = ok
    assert errors.status_of(parse) is None, "a reply that failed to parse carries its 200"
    relayed = status_error(500, "upstream said: connection refused")
    assert errors.kind(relayed) == "server error (500)", "a gateway's words are not our connection"
    assert errors.kind(RuntimeError("connection refused, said the proxy")) == "RuntimeError"
    assert errors.kind(httpx.ConnectError("[Errno 111] Connection refused")) == "connection refused"
