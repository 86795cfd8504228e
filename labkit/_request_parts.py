"""What a request sends beside its messages and tools, for the meter to count: a structured-output
schema, however the provider's class passes it.

Used by: labkit.meter (``Meter.blocks``). A schema bound per call arrives in the call's keyword
arguments; one set on the model (``model_kwargs``, ``extra_body``) is sent on every call too.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["EXTRAS", "schema_text", "with_model_kwargs"]

# request parts sent beside the tools (structured output): OpenAI's, Anthropic's, Google's
EXTRAS = ("response_format", "functions", "output_config", "response_json_schema", "response_schema")


def with_model_kwargs(model: Any, kwargs: dict) -> dict:
    """The call's keyword arguments over those the model sends on every call (``model_kwargs``,
    ``extra_body``): a ``response_format`` set there is sent too."""
    fixed = [getattr(model, name, None) for name in ("model_kwargs", "extra_body")]
    return {k: v for part in [*fixed, kwargs] if isinstance(part, dict) for k, v in part.items()}


def schema_text(value: Any) -> str:
    """A structured-output schema as JSON text (a pydantic class by its JSON schema)."""
    if hasattr(value, "model_json_schema"):
        value = value.model_json_schema()
    return json.dumps(value, ensure_ascii=False, default=str)
