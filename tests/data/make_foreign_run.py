"""Record ``foreign_run.json``: the scenario's first turn, played by a model that is not the lab
model — a scripted chat model that fetches the five exports one call at a time, then answers.

It stands for "your own model": nothing in it is labkit's ``LabModel``, so a test that reads the
saved run checks that score, replay, knobs and diagnose work from the records and messages alone.
Regenerate it (and commit the file) with::

    PYTHONPATH=$PWD python tests/data/make_foreign_run.py
"""

from __future__ import annotations

from pathlib import Path

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from labkit import scenario

HERE = Path(__file__).resolve().parent
PATH = HERE / "foreign_run.json"
TICKERS = ("BRLM", "CRVD", "DRFT", "EMBR", "FERN")
EXPORT_SCALE = 0.02  # exports of a few dozen rows: the file stays small, the needle stays in


class ForeignModel(GenericFakeChatModel):
    """A scripted chat model that ignores the tools it is bound to (any model's run, not the lab's)."""

    def bind_tools(self, tools, **kwargs):
        return self


def replies() -> list[AIMessage]:
    """One fetch per company, then a short answer, each with the usage a provider reports."""
    calls = [AIMessage("", tool_calls=[{"name": "fetch_market_data", "args": {"ticker": t},
                                        "id": f"call_{t.lower()}", "type": "tool_call"}])
             for t in TICKERS]
    answer = AIMessage("I fetched this week's exports for all five competitors; the report comes next.")
    return [*calls, answer]


def record() -> scenario.Run:
    """The first turn of the scenario on the scripted model."""
    model = ForeignModel(messages=iter(replies()))
    return scenario.run(model, turns=scenario.TURNS[:1], export_scale=EXPORT_SCALE)


if __name__ == "__main__":
    run = record()
    assert run.error is None, run.error
    print(run.save(PATH), PATH.stat().st_size, "bytes,", len(run.records), "records")
