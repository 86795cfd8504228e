"""labkit — the lab kit of the context-engineering workbook: one module per idea, by notebook.

``tokens`` counting tokens offline (02) · ``model`` the offline LabModel, get_model() (01) ·
``scenario`` the running example, run() and score() (01) · ``trace`` the Recorder (03) ·
``plots`` / ``tables`` what the model saw (01) · ``offload`` evict big content to files (04, 05) ·
``widgets`` knob panels (04, 07) · ``summarize`` compaction with an archive (07–11) ·
``replay`` new knobs on a recorded run (07, 09) · ``isolate`` subagents behind task() (12) ·
``evals`` targeted evals (14, 15) · ``diagnose`` symptom → cause → remedy (16) ·
``exercises`` their checkers · ``meter`` a budget that holds, ``errors`` a provider's errors (01).

Nothing happens at import (no settings, seeds or downloads); each module above loads on first use
as ``labkit.<module>``, naming the ``course`` extra if it lacks it. ``__version__``: labkit-context's.
"""

from importlib import import_module

from labkit._course import COURSE_EXTRA, missing_extra
from labkit._version import __version__ as __version__
from labkit.model import LabModel, get_model
from labkit.tokens import approx_tokens, count_tokens
from labkit.trace import Recorder

__all__ = ["LabModel", "Recorder", "approx_tokens", "count_tokens", "get_model"]

MODULES = ("caching", "diagnose", "errors", "evals", "exercises", "experiments", "installed", "isolate",
           "meter", "model", "offload", "oracle", "plots", "prompts", "replay", "scenario", "summarize",
           "tables", "tokens", "trace", "versions", "widgets", "yourmodel")


def __getattr__(name: str):
    """``labkit.<module>`` for every public module, imported on first use (PEP 562), and
    ``labkit.progress()``, where a learner stands (``labkit.exercises.progress``)."""
    if name == "progress":
        return import_module("labkit.exercises.progress").progress
    if name not in MODULES:
        raise AttributeError(f"module 'labkit' has no attribute {name!r}")
    try:
        return import_module(f"labkit.{name}")
    except ModuleNotFoundError as missing:
        if (missing.name or "").split(".")[0] not in COURSE_EXTRA:
            raise
        raise missing_extra(f"labkit.{name}", missing.name) from missing
