"""A chat model's copy whose client sends each request once, so that the meter's retries are the only
ones — each a line, each counted against the cap.

Used by: labkit.meter (``Meter.attach``). What it leaves out: a model wrapped by ``.with_retry()``
(a runnable, not a chat model: ``attach`` refuses it).
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

__all__ = ["without_client_retries"]


def without_client_retries(model: BaseChatModel) -> BaseChatModel:
    """A copy of ``model`` whose client sends each request once: the meter retries, visibly.
    OpenAI's clients (and every OpenAI-compatible one) take ``with_options(max_retries=0)``;
    a model with a ``max_retries`` field (Anthropic's) is copied with it at 0 and its cached
    clients dropped. Any other model is copied as it is."""
    root = getattr(model, "root_client", None)
    if root is not None and hasattr(root, "with_options"):
        copy = model.model_copy()
        copy.root_client = root.with_options(max_retries=0)
        copy.client = copy.root_client.chat.completions
        aroot = getattr(model, "root_async_client", None)
        if aroot is not None:
            copy.root_async_client = aroot.with_options(max_retries=0)
            copy.async_client = copy.root_async_client.chat.completions
        return copy
    if "max_retries" in type(model).model_fields:
        # Google's SDK reads 0 as "its default, 5 retries": 1 is one attempt (langchain-google-genai)
        once = 1 if type(model).__module__.startswith("langchain_google_genai") else 0
        copy = model.model_copy(update={"max_retries": once})
        for cached in ("_client_params", "_client", "_async_client"):  # built from max_retries once used
            copy.__dict__.pop(cached, None)
        return copy
    return model.model_copy()
