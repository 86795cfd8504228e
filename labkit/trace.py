"""A recording middleware: per model call, what was stored and what the model actually saw.

Notebook 03 introduces it; every plot in the course is drawn from its records.

An agent keeps one history (``state["messages"]``) but each middleware may rewrite the *request*
on its way to the model: drop old turns behind a summary, shorten arguments, swap a big result
for a file path. :class:`Recorder`, placed innermost (last in the middleware list), measures the
request as it finally leaves for the model, and the stored history beside it. Placed first it
measures the request *before* the others have edited it — notebook 03 shows the difference:

* ``stored`` — BPE tokens of ``state["messages"]``;
* ``seen`` — BPE tokens of what the model received, split by kind: system prompt, tool schemas,
  human, AI, tool results, summary;
* cost at an illustrative price, and the model's reported usage when there is one.

``seen`` counts exactly what ``LabModel`` counts as its input (``LabModel.calls[i].input_tokens``):
each message — the system message too — at its BPE text plus 3 tokens of framing, and each tool
schema as the JSON of its ``function`` part. A call that fails (a context overflow, say) is
recorded with its ``error`` and costs nothing: providers do not bill a rejected request.

What it leaves out: provider-side accounting (cached-token discounts, hidden reasoning tokens).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest
from langchain_core.messages import AIMessage, BaseMessage

from labkit.tokens import PRICES, TokenCounter, cost

__all__ = ["KINDS", "CallRecord", "Recorder", "kind_of", "measure"]

KINDS = ("system", "tools", "human", "ai", "tool", "summary")


def kind_of(message: BaseMessage) -> str:
    """Which slice of the context a message belongs to."""
    if message.additional_kwargs.get("lc_source") == "summarization":
        return "summary"
    kinds = {"system": "system", "human": "human", "ai": "ai", "tool": "tool"}
    return kinds.get(message.type, "human")


@dataclass
class CallRecord:
    """One model call, measured. ``seen == sum(by_kind.values())``; ``stored`` counts
    ``state["messages"]`` (no system prompt, no tool schemas)."""

    index: int
    turn: int
    stored: int
    seen: int
    by_kind: dict[str, int]
    messages_stored: int
    messages_seen: int
    output_tokens: int = 0
    reported_input: int | None = None
    cost: float = 0.0
    error: str | None = None
    tool_calls: list[str] = field(default_factory=list)

    @property
    def saved(self) -> int:
        """Tokens kept out of this call by context management (stored - seen, tools aside)."""
        return self.stored - (self.seen - self.by_kind["system"] - self.by_kind["tools"])


def measure(messages: list[BaseMessage], system: BaseMessage | None = None,
            tools: list | None = None, counter: TokenCounter | None = None) -> dict[str, int]:
    """Tokens by kind for one request (pure; the Recorder calls it on every model call)."""
    counter = counter or TokenCounter()
    by = dict.fromkeys(KINDS, 0)
    if system is not None:
        by["system"] = counter.message(system)
    by["tools"] = sum(counter.tool(t) for t in tools or [])
    for m in messages:
        by[kind_of(m)] += counter.message(m)
    return by


class Recorder(AgentMiddleware):
    """Record every model call. Put it last in ``middleware=[...]`` so it sees the final request.

    ``price`` names a row of ``labkit.tokens.PRICES`` or gives ``(input, output)`` dollars per
    million tokens. ``name`` lets two recorders share one agent (``create_agent`` refuses two
    middleware with the same name).

    Example:
        >>> rec = Recorder()
        >>> # create_agent(model, tools, middleware=[..., rec]); agent.invoke(...)
        >>> # rec.records[-1].seen, rec.records[-1].by_kind
    """

    name = "labkit.Recorder"

    def __init__(self, price: str | tuple[float, float] = "lab-model", *,
                 name: str | None = None) -> None:
        super().__init__()
        if isinstance(price, str) and price not in PRICES:
            raise ValueError(f"unknown price {price!r}: choose one of {sorted(PRICES)}")
        if name is not None:  # create_agent refuses two middleware with the same name
            self.name = name
        self.price = price
        self.records: list[CallRecord] = []
        self.turns: list[str] = []
        self.counter = TokenCounter()

    def start_turn(self, text: str) -> None:
        """Mark the start of a user turn (``scenario.run`` calls this)."""
        self.turns.append(text)

    def _before(self, request: ModelRequest) -> CallRecord:
        stored_msgs = list(request.state.get("messages", []))
        by = measure(list(request.messages), request.system_message, list(request.tools or []),
                     self.counter)
        rec = CallRecord(
            index=len(self.records),
            turn=max(len(self.turns) - 1, 0),
            stored=self.counter.messages(stored_msgs),
            seen=sum(by.values()),
            by_kind=by,
            messages_stored=len(stored_msgs),
            messages_seen=len(request.messages),
        )
        self.records.append(rec)
        return rec

    @staticmethod
    def _after(rec: CallRecord, response: Any, price) -> None:
        result = getattr(response, "model_response", response)  # ExtendedModelResponse
        if isinstance(result, AIMessage):  # a wrap_model_call may return the message itself
            result = [result]
        messages = result if isinstance(result, list) else getattr(result, "result", None) or []
        ai = next((m for m in messages if isinstance(m, AIMessage)), None)
        if ai is not None:
            usage = ai.usage_metadata or {}
            rec.output_tokens = int(usage.get("output_tokens", 0))
            rec.reported_input = usage.get("input_tokens")
            rec.tool_calls = [tc["name"] for tc in ai.tool_calls]
        rec.cost = cost(rec.seen, rec.output_tokens, price)

    def wrap_model_call(self, request, handler):
        rec = self._before(request)
        try:
            response = handler(request)
        except Exception as e:
            rec.error = f"{type(e).__name__}: {e}"
            raise
        self._after(rec, response, self.price)
        return response

    async def awrap_model_call(self, request, handler):
        rec = self._before(request)
        try:
            response = await handler(request)
        except Exception as e:
            rec.error = f"{type(e).__name__}: {e}"
            raise
        self._after(rec, response, self.price)
        return response
