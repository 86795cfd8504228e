"""labkit.widgets.knobs: the summarization panel follows the policy as ``labkit.replay`` computes
it — knobs set through the panel's API (``panel.set`` or a control's value, as the browser does),
results read from the returned dict and the figure's data, never from a rendered picture."""

from __future__ import annotations

import pytest

from labkit import widgets
from labkit.replay import replay

DEFAULTS = {"window": 128_000, "trigger": 0.85, "keep": 0.10, "keep_messages": 0,
            "keep_figures": False, "archive": True, "profile": True}


@pytest.fixture(scope="module")
def panel(recorded):
    return widgets.knobs(recorded)


def _set(panel, **values):
    """Every knob given, so tests do not depend on the order they run in."""
    return panel.set(**(DEFAULTS | values))


def _trace(fig, name):
    [trace] = [t for t in fig.data if t.name == name]
    return trace


def test_the_panel_shows_what_replay_computes(panel, traj):
    result = _set(panel)
    direct = replay(traj, window=128_000, trigger=("fraction", 0.85), keep=("fraction", 0.10))
    rep = result["replay"]
    assert rep.seen == direct.seen and rep.events == direct.events and rep.cost == direct.cost
    assert list(_trace(result["figure"], "seen by the model").y) == list(rep.seen)
    assert [s.y0 for s in result["figure"].layout.shapes] == [128_000, 108_800]  # window, trigger
    assert list(_trace(result["figure"], "compaction").x) == [i for i, _ in rep.event_marks()]
    assert result["totals"].column("needle") == ["archive"] and "archive" in result["status"]
    assert result["events"].column("cut") == [e.cut for e in rep.events]
    assert panel.status.value == result["status"]


def test_a_smaller_window_compacts_more_and_sends_less(panel):
    big, small = _set(panel, window=128_000), _set(panel, window=60_000)
    assert len(small["replay"].events) > len(big["replay"].events) >= 1
    assert small["replay"].tokens_sent < big["replay"].tokens_sent
    assert [e.cut for e in small["replay"].events] == [9, 13, 17, 19]
    assert max(small["replay"].seen) < 60_000 and small["replay"].overflow is None


def test_a_lower_trigger_fires_earlier(panel):
    high, low = _set(panel, trigger=0.85), _set(panel, trigger=0.4)
    assert low["replay"].event_calls[0] < high["replay"].event_calls[0]
    line = [s.y0 for s in low["figure"].layout.shapes][1]
    assert line == int(128_000 * 0.4)
    first = low["replay"].event_calls[0]
    assert low["replay"].records[first - 1].seen < line  # the call before it was under the trigger


def test_keep_in_messages_replaces_the_fraction(panel):
    result = _set(panel, trigger=0.5, keep_messages=8)
    assert result["replay"].knobs["keep"] == ("messages", 8)
    assert panel.controls["keep"].disabled and not panel.controls["keep_messages"].disabled
    fewer = _set(panel, trigger=0.5, keep_messages=2)
    assert len(fewer["replay"].events) < len(result["replay"].events)
    _set(panel)
    assert not panel.controls["keep"].disabled


def test_the_needle_outcome_follows_figures_and_archive(panel):
    assert _set(panel)["replay"].needle == "archive"
    kept = _set(panel, keep_figures=True)
    assert kept["replay"].needle == "visible" and "visible" in kept["status"]
    lost = _set(panel, archive=False)
    assert lost["replay"].needle == "lost" and "no archive" in lost["status"]
    dead = _set(panel, window=40_000)
    assert dead["replay"].needle == "overflow" and "the run dies" in dead["status"]
    assert len(_trace(dead["figure"], "call failed").x) >= 1


def test_no_profile_uses_the_fallback_and_the_overflow_rescue(panel):
    result = _set(panel, profile=False)
    rep = result["replay"]
    assert rep.knobs["trigger"] == ("tokens", 170_000) and rep.knobs["keep"] == ("messages", 6)
    assert [e.reason for e in rep.events] == ["overflow"] and rep.died_at is None
    assert result["totals"].column("first overflow") == [f"call {rep.overflow}"]
    assert panel.controls["trigger"].disabled and panel.controls["keep"].disabled
    _set(panel)
    assert not panel.controls["trigger"].disabled


def test_an_invalid_setting_is_shown_not_raised(panel):
    result = _set(panel, trigger=0.3, keep=0.4)
    assert result["replay"] is None and "must keep less than trigger" in result["error"]
    assert "not a valid setting" in result["status"] and not result["figure"].data
    assert _set(panel)["replay"] is not None  # the panel carries on


def test_moving_a_slider_is_what_set_does(panel):
    expected = _set(panel, window=60_000)
    _set(panel)
    panel.controls["window"].value = 60_000  # what the browser does
    assert panel.result is expected
    _set(panel)


@pytest.mark.parametrize("bad, says", [
    ({"trigger": 1.5}, "trigger must be a number from 0.1 to 1"),
    ({"keep": 0}, "keep must be a number from 0.01 to 0.5"),
    ({"keep_messages": 2.5}, "keep_messages must be a whole number"),
    ({"window": 300_000}, "window must be a whole number from 16,000 to 200,000"),
    ({"archive": "no"}, "archive must be True or False"),
])
def test_bad_values_name_the_knob_and_change_nothing(panel, bad, says):
    before = _set(panel)
    with pytest.raises(ValueError, match=says):
        panel.set(**({"window": 60_000} | bad))
    assert panel.values == DEFAULTS and panel.result is before


def test_knobs_starts_from_its_arguments_and_prints_nothing(traj, capsys):
    made = widgets.knobs(traj, window=60_000, trigger=0.5, keep_messages=4)
    assert made.values == DEFAULTS | {"window": 60_000, "trigger": 0.5, "keep_messages": 4}
    assert made.result["replay"].knobs["keep"] == ("messages", 4)
    assert capsys.readouterr() == ("", "")
    with pytest.raises(ValueError, match="trigger must be"):
        widgets.knobs(traj, trigger=0.05)
