"""The lessons' key experiments, scaled down for "On your model" (``labkit.yourmodel``).

One function per lesson returns an :class:`~labkit.yourmodel.Experiment`; notebook 01 builds its
own by hand, the others call ``experiments.<name>()``. ``basics`` holds token counts (02), hook
order (03), the pasted transcript (05), the tool tax (06) and safe cuts (08); ``defences`` holds
offloading (04), summarization (07) and isolation (12).
"""

from labkit.experiments.basics import cutting_safely, hook_order, pasted_transcript, token_counts, tool_tax
from labkit.experiments.defences import isolation, offloading, summarization

__all__ = ["cutting_safely", "hook_order", "isolation", "offloading", "pasted_transcript", "summarization",
           "token_counts", "tool_tax"]
