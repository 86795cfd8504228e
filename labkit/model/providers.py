"""Choosing the model the notebooks run on: the lab model, or a real one named in ``LABKIT_MODEL``.

Notebook 01 introduces :func:`get_model` and :func:`describe`; every notebook's "on your model"
section uses them. The lab model is the default, so every notebook runs offline;
``LABKIT_MODEL=provider:model`` swaps in any provider ``init_chat_model`` knows whose package is
installed (OpenAI, Anthropic, Google, Ollama …, or an OpenAI-compatible endpoint via
``LABKIT_BASE_URL``), and ``LABKIT_WINDOW`` says the window to assume when the model has no profile.

What it leaves out: installing the provider packages and keys — it says which one is missing.
"""

from __future__ import annotations

import os
from typing import Any

from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel

from labkit.errors import KEY_VARIABLES
from labkit.model.chat import MODEL_NAME, LabModel
from labkit.versions import in_checkout

__all__ = ["describe", "get_model"]

# The providers whose package and key labkit names in its errors; init_chat_model knows more.
_PROVIDERS = {
    "anthropic": ("langchain_anthropic", "langchain-anthropic", KEY_VARIABLES["anthropic"]),
    "google_genai": ("langchain_google_genai", "langchain-google-genai", KEY_VARIABLES["google_genai"]),
    "ollama": ("langchain_ollama", "langchain-ollama", None),
    "openai": ("langchain_openai", "langchain-openai", KEY_VARIABLES["openai"]),
}
_FALLBACK = "no window: deepagents' 170,000-token fallback applies"


def _window() -> int | None:
    """``LABKIT_WINDOW`` as a positive int (``32000`` or ``32_000``), or ``None`` when unset."""
    raw = os.environ.get("LABKIT_WINDOW", "").strip()
    if not raw:
        return None
    try:
        window = int(raw.replace("_", "").replace(",", ""))
    except ValueError:
        window = 0
    if window <= 0:
        raise ValueError(f"LABKIT_WINDOW must be a positive number of tokens (e.g. 64000), got {raw!r}")
    return window


def _has_key(provider: str, key: str | None, kwargs: dict) -> bool:
    if key is None or "api_key" in kwargs or os.environ.get(key):
        return True
    return provider == "google_genai" and bool(os.environ.get("GEMINI_API_KEY"))  # its fallback name


def get_model(spec: str | None = None, **kwargs: Any) -> BaseChatModel:
    """The model the notebooks use: the lab model unless ``LABKIT_MODEL`` names a real one.

    ``LABKIT_MODEL=provider:model`` with any provider LangChain's ``init_chat_model`` supports
    whose package is installed (``openai``, ``anthropic``, ``google_genai``, ``ollama`` …). For an
    OpenAI-compatible endpoint such as DeepSeek's, use ``openai:deepseek-chat``, set
    ``LABKIT_BASE_URL=https://api.deepseek.com`` (and ``OPENAI_API_KEY`` to that service's key);
    with a base URL, ``stream_usage=True`` is turned on so streamed replies report their tokens.

    ``LABKIT_WINDOW=<tokens>`` sets the real model's ``profile["max_input_tokens"]``, the window
    deepagents and labkit's middleware budget with. Without it a model with no profile — every
    OpenAI-compatible endpoint — gets deepagents' fallback: a 170,000-token trigger that keeps 6
    messages (notebook 07), whatever its real window. The lab model's window is its ``window=``.

    An Ollama model is built without contacting the server: if it is not running, the first call
    fails with ``httpx.ConnectError: [Errno 111] Connection refused``, which does not say Ollama;
    ``labkit.errors.explain`` (what every "On your model" section prints) adds "start the Ollama
    server with `ollama serve`".

    Keyword arguments go to ``LabModel`` or to ``init_chat_model``. Notebook 01.
    """
    spec = (spec if spec is not None else os.environ.get("LABKIT_MODEL", "")).strip()
    if spec in ("", "lab", "labkit", MODEL_NAME):
        return LabModel(**kwargs)
    provider, sep, name = spec.partition(":")
    if not (provider and sep and name):
        raise ValueError(f"LABKIT_MODEL must look like provider:model (e.g. openai:gpt-4.1-mini), "
                         f"got {spec!r}")
    window = _window()
    module, package, key = _PROVIDERS.get(provider, (None, None, None))
    if module is not None:
        try:
            __import__(module)
        except ImportError as e:
            how = ("run `make setup` (it installs the providers extra), or "
                   f"`.tools/bin/uv pip install --python .venv {package}`" if in_checkout() else
                   f"run `pip install {package}` (or `pip install 'labkit-context[providers]'`)")
            raise ImportError(f"LABKIT_MODEL={spec!r} needs the {package} package, which is not "
                              f"installed: {how}") from e
    if os.environ.get("LABKIT_BASE_URL"):
        kwargs.setdefault("base_url", os.environ["LABKIT_BASE_URL"])
        if provider == "openai":
            kwargs.setdefault("stream_usage", True)
    if not _has_key(provider, key, kwargs):
        raise RuntimeError(f"LABKIT_MODEL={spec!r} needs an API key in the {key} environment "
                           "variable; set it (never in a notebook cell) and restart the kernel")
    try:
        model = init_chat_model(name, model_provider=provider, **kwargs)
    except ValueError as e:
        if "Unsupported" not in str(e):
            raise
        known = " ".join(str(e).split())  # init_chat_model's message lists them over several lines
        raise ValueError(f"unknown provider {provider!r} in LABKIT_MODEL={spec!r} ({known}); "
                         "or unset LABKIT_MODEL for the offline lab model") from e
    if window is not None:
        model.profile = {**(model.profile or {}), "max_input_tokens": window}
    return model


def describe(model: Any) -> str:
    """One line saying which model is active and the window it assumes, for a notebook's first cell.

    Example:
        >>> describe(LabModel(window=128_000))
        'the lab model (offline, scripted), window 128,000'

    A real model reads ``openai:gpt-4.1-mini at http://…/v1, window 32,000 (LABKIT_WINDOW)``, or
    ends "no window: deepagents' 170,000-token fallback applies" when it has no profile. Notebook 01.
    """
    profile = getattr(model, "profile", None)
    window = profile.get("max_input_tokens") if isinstance(profile, dict) else None
    if isinstance(model, LabModel):
        return "the lab model (offline, scripted), " + (f"window {window:,}" if window else _FALLBACK)
    try:
        params = model._get_ls_params()  # langchain's tracing metadata: provider and model name
    except Exception:  # a hand-made model without it
        params = {}
    provider = params.get("ls_provider") or type(model).__name__
    name = params.get("ls_model_name") or getattr(model, "model_name", None) or getattr(model, "model", "?")
    url = getattr(model, "openai_api_base", None) or getattr(model, "base_url", None)
    where = f"{provider}:{name}" + (f" at {url}" if url else "")
    if not window:
        return f"{where}, {_FALLBACK}"
    source = "LABKIT_WINDOW" if _env_window_matches(window) else "its profile"
    return f"{where}, window {window:,} ({source})"


def _env_window_matches(window: int) -> bool:
    try:
        return _window() == window
    except ValueError:
        return False
