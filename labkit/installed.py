"""The deepagents and langchain internals the notebooks read, probed by feature in one place.

To show what the production middleware does, a few notebooks look inside it: deepagents' private
state key ``_summarization_event``, the langchain middleware it keeps as ``_lc_helper``, the tags
on summary calls, a private method read with ``inspect.getsource``. Such names change without
notice. ``FEATURES`` lists every one the notebooks read, each with a probe; ``missing()`` names
those the installed packages lack (``make canary`` prints it); the readers below return a feature
or raise ``FeatureChanged``, a message naming the feature, the tested and the installed version,
and the command that restores the tested set — instead of a KeyError or an AttributeError.
``tests/test_installed.py`` keeps ``FEATURES`` in step with the notebooks. Notebooks 01, 07, 09, 10, 14.
What it leaves out: public API (an import error already names it) and labkit's own internals.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from labkit.versions import RESTORE, TESTED, compare

__all__ = ["EVENT_KEYS", "FEATURES", "Feature", "FeatureChanged", "missing", "require", "summarization_event",
           "summarization_session_id", "summary_call_tags", "summary_helper", "trim_for_summary"]

EVENT_KEYS = ("cutoff_index", "summary_message", "file_path", "created_at_index")
_SUMMARIZATION = "deepagents.middleware.summarization"
_LC_SUMMARIZATION = "langchain.agents.middleware.summarization"


class FeatureChanged(RuntimeError):
    """An internal a notebook reads is not what the tested version had."""


@dataclass(frozen=True)
class Feature:
    """One internal a notebook reads: ``name`` as the notebooks spell it, ``what`` the tested version
    has (a clause: "<package> <version>'s <what>"), ``probe`` true when the installed one has it."""

    package: str
    name: str
    what: str
    notebooks: tuple[str, ...]
    probe: Callable[[], bool]

    def changed(self, found: str = "") -> FeatureChanged:
        """The error to raise when the installed package lacks this feature (``found``: what it has)."""
        tested = TESTED.get(self.package, "?")
        installed = next((d.installed for d in compare().differences if d.package == self.package), tested)
        also = f" ({found})" if found else ""
        return FeatureChanged(f"{self.package} {tested}'s {self.what}; the installed {self.package} "
                              f"{installed or '(not installed)'} does not{also}. This cell was written "
                              f"for the tested versions: to restore them, {RESTORE}.")


def _resolve(module: str, path: str) -> Any:
    """``module``'s object at the dotted ``path``; raises ImportError or AttributeError."""
    obj: Any = importlib.import_module(module)
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _has(module: str, path: str) -> Callable[[], bool]:
    def probe() -> bool:
        try:
            _resolve(module, path)
        except (ImportError, AttributeError):
            return False
        return True
    return probe


def _annotated(name: str) -> set[str]:
    """The annotated keys of deepagents' summarization TypedDict ``name`` (empty when it is gone)."""
    try:
        return set(_resolve(_SUMMARIZATION, name).__annotations__)
    except (ImportError, AttributeError):
        return set()


@cache
def _deep_middleware() -> Any:
    """deepagents' summarization middleware, built as ``create_deep_agent`` builds it, on a fake model."""
    backends = importlib.import_module("deepagents.backends")
    fake = importlib.import_module("langchain_core.language_models.fake_chat_models")
    build = _resolve(_SUMMARIZATION, "create_summarization_middleware")
    return build(fake.FakeListChatModel(responses=["## SESSION INTENT\nA probe."]), backends.StateBackend())


def _deep_has(attribute: str) -> Callable[[], bool]:
    def probe() -> bool:
        try:
            return hasattr(_deep_middleware(), attribute)
        except (ImportError, AttributeError, TypeError):
            return False
    return probe


