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


def _probed(package: str, name: str, what: str, notebooks: str, probe: Callable[[], bool]) -> Feature:
    return Feature(package, name, what, tuple(notebooks.split()), probe)


def _attribute(package: str, notebooks: str, module: str, path: str, name: str = "") -> Feature:
    """An attribute found by import: ``path`` in ``module`` (``Class.attr``, or a module's ``attr``),
    named ``attr`` unless ``name`` is given; its ``what`` reads "<Class> has <attr>"."""
    owner, _, attr = path.rpartition(".")
    owner = owner or f"{module.rpartition('.')[2]} module"
    return Feature(package, name or attr, f"{owner} has {attr}", tuple(notebooks.split()), _has(module, path))


_TOOL_EXCLUSION = "deepagents.middleware._tool_exclusion"
FEATURES: tuple[Feature, ...] = (
    _probed("deepagents", "_summarization_event", "summarization event has the keys " + ", ".join(EVENT_KEYS),
            "09 10", lambda: set(EVENT_KEYS) <= _annotated("SummarizationEvent")),
    _probed("deepagents", "_summarization_session_id", "summarization state keeps _summarization_session_id",
            "09", lambda: "_summarization_session_id" in _annotated("SummarizationState")),
    _probed("deepagents", "_lc_helper", "SummarizationMiddleware keeps langchain's as _lc_helper", "07 10 14",
            _deep_has("_lc_helper")),
    _attribute("deepagents", "07", _SUMMARIZATION, "SummarizationMiddleware._count_tokens"),
    _attribute("deepagents", "02 07", _SUMMARIZATION, "SummarizationMiddleware._input_budget"),
    _attribute("deepagents", "07", _SUMMARIZATION, "SummarizationMiddleware._over_budget"),
    _attribute("deepagents", "08", _SUMMARIZATION, "SummarizationMiddleware._determine_cutoff_index"),
    _attribute("deepagents", "05", _SUMMARIZATION, "SummarizationMiddleware._truncate_tool_call"),
    _probed("deepagents", "_max_arg_length", "SummarizationMiddleware keeps _max_arg_length", "05",
            _deep_has("_max_arg_length")),
    _probed("deepagents", "_truncation_text", "SummarizationMiddleware keeps _truncation_text", "05",
            _deep_has("_truncation_text")),
    _attribute("deepagents", "11", _SUMMARIZATION, "SummarizationToolMiddleware._is_eligible_for_compaction"),
    _attribute("deepagents", "02", "deepagents.middleware.filesystem",
               "FilesystemMiddleware._process_large_message"),
    _attribute("deepagents", "06", _TOOL_EXCLUSION, "_ToolExclusionMiddleware"),
    _attribute("deepagents", "06", _TOOL_EXCLUSION, "_ToolExclusionMiddleware._rejection"),
    _attribute("deepagents", "13", "deepagents.backends", "CompositeBackend._get_backend_and_key"),
    _probed("langchain", "summary call tags", "summarizer tags its model call nostream", "10",
            lambda: "nostream" in (_summary_tags() or ())),
    _attribute("langchain", "01 10 14", _LC_SUMMARIZATION,
               "SummarizationMiddleware._trim_messages_for_summary"),
    _attribute("langchain", "01 08", _LC_SUMMARIZATION, "SummarizationMiddleware._determine_cutoff_index",
               name="_determine_cutoff_index (langchain)"),
    _attribute("langchain", "01 10", _LC_SUMMARIZATION, "SummarizationMiddleware._create_summary"),
    _attribute("langchain", "08", _LC_SUMMARIZATION, "SummarizationMiddleware._find_safe_cutoff_point"),
    _attribute("langchain", "02 11", _LC_SUMMARIZATION,
               "SummarizationMiddleware._should_summarize_based_on_reported_tokens"),
    _attribute("langchain", "14", "langchain.agents.middleware.todo", "_write_todos"),
    _attribute("langchain-core", "06 11", "langchain_core.language_models", "BaseChatModel._get_ls_params"),
    _attribute("langgraph", "12", "langgraph.prebuilt.tool_node", "ToolNode._func"),
    _attribute("deepagents", "12", "deepagents.middleware.subagents", "_fork_messages"),
    _attribute("deepagents", "12", "deepagents.middleware.subagents", "_FORK_TASK_PREAMBLE"),
    _attribute("deepagents", "12", "deepagents.middleware.subagents", "_FORK_EXCLUDED_STATE_KEYS"),
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
