"""A pytest plugin (``-p tests.nbval_clean`` in pyproject): a notebook cell that writes to stderr fails.

nbval in lax mode fails a cell only when it raises. A learner who clicks Run All should see no
warning either (issue 11: "clean after Run All"), so after each notebook cell runs, its outputs
are read and any ``stderr`` stream — a ``UserWarning``, a deprecation, a stray log line — fails
the cell with the text it printed.
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield
    outputs = getattr(item, "test_outputs", None) or []
    stderr = [out.get("text", "") for out in outputs
              if out.get("output_type") == "stream" and out.get("name") == "stderr"]
    if stderr:
        raise AssertionError(f"cell {getattr(item, 'cell_num', '?')} wrote to stderr (a learner sees it "
                             f"after Run All):\n{''.join(stderr)[:2000]}")
    return result
