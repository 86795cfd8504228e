"""What the lessons' experiments share. Used by: labkit.experiments' modules."""

from __future__ import annotations

from labkit import scenario

__all__ = ["FIRST_TURN", "fetched"]

FIRST_TURN = scenario.TURNS[:1]


def fetched(run: scenario.Run) -> str:
    """An observation: how many exports the model fetched, in how many calls."""
    n = len(run.tool_calls("fetch_market_data"))
    return f"it fetched {n} of 5 exports in {len(run.records)} model calls"
