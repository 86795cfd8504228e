"""labkit — the lab kit of the context-engineering workbook: one module per idea, by notebook.

``tokens`` counting tokens offline (02) · ``model`` the offline LabModel, get_model() (01) ·
``scenario`` the running example, run() and score() (01) · ``trace`` the Recorder (03) ·
``plots`` / ``tables`` what the model saw (01) · ``offload`` evict big content to files (04, 05) ·
``widgets`` knob panels (04, 07) · ``summarize`` compaction with an archive (07–11) ·
``replay`` new knobs on a recorded run (07, 09) · ``isolate`` subagents behind task() (12) ·
``evals`` targeted evals (14, 15) · ``diagnose`` symptom → cause → remedy (16) ·
``exercises`` their checkers · ``meter`` a budget that holds, ``errors`` a provider's errors (01).

Nothing happens at import: no global settings, seeds or downloads. ``labkit.__version__`` is the
installed distribution's version (``labkit-context`` on PyPI; pyproject.toml's ``version``).
"""

from labkit._version import __version__ as __version__
from labkit.model import LabModel, get_model
from labkit.tokens import approx_tokens, count_tokens
from labkit.trace import Recorder

__all__ = ["LabModel", "Recorder", "approx_tokens", "count_tokens", "get_model"]
