"""The lessons' key experiments, scaled down for "On your model" (``labkit.yourmodel``).

One function per lesson returns an :class:`~labkit.yourmodel.Experiment`; notebook 01 builds its
own by hand, the others call ``experiments.<name>()``. ``basics`` holds token counts (02), hook
order (03), the pasted transcript (05), the tool tax (06) and safe cuts (08); ``defences``
offloading (04), summarization (07) and isolation (12); ``practice`` compaction without deletion
(09), the summary itself (10), the wall (11), skills (13), goal anchors (14), the needle (15) and
the clinic (16).
"""

from labkit.experiments.basics import cutting_safely, hook_order, pasted_transcript, token_counts, tool_tax
from labkit.experiments.defences import isolation, offloading, summarization
from labkit.experiments.practice import (
                                         anchors,
                                         clinic,
                                         needle_recovery,
                                         skills,
                                         summary_itself,
                                         wall,
                                         without_deletion,
)

__all__ = [
    "anchors",
    "clinic",
    "cutting_safely",
    "hook_order",
    "isolation",
    "needle_recovery",
    "offloading",
    "pasted_transcript",
    "skills",
    "summarization",
    "summary_itself",
    "token_counts",
    "tool_tax",
    "wall",
    "without_deletion",
]
