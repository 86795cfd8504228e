"""The lessons' key experiments, scaled down for "On your model" (``labkit.yourmodel``).

One function per lesson returns an :class:`~labkit.yourmodel.Experiment`; notebook 01 builds its
own by hand, the others call ``experiments.<name>()``. ``defences`` holds offloading (04),
summarization (07) and isolation (12).
"""

from labkit.experiments.defences import isolation, offloading, summarization

__all__ = ["isolation", "offloading", "summarization"]
