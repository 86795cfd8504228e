"""The checker of notebook 13's exercise accepts the right backend and rejects wrong ones.

Each wrong answer is a mistake a learner could make: memory left in the thread's state, the
notebook's /memories/ route copied for a file under /team/, a route to the thread's state, the
wrong namespace, a store of its own instead of the one passed in, or everything made persistent
(the report leaks into the store) — and each gets its own reason, not one message for all.
"""

import pytest
from deepagents.backends import CompositeBackend, StateBackend, StoreBackend

from labkit import scenario
from labkit.exercises import nb13


def store_backend(store, namespace=scenario.MEMORY_NAMESPACE):
    return StoreBackend(namespace=lambda rt: namespace, store=store)


def right(store):
    return CompositeBackend(default=StateBackend(), routes={"/team/": store_backend(store)})


def test_q1_right_answer_passes():
    assert nb13.q1.check(right) == "Correct!"


@pytest.mark.parametrize("wrong, reason", [
    (right(scenario.memory_store()), "answer with a function"),
    (lambda store: 1 / 0, "raised ZeroDivisionError"),
    (lambda store: store, "not a deepagents backend"),
    (lambda store: StateBackend(), "thread 1 saw no memory: a StateBackend with no routes keeps every file"),
    (lambda store: CompositeBackend(default=StateBackend(), routes={"/memories/": store_backend(store)}),
     r"thread 1 saw no memory: its routes \['/memories/'\] do not cover /team/AGENTS.md"),
    (lambda store: CompositeBackend(default=StateBackend(), routes={"/team/": StateBackend()}),
     "the route '/team/' goes to a StateBackend, not to the store"),
    (lambda store: CompositeBackend(default=StateBackend(),
                                    routes={"/team/": store_backend(store, ("other",))}),
     r"reaches the store, but reads namespace \('other',\)"),
    (lambda store: CompositeBackend(default=store_backend(store, ("work",)),
                                    routes={"/team/": store_backend(store)}),
     "so do work files"),
])
def test_q1_wrong_answers_fail_with_a_reason(wrong, reason):
    with pytest.raises(AssertionError, match=f"Not yet: .*{reason}"):
        nb13.q1.require(wrong)


def test_a_store_of_its_own_passes_thread_1_but_not_thread_2():
    """The checker builds a backend per thread and shares only its store: a backend that makes
    its own store sees the seeded memory, but every thread starts from a fresh copy."""
    def own_store(store):
        return CompositeBackend(default=StateBackend(),
                                routes={"/team/": store_backend(scenario.memory_store())})

    with pytest.raises(AssertionError, match="Not yet: thread 2 did not see"):
        nb13.q1.require(own_store)
