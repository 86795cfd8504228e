"""Choosing the model the notebooks run on: the lab model, or a real one named in ``LABKIT_MODEL``.

Notebook 01 introduces :func:`get_model`; every notebook's "on your model" section uses it. The
lab model is the default, so every notebook runs offline; ``LABKIT_MODEL=provider:model`` swaps
in OpenAI, Anthropic or Ollama (or an OpenAI-compatible endpoint via ``LABKIT_BASE_URL``).

What it leaves out: installing the provider packages and keys — it says which one is missing.
"""

from __future__ import annotations

import os
from typing import Any

from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel

from labkit.model.chat import MODEL_NAME, LabModel

__all__ = ["get_model"]

_PROVIDERS = {
    "openai": ("langchain_openai", "langchain-openai", "OPENAI_API_KEY"),
    "anthropic": ("langchain_anthropic", "langchain-anthropic", "ANTHROPIC_API_KEY"),
    "ollama": ("langchain_ollama", "langchain-ollama", None),
}


def get_model(spec: str | None = None, **kwargs: Any) -> BaseChatModel:
    """The model the notebooks use: the lab model unless ``LABKIT_MODEL`` names a real one.

    ``LABKIT_MODEL=provider:model`` with provider ``openai``, ``anthropic`` or ``ollama``. For an
    OpenAI-compatible endpoint such as DeepSeek's, use ``openai:deepseek-chat`` and set
    ``LABKIT_BASE_URL=https://api.deepseek.com`` (and ``OPENAI_API_KEY`` to that service's key).
    Keyword arguments go to ``LabModel`` or to ``init_chat_model``. Notebook 01.
    """
    spec = (spec if spec is not None else os.environ.get("LABKIT_MODEL", "")).strip()
    if spec in ("", "lab", "labkit", MODEL_NAME):
        return LabModel(**kwargs)
    provider, sep, name = spec.partition(":")
    if not (provider and sep and name):
        raise ValueError(f"LABKIT_MODEL must look like provider:model (e.g. openai:gpt-4.1-mini), "
                         f"got {spec!r}")
    if provider not in _PROVIDERS:
        raise ValueError(f"unknown provider {provider!r} in LABKIT_MODEL={spec!r}; labkit supports "
                         f"{', '.join(sorted(_PROVIDERS))} (or unset it for the offline lab model)")
    module, package, key = _PROVIDERS[provider]
    try:
        __import__(module)
    except ImportError as e:
        raise ImportError(f"LABKIT_MODEL={spec!r} needs the {package} package, which is not "
                          "installed: run `make setup` (it installs the providers extra), or "
                          f"`.tools/bin/uv pip install --python .venv {package}`") from e
    if os.environ.get("LABKIT_BASE_URL"):
        kwargs.setdefault("base_url", os.environ["LABKIT_BASE_URL"])
    if key and not os.environ.get(key) and "api_key" not in kwargs:
        raise RuntimeError(f"LABKIT_MODEL={spec!r} needs an API key in the {key} environment "
                           "variable; set it (never in a notebook cell) and restart the kernel")
    return init_chat_model(f"{provider}:{name}", **kwargs)
