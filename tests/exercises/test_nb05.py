"""The checker of notebook 05's exercise accepts right answers and rejects wrong ones."""

import numpy as np
import pytest

from labkit import LabModel, scenario
from labkit.exercises import nb05
from labkit.offload import OffloadMiddleware


def test_the_last_request_is_the_briefings_turn_before_its_final_answer():
    """21 messages: the request, then five (search_news, write_file) pairs, each call with its
    result. The last two writes (EMBR.md at index 15, FERN.md at 19) need 21 - 15 = 6."""
    msgs = nb05._last_request()
    assert len(msgs) == 21 and msgs[0].content == scenario.BRIEFINGS
    assert [p.rsplit("/", 1)[-1] for p, _ in nb05._writes(msgs)] == \
        ["BRLM.md", "CRVD.md", "DRFT.md", "EMBR.md", "FERN.md"]
    assert nb05.smallest_keep() == 6


def test_the_answer_agrees_with_the_middleware_on_a_real_run():
    """What the checker computes with truncate_args is what OffloadMiddleware(args_keep=...)
    shows the model on the last call of a run."""
    for n, full in ((5, 1), (6, 2)):
        model = LabModel(window=7_000)
        scenario.run(model, middleware=[OffloadMiddleware(args_keep=("messages", n))],
                     turns=(scenario.BRIEFINGS,))
        seen = nb05._writes(model.calls[-1].messages)
        stored = nb05._writes(nb05._last_request())
        assert [a == b for a, b in zip(stored, seen)] == [False] * (5 - full) + [True] * full


@pytest.mark.parametrize("right", [6, ("messages", 6), 6.0, ("messages", 6.0), np.int64(6)])
def test_q1_right_answers_pass(right):
    assert nb05.q1.check(right) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    (5, "EMBR.md shortened"),
    (4, "EMBR.md shortened"),
    (2, "EMBR.md shortened"),
    (1, "FERN.md shortened"),
    (7, r"so does args_keep=\('messages', 6\): find the smallest"),
    (20, "find the smallest"),
    (22, "only 21 messages"),
    (0, "at least 1"),
    (6.5, "whole number"),
    (True, "whole number"),
    ("6", "whole number"),
    (("tokens", 6), "the knob itself"),
    (("messages", "6"), "whole number"),
])
def test_q1_wrong_answers_fail_with_a_reason(wrong, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb05.q1.require(wrong)
