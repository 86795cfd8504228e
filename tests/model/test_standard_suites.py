"""LangChain's standard chat-model suites (``langchain-tests``), run on LabModel offline.

The feature switches below say what LabModel really does: text in and out, tool calling with
``tool_choice``, usage metadata, and structured output through a forced tool call (the fields
come back as schema placeholders such as ``"<setup>"`` — valid, visibly not understood). It takes
no images, audio, PDFs or JSON mode, so those tests skip with the suite's own messages.

Two suite tests (three runs) expect a model that reads intent from prose; LabModel does not, so
they are marked ``xfail(strict=True, raises=AssertionError)`` with the reason: if one ever passes,
the lab model has started pretending, and the run fails. A per-call ``model=`` only renames the
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

NO_PROSE = (
    "LabModel does not read intent from prose: outside the lab scenario it calls a tool only when "
    "tool_choice forces it or the user writes the call out as name(args), and it fills arguments "
    "from that literal call or with schema placeholders"
)


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
    @pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
        f"{NO_PROSE}; 'What is the weather in San Francisco?' names no tool, so LabModel answers "
        "with its introduction"))
    @pytest.mark.parametrize("model", [{}, {"output_version": "v1"}], indirect=True)
    def test_agent_loop(self, model) -> None:
        super().test_agent_loop(model)

    @pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
        f"{NO_PROSE}; the customer name is only in prose, so the forced call carries the "
        "placeholder '<customer_name>'"))
    def test_unicode_tool_call_integration(self, model) -> None:
        super().test_unicode_tool_call_integration(model)


def test_this_module_is_offline() -> None:
    """The suites above ran with outbound connections refused, so nothing came from a network."""
    with pytest.warns(UserWarning, match="tried to use socket"), \
            pytest.raises(SocketConnectBlockedError):
        socket.create_connection(("127.0.0.1", 9), timeout=1)
