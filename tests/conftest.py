"""What several test files share: the scenario runs they read, the messages they build, a
scripted fake model, a fake OpenAI-compatible server, a backend over a dict, the snapshot check,
the scripts/ loader (``script``) and Debian's chromium driven by Playwright (``browser``:
tests/test_browser.py, tests/test_book.py).

The runs are fixtures, module-scoped as they were in each file: each module still gets its own
run (a test cannot change another file's), and only one place says how the run is made. The
builders are plain functions, imported where module-level histories need them::

    from tests.conftest import ai_call, fetched, news
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import os
from pathlib import Path

import pytest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from pydantic import Field

from labkit import LabModel, scenario
from tests.browser_lab import CHROMIUM, NO_CHROMIUM, NO_PLAYWRIGHT, chromium
from tests.openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    """What notebook 13 keeps beyond the kernel (``scenario.state_dir()``) and the exercises' checks
    (``labkit.progress()``) go to a folder of this test process's own, inherited by the notebooks'
    kernels: never the learner's files, and never another suite's running beside this one."""
    import tempfile

    os.environ["LABKIT_STATE"] = tempfile.mkdtemp(prefix="labkit-state-")
    os.environ["LABKIT_PROGRESS"] = os.path.join(os.environ["LABKIT_STATE"], "progress.jsonl")


SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
FIXED = dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)  # a clock for archives and events


# -- the scenario runs -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def naive_1m():
    """``(model, run)``: the naive run on a 1M-token window, where nothing overflows."""
    model = LabModel(window=1_000_000)
    return model, scenario.run(model)


@pytest.fixture(scope="module")
def recorded(naive_1m):
    """The naive 1M run alone: the recording replay, the panels and the plots start from."""
    _, run = naive_1m
    assert run.error is None and not any(r.error for r in run.records)
    return run


@pytest.fixture(scope="module")
def traj(recorded):
    """``labkit.replay.trajectory`` of the recording."""
    from labkit.replay import trajectory

    return trajectory(recorded)


@pytest.fixture(scope="module")
def overflow_128k():
    """The naive run on a 128k window: the last call is refused and the run ends there."""
    run = scenario.run(LabModel(window=128_000))
    assert run.error is not None and run.records[-1].error
    return run


@pytest.fixture(scope="module")
def deep_60k():
    """``(model, run)``: create_deep_agent on a 60k window — deepagents compacts, and the needle
    is in the archive."""
    model = LabModel(window=60_000)
    return model, scenario.run(model, harness="deep")


@pytest.fixture
def openai_server():
    """A fake OpenAI-compatible server on 127.0.0.1 (``tests/openai_server.py``) with a
    32,000-token window, stopped after the test; ``.base_url`` is what ``LABKIT_BASE_URL`` takes."""
    with OpenAIServer(window=32_000) as server:
        yield server


# -- the scripts ---------------------------------------------------------------------------------


def script(name: str):
    """``scripts/<name>.py`` loaded as a module (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- a real browser ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    """Debian's chromium, headless, in a fresh profile Playwright makes and deletes; skipped
    without /usr/bin/chromium or without playwright."""
    if not CHROMIUM.exists():
        pytest.skip(NO_CHROMIUM)
    pytest.importorskip("playwright.sync_api", reason=NO_PLAYWRIGHT)
    with chromium() as browser:
        yield browser


# -- building histories ----------------------------------------------------------------------------


def ai_call(name: str, args: dict, call_id: str) -> AIMessage:
    """An AI message with one tool call."""
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}])


def fetched(ticker: str, call_id: str) -> list:
    """An AI call to fetch_market_data and its result, as an agent loop stores them."""
    result = ToolMessage(scenario.export_text(ticker), tool_call_id=call_id, name="fetch_market_data")
    return [ai_call("fetch_market_data", {"ticker": ticker}, call_id), result]


def news(ticker: str, call_id: str) -> list:
    """An AI call to search_news and its result."""
    return [ai_call("search_news", {"ticker": ticker}, call_id),
            ToolMessage(scenario.news_text(ticker), tool_call_id=call_id, name="search_news")]


def called(reply: AIMessage) -> list[tuple[str, dict]]:
    """``(name, args)`` of each tool call in a reply."""
    return [(tc["name"], tc["args"]) for tc in reply.tool_calls]


# -- a scripted model, a backend over a dict, snapshots --------------------------------------------


class Scripted(GenericFakeChatModel):
    """A fake chat model that plays a fixed list of replies (``messages=iter([...])``), ignores
    the tools it is bound to, logs what it was sent in ``seen``, and raises
    ``ContextOverflowError`` on the calls listed in ``overflow_on`` (1-based)."""

    seen: list = Field(default_factory=list)
    overflow_on: tuple = ()

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.seen.append(list(messages))
        if len(self.seen) in self.overflow_on:
            raise ContextOverflowError("prompt is too long: maximum context length exceeded")
        return super()._generate(messages, stop, run_manager, **kwargs)


class MemoryBackend:
    """The two backend methods the archive uses, over a dict."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}

    def download_files(self, paths):
        from deepagents.backends.protocol import FileDownloadResponse

        return [FileDownloadResponse(path=p, content=self.files[p].encode(), error=None) if p in self.files
                else FileDownloadResponse(path=p, content=None, error="file_not_found") for p in paths]

    def write(self, path, content):
        from deepagents.backends.protocol import WriteResult

        self.files[path] = content
        return WriteResult(path=path)


def assert_snapshot(name: str, text: str) -> None:
    """``text`` is the snapshot ``tests/snapshots/<name>``: a change to text learners read must be
    a visible diff. Rewrite it on purpose with ``LABKIT_UPDATE_SNAPSHOTS=1`` and commit it."""
    path = SNAPSHOTS / name
    if os.environ.get("LABKIT_UPDATE_SNAPSHOTS") == "1":
        path.write_text(text + "\n", encoding="utf-8")
    assert path.is_file(), f"missing snapshot {path}; write it with LABKIT_UPDATE_SNAPSHOTS=1"
    assert text + "\n" == path.read_text(encoding="utf-8"), f"{name} changed"


def pytest_terminal_summary(terminalreporter):
    """Figures a test recorded to be read, not judged: the browser test's input → redraw latency
    per panel (``record_property("latency_ms …", "… ms …")``), printed at the end of the run."""
    lines = [f"  {name}: {value}" for report in terminalreporter.stats.get("passed", [])
             if report.when == "call" for name, value in report.user_properties
             if name.startswith("latency_ms")]
    if lines:
        terminalreporter.write_sep("-", "input -> redraw latency in chromium (a figure, not a check)")
        terminalreporter.write_line("\n".join(lines))
