"""LangChain's standard chat-model suites (``langchain-tests``), run on LabModel offline.

The feature switches below say what LabModel really does: text in and out, tool calling with
``tool_choice``, usage metadata, and structured output through a forced tool call (the fields
come back as schema placeholders such as ``"<setup>"`` — valid, visibly not understood). It takes
no images, audio, PDFs or JSON mode, so those tests skip with the suite's own messages.

The agent-loop and unicode tool-call tests send a prompt that names what the bound tool does
("What is the weather in San Francisco, CA?"); outside the lab scenario LabModel answers such a
prompt with one call to that tool, arguments copied from the prompt by word rules
(``labkit.model._prose``), then relays the result. A per-call ``model=`` only renames the
reply (there is one script), which is what the model-override tests check. The VCR benchmark
skips with the suite's own message: LabModel makes no HTTP calls to record.
"""

from __future__ import annotations

import socket

import pytest
from langchain_tests.integration_tests import ChatModelIntegrationTests
from langchain_tests.unit_tests import ChatModelUnitTests
from pytest_socket import SocketConnectBlockedError

from labkit.model import MODEL_NAME, LabModel

# pytest-socket (a langchain-tests dependency): every connect() in this module is refused.
pytestmark = pytest.mark.allow_hosts([])

@pytest.fixture
def vcr():
    """The suite's VCR benchmark asks for pytest-recording's ``vcr`` fixture before it checks
    ``enable_vcr_tests`` and skips ("VCR not set up."). pyproject disables that plugin, and
    LabModel makes no HTTP calls, so there is nothing to record: this stand-in only lets the
    suite reach its own skip."""
    return None


class _LabModelFeatures:
    @property
    def chat_model_class(self) -> type[LabModel]:
        return LabModel

    @property
    def chat_model_params(self) -> dict:
        return {"model": MODEL_NAME, "window": 128_000}

    @property
    def has_tool_calling(self) -> bool:
        return True

    @property
    def has_tool_choice(self) -> bool:
        return True

    @property
    def has_structured_output(self) -> bool:
        return True  # via a forced tool call; profile["structured_output"] (native) stays False

    @property
    def supports_json_mode(self) -> bool:
        return False

    @property
    def returns_usage_metadata(self) -> bool:
        return True

    @property
    def model_override_value(self) -> str:
        return "lab-model-renamed"  # a per-call model= renames the reply; the script is the same


class TestLabModelUnit(_LabModelFeatures, ChatModelUnitTests):
    pass


class TestLabModelIntegration(_LabModelFeatures, ChatModelIntegrationTests):
    pass


def test_this_module_is_offline() -> None:
    """The suites above ran with outbound connections refused, so nothing came from a network."""
    with pytest.warns(UserWarning, match="tried to use socket"), \
            pytest.raises(SocketConnectBlockedError):
        socket.create_connection(("127.0.0.1", 9), timeout=1)
