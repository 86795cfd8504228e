"""The checker of notebook 03's exercise runs the learner's middleware on the scenario's first
turn with a 60,000-token lab model: middleware that trim exports in the request only pass, and
each wrong one fails saying what happened to the request, the state or the lab model's steps."""

import pytest
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage

from labkit.exercises import nb03


def _is_export(m):
    return isinstance(m, ToolMessage) and m.name == "fetch_market_data"


def _stub(m, lines=1):
    return m.model_copy(update={"content": "\n".join(m.content.splitlines()[:lines]) + "\n[trimmed]"})


class TrimAll(AgentMiddleware):  # the solution's way: every export down to its first line
    def wrap_model_call(self, request, handler):
        new = [_stub(m) if _is_export(m) else m for m in request.messages]
        return handler(request.override(messages=new))


class KeepLatest(AgentMiddleware):  # also right: every export but the latest, to its first 3 lines
    def wrap_model_call(self, request, handler):
        last = max((i for i, m in enumerate(request.messages) if _is_export(m)), default=-1)
        new = [_stub(m, 3) if _is_export(m) and i != last else m for i, m in enumerate(request.messages)]
        return handler(request.override(messages=new))


class PassThrough(AgentMiddleware):  # wrong: trims nothing
    def wrap_model_call(self, request, handler):
        return handler(request)


class InPlace(AgentMiddleware):  # wrong: edits the message objects the state holds
    def wrap_model_call(self, request, handler):
        for m in request.messages:
            if _is_export(m):
                m.content = m.content.splitlines()[0] + "\n[trimmed]"
        return handler(request)


class InState(AgentMiddleware):  # wrong: before_model replaces the exports in the state
    def before_model(self, state, runtime):
        new = [_stub(m) for m in state["messages"] if _is_export(m) and not m.content.endswith("[trimmed]")]
        return {"messages": new} if new else None


class NoHeader(AgentMiddleware):  # wrong: the stub drops the line the lab model takes as evidence
    def wrap_model_call(self, request, handler):
        new = [m.model_copy(update={"content": "[trimmed]"}) if _is_export(m) else m
               for m in request.messages]
        return handler(request.override(messages=new))


class Raises(AgentMiddleware):
    def wrap_model_call(self, request, handler):
        raise ValueError("no handler called")


class NeedsArgs(TrimAll):
    def __init__(self, lines):
        super().__init__()


@pytest.mark.parametrize("right", [TrimAll, KeepLatest])
def test_middleware_that_trim_the_request_only_pass(right):
    assert nb03.q1.check(right) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    (PassThrough, "call 5 sent the model 85,441 tokens, over its 60,000-token window"),
    (InPlace, "no longer holds 5 export.* whole .* you changed the messages in place"),
    (InState, "no longer holds 5 export.* whole .* your before_model changed the state"),
    (NoHeader, r"did steps again \(fetch_market_data:BRLM\).* keep each export's first line"),
    (Raises, "ended with ValueError: no handler called"),
    (NeedsArgs, "should need no arguments"),
    (TrimAll(), "the class itself"),
])
def test_wrong_middleware_fail_saying_what_happened(wrong, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb03.q1.require(wrong)


def test_an_in_place_edit_is_blamed_even_beside_a_harmless_node_hook():
    """A before_model that changes nothing is not the cause: the checker flips it off to see."""
    from langchain.agents.middleware import AgentMiddleware

    class Mixed(AgentMiddleware):
        def before_model(self, state, runtime):
            return None

        def wrap_model_call(self, request, handler):
            for m in request.messages:
                if m.type == "tool" and len(m.content) > 1_000:
                    m.content = m.content[:1_000]
            return handler(request)

    with pytest.raises(AssertionError, match="Not yet: .*you changed the messages in place"):
        nb03.q1.require(Mixed)
