"""labkit — the lab kit of the context-engineering workbook.

One module per idea, each introduced by a notebook:

- ``tokens``   counting tokens offline (02)
- ``model``    the offline LabModel and get_model() (01)
- ``scenario`` the running example: tools, tasks, needle, run() and score() (01)
- ``trace``    the recording middleware: stored vs seen, by kind (03)
- ``plots``    plotly figures of what the model saw (01)
- ``tables``   small HTML tables for notebook results (01)
- ``offload``  offloading: evict big results and messages to files, shorten old arguments (04, 05)
- ``widgets``  ipywidgets panels of knobs that re-run the lab and redraw (04, 07)
- ``summarize`` summarization: non-destructive compaction with an archive (07–11)
- ``replay``   re-simulate a recorded run under new knobs, no agent loop (07, 09)
- ``isolate``  subagents behind a task() tool, parent and child contexts accounted apart (12)
- ``evals``    targeted evals: forced compaction, goal retention, repeated work, the eval grid (14, 15)
- ``diagnose`` the symptom → cause → remedy table (English, 中文) and auto-diagnosis of a run (16)
- ``exercises`` the notebooks' exercises and their checkers

Nothing happens at import: no global settings, seeds or downloads.
"""

from labkit.model import LabModel, get_model
from labkit.tokens import approx_tokens, count_tokens
from labkit.trace import Recorder

__all__ = ["LabModel", "Recorder", "approx_tokens", "count_tokens", "get_model"]
