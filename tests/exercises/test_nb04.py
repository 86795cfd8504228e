"""The checker of notebook 04's exercise runs the learner's OffloadMiddleware on the new data mix
(exports at half size, a 16,000-token window): several configurations pass, and each kind of
wrong one fails with the reason the run shows — the result kept whole, the preview that shows
too much or too little, the path the model never saw."""

from __future__ import annotations

import re

import pytest
from deepagents.middleware.filesystem import FilesystemMiddleware
from langchain.agents.middleware import AgentMiddleware

from labkit import offload, scenario
from labkit.exercises import nb04
from labkit.offload import EXEMPT_TOOLS, OffloadMiddleware
from labkit.tokens import count_tokens


class PathlessStubs(AgentMiddleware):
    """Notebook 04's flip: every tool message the model is sent has the offloaded path blanked out."""

    def wrap_model_call(self, request, handler):
        messages = [m.model_copy(update={"content": re.sub(offload.RESULTS_DIR + r"/\S+", "[path not shown]",
                                                           m.content)}) if m.type == "tool" else m
                    for m in request.messages]
        return handler(request.override(messages=messages))


def test_the_mix_has_exports_under_the_default_limit_and_digests_under_every_export():
    sizes = {name: count_tokens(text) for name, text in nb04.mix().items()}
    exports = [n for k, n in sizes.items() if k.endswith("export")]
    news = [n for k, n in sizes.items() if k.endswith("news")]
    assert sum(n <= 20_000 for n in exports) >= 2, "at half size, some exports slip under the default limit"
    assert max(news) < 2_000 < min(exports), "the solution's limit sits between the digests and the exports"
    assert all(nb04.latest_headline(c)[1] > 3 for c in scenario.companies()), "the headline is below line 3"


@pytest.mark.parametrize("right", [
    OffloadMiddleware(tool_limit=2_000),                              # exports out, digests whole
    OffloadMiddleware(tool_limit=4_000, head_lines=1, tail_lines=0),  # the same, a one-line preview
    OffloadMiddleware(tool_limit=300),                                # digests out, headline previewed
    [OffloadMiddleware(tool_limit=300, head_lines=4, tail_lines=0)],  # a list; the preview just reaches it
], ids=["2000", "4000-h1", "300", "300-h4-list"])
def test_q1_several_configurations_pass(right):
    assert nb04.q1.check(right) == "Correct!"


@pytest.mark.parametrize("wrong, says", [
    (OffloadMiddleware(), r"refused by the 16,000-token window.*BRLM export.*at or under tool_limit=20,000"),
    (OffloadMiddleware(tool_limit=None), "tool_limit=None evicts no result"),
    (OffloadMiddleware(tool_limit=2_000, exempt_tools=[*EXEMPT_TOOLS, "fetch_market_data"]),
     "fetch_market_data is in exempt_tools"),
    (OffloadMiddleware(tool_limit=2_000, head_lines=200, tail_lines=200),
     "preview of head_lines=200.*too much"),
    (OffloadMiddleware(tool_limit=300, head_lines=3), r"misses the latest headline.*stops before line 4"),
    (OffloadMiddleware(tool_limit=2_000, head_lines=0), r"fetched the same thing again.*head_lines=0"),
    ([OffloadMiddleware(tool_limit=2_000), PathlessStubs()], "needle .* was not answered.*0 read-back calls"),
    (FilesystemMiddleware(), "already has deepagents' FilesystemMiddleware"),
    ([PathlessStubs()], "nothing in your answer offloads"),
    (2_000, "answer with a configured middleware"),
    ("OffloadMiddleware(tool_limit=2000)", "answer with a configured middleware"),
], ids=["default", "none", "exempt", "big-preview", "short-preview", "no-title", "pathless", "deepagents",
        "no-offload", "number", "string"])
def test_q1_wrong_configurations_fail_with_the_reason(wrong, says):
    with pytest.raises(AssertionError, match=f"Not yet: .*{says}"):
        nb04.q1.require(wrong)