@cache
def _summary_tags() -> tuple[str, ...] | None:
    """The tags langchain's summarizer puts on its model call, observed on a fake model's callback."""
    try:
        callbacks = importlib.import_module("langchain_core.callbacks")
        fake = importlib.import_module("langchain_core.language_models.fake_chat_models")
        messages = importlib.import_module("langchain_core.messages")
        summarizer = _resolve(_LC_SUMMARIZATION, "SummarizationMiddleware")
    except (ImportError, AttributeError):
        return None
    seen: list[list[str]] = []

    class Spy(callbacks.BaseCallbackHandler):
        def on_chat_model_start(self, serialized, messages, *, tags=None, **kwargs):  # noqa: D102
            seen.append(list(tags or []))

    model = fake.FakeListChatModel(responses=["## SESSION INTENT\nA probe."], callbacks=[Spy()])
    try:
        summarizer(model, trigger=("messages", 2))._create_summary([messages.HumanMessage("Summarize me.")])
    except (AttributeError, TypeError):
        return None
    return tuple(seen[0]) if seen else None


def _ours(package: str, name: str, what: str, notebooks: str, module: str = "", path: str = "",
          probe: Callable[[], bool] | None = None) -> Feature:
    return Feature(package, name, what, tuple(notebooks.split()), probe or _has(module, path))


_TOOL_EXCLUSION = "deepagents.middleware._tool_exclusion"
FEATURES: tuple[Feature, ...] = (
    _ours("deepagents", "_summarization_event", "summarization event has the keys " + ", ".join(EVENT_KEYS),
          "09 10", probe=lambda: set(EVENT_KEYS) <= _annotated("SummarizationEvent")),
    _ours("deepagents", "_summarization_session_id", "summarization state keeps _summarization_session_id",
          "09", probe=lambda: "_summarization_session_id" in _annotated("SummarizationState")),
    _ours("deepagents", "_lc_helper", "SummarizationMiddleware keeps langchain's as _lc_helper", "07 10 14",
          probe=_deep_has("_lc_helper")),
    _ours("deepagents", "_count_tokens", "SummarizationMiddleware has _count_tokens", "07",
          _SUMMARIZATION, "SummarizationMiddleware._count_tokens"),
    _ours("deepagents", "_input_budget", "SummarizationMiddleware has _input_budget", "02",
          _SUMMARIZATION, "SummarizationMiddleware._input_budget"),
    _ours("deepagents", "_determine_cutoff_index", "SummarizationMiddleware has _determine_cutoff_index",
          "08", _SUMMARIZATION, "SummarizationMiddleware._determine_cutoff_index"),
    _ours("deepagents", "_truncate_tool_call", "SummarizationMiddleware has _truncate_tool_call", "05",
          _SUMMARIZATION, "SummarizationMiddleware._truncate_tool_call"),
    _ours("deepagents", "_max_arg_length", "SummarizationMiddleware keeps _max_arg_length", "05",
          probe=_deep_has("_max_arg_length")),
    _ours("deepagents", "_truncation_text", "SummarizationMiddleware keeps _truncation_text", "05",
          probe=_deep_has("_truncation_text")),
    _ours("deepagents", "_is_eligible_for_compaction",
          "SummarizationToolMiddleware has _is_eligible_for_compaction", "11",
          _SUMMARIZATION, "SummarizationToolMiddleware._is_eligible_for_compaction"),
    _ours("deepagents", "_process_large_message", "FilesystemMiddleware has _process_large_message", "02",
          "deepagents.middleware.filesystem", "FilesystemMiddleware._process_large_message"),
    _ours("deepagents", "_ToolExclusionMiddleware", "_tool_exclusion module has _ToolExclusionMiddleware",
          "06", _TOOL_EXCLUSION, "_ToolExclusionMiddleware"),
    _ours("deepagents", "_rejection", "_ToolExclusionMiddleware has _rejection", "06",
          _TOOL_EXCLUSION, "_ToolExclusionMiddleware._rejection"),
    _ours("deepagents", "_get_backend_and_key", "CompositeBackend has _get_backend_and_key", "13",
          "deepagents.backends", "CompositeBackend._get_backend_and_key"),
    _ours("langchain", "summary call tags", "summarizer tags its model call nostream", "10",
          probe=lambda: "nostream" in (_summary_tags() or ())),
    _ours("langchain", "_trim_messages_for_summary", "SummarizationMiddleware has _trim_messages_for_summary",
          "01 10 14", _LC_SUMMARIZATION, "SummarizationMiddleware._trim_messages_for_summary"),
    _ours("langchain", "_determine_cutoff_index (langchain)",
          "SummarizationMiddleware has _determine_cutoff_index", "01 08",
          _LC_SUMMARIZATION, "SummarizationMiddleware._determine_cutoff_index"),
    _ours("langchain", "_create_summary", "SummarizationMiddleware has _create_summary", "10",
          _LC_SUMMARIZATION, "SummarizationMiddleware._create_summary"),
    _ours("langchain", "_find_safe_cutoff_point", "SummarizationMiddleware has _find_safe_cutoff_point",
          "08", _LC_SUMMARIZATION, "SummarizationMiddleware._find_safe_cutoff_point"),
    _ours("langchain", "_should_summarize_based_on_reported_tokens",
          "SummarizationMiddleware has _should_summarize_based_on_reported_tokens", "02 11",
          _LC_SUMMARIZATION, "SummarizationMiddleware._should_summarize_based_on_reported_tokens"),
    _ours("langchain", "_write_todos", "todo module has _write_todos", "14",
          "langchain.agents.middleware.todo", "_write_todos"),
    _ours("langchain-core", "_get_ls_params", "BaseChatModel has _get_ls_params", "06 11",
          "langchain_core.language_models", "BaseChatModel._get_ls_params"),
    _ours("langgraph", "_func", "ToolNode has _func", "12", "langgraph.prebuilt.tool_node", "ToolNode._func"),
)


def missing() -> list[Feature]:
    """The features the installed packages lack (empty on the tested versions). ``make canary``."""
    return [f for f in FEATURES if not f.probe()]


def require(name: str) -> Feature:
    """The feature called ``name``, after checking that the installed package has it."""
    feature = _feature(name)
    if not feature.probe():
        raise feature.changed()
    return feature


def _feature(name: str) -> Feature:
    return next(f for f in FEATURES if f.name == name)


def _state_value(state: Mapping[str, Any], key: str) -> Any:
    """``state[key]``; a missing key raises ``FeatureChanged`` if the installed package lacks it."""
    if key not in state or state[key] is None:
        require(key)
        raise KeyError(f"{key}: this run's state has none (its summarization middleware never compacted)")
    return state[key]


def summarization_event(state: Mapping[str, Any]) -> dict[str, Any]:
    """deepagents' summarization event in an agent's ``state``, with every key of ``EVENT_KEYS``.
    Notebooks 09, 10.

    Raises ``FeatureChanged`` when the installed deepagents' event lacks one (KeyError before)."""
    event = _state_value(state, "_summarization_event")
    if any(k not in event for k in EVENT_KEYS):
        raise _feature("_summarization_event").changed("its event has " + ", ".join(sorted(event)))
    return dict(event)


def summarization_session_id(state: Mapping[str, Any]) -> str:
    """The session id deepagents names its archive after, kept in ``state``. Notebook 09."""
    return _state_value(state, "_summarization_session_id")


def summary_helper(middleware: Any) -> Any:
    """The langchain ``SummarizationMiddleware`` deepagents' middleware delegates to. Notebooks 07, 10, 14."""
    if not hasattr(middleware, "_lc_helper"):
        raise _feature("_lc_helper").changed()
    return middleware._lc_helper


def trim_for_summary(middleware: Any, messages: Sequence[Any]) -> list[Any]:
    """The messages langchain's summarizer would read out of ``messages`` (its private trim), for
    langchain's middleware or deepagents' (through ``summary_helper``). Notebooks 01, 10, 14."""
    helper = middleware if hasattr(middleware, "trim_tokens_to_summarize") else summary_helper(middleware)
    if not hasattr(helper, "_trim_messages_for_summary"):
        raise _feature("_trim_messages_for_summary").changed()
    return helper._trim_messages_for_summary(list(messages))


def summary_call_tags() -> list[str]:
    """The tags langchain's summarizer puts on its model call (``["nostream"]`` on the tested
    version), observed on a fake model. Raises ``FeatureChanged`` without ``nostream``. Notebook 10."""
    tags = _summary_tags()
    if tags is None or "nostream" not in tags:
        found = "no summary call was observed" if tags is None else f"its tags are {list(tags)}"
        raise _feature("summary call tags").changed(found)
    return list(tags)
