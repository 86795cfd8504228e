"""Exercises for notebook 13 · Skills and memory.

q1 asks for the backend that makes a memory file outlive its thread while the work files stay in
it: a function ``make_backend(store)``. The team keeps the memory at ``/team/AGENTS.md`` (not the
notebook's ``/memories/``), so the route must follow the path. The checker runs two threads with
a backend built by the learner's function for each — thread 1 writes the report and records a
preference, thread 2 is a new thread on another lab model; only the store is shared — and checks
behaviour: the seeded memory reached thread 1, the
recorded preference reached thread 2, and no report file went into the store.
"""

from __future__ import annotations

from deepagents.backends import CompositeBackend, StateBackend, StoreBackend

from labkit import LabModel, scenario
from labkit.exercises.core import Exercise
from labkit.model import prompt_sections

__all__ = ["MEMORY", "q1"]

MEMORY = "/team/AGENTS.md"
SOURCES_RULE = "Always end reports with a 'Sources' line."


def _memory_seen(model) -> str:
    return prompt_sections(model.calls[0].messages)["memory"] if model.calls else ""


def _stored_paths(store) -> list[str]:
    return [item.key for ns in store.list_namespaces() for item in store.search(ns, limit=1000)]


def _why_no_memory(backend) -> str:
    """Why the memory in the store never reached ``MEMORY`` through ``backend``: no route for its
    path, a route to a backend that is not the store, or the store under another namespace."""
    routes = getattr(backend, "routes", None) or {}
    prefix = next((p for p in sorted(routes, key=len, reverse=True) if MEMORY.startswith(p)), None)
    where = f"'/AGENTS.md' in namespace {scenario.MEMORY_NAMESPACE}"
    if prefix is None:
        said = (f"its routes {sorted(routes)} do not cover {MEMORY}" if routes else
                f"a {type(backend).__name__} with no routes keeps every file in the thread's state")
        return (f"{said}, so {MEMORY} was looked for in the thread, and the memory is in the store "
                f"({where}). Route the memory's folder to a StoreBackend.")
    target = routes[prefix]
    if not isinstance(target, StoreBackend):
        return (f"the route {prefix!r} goes to a {type(target).__name__}, not to the store: the memory "
                f"is in the store ({where}).")
    namespace = getattr(target, "_namespace", lambda rt: None)(None)
    return (f"the route {prefix!r} reaches the store, but reads namespace {namespace!r}; the memory is "
            f"{where}. (Inside the route, {MEMORY} becomes {MEMORY.removeprefix(prefix.rstrip('/'))!r}.)")


def _names() -> dict:
    """The names notebook 13 has imported by its exercise."""

    return {"CompositeBackend": CompositeBackend, "StateBackend": StateBackend,
            "StoreBackend": StoreBackend, "scenario": scenario}


def _check_q1(answer) -> str | None:
    if not callable(answer):
        return ("answer with a function that takes the store and returns a backend, such as "
                f"`def answer(store): return ...`, not {answer!r}")
    store = scenario.memory_store()
    runs = []
    for model, turns, thread in ((LabModel(), (scenario.REQUEST, scenario.PREFERENCE_TURN), "t1"),
                                 (LabModel(model="another-lab-model"), (scenario.REQUEST,), "t2")):
        try:  # a new session builds its agent anew: only the store is shared
            backend = answer(store)
        except Exception as e:  # the learner's code: say what went wrong, do not crash
            return f"answer(store) raised {type(e).__name__}: {e}"
        if not hasattr(backend, "download_files"):
            return f"answer(store) returned a {type(backend).__name__}, not a deepagents backend"
        run = scenario.run(model, harness="deep", turns=turns, memory=[MEMORY], backend=backend,
                           store=store, thread_id=thread)
        if run.error is not None:
            return f"thread {thread} failed: {type(run.error).__name__}: {run.error}"
        runs.append((model, run))
    (first, _), (second, _) = runs
    if "TL;DR" not in _memory_seen(first):
        return "thread 1 saw no memory: " + _why_no_memory(answer(store))
    if SOURCES_RULE not in _memory_seen(second):
        return ("thread 2 did not see the preference thread 1 recorded: the edit did not reach "
                "the store the checker passed to answer(store)")
    leaked = [p for p in _stored_paths(store) if "report" in p]
    if leaked:
        return (f"the memory survives, but so do work files: {leaked} went into the store. Route "
                "only the memory's folder; leave the rest in the thread's state")
    return None


q1 = Exercise(
    prompt=f"The team keeps the agent's memory at {MEMORY}. Write a function answer(store) that "
           "returns a deepagents backend under which that file outlives its thread (a new thread "
           "on another model sees an edit made in the first) while every other file — the report "
           "above all — stays in the thread's state. The memory is already in the store: "
           "scenario.memory_store() put it under the key '/AGENTS.md' in namespace "
           "scenario.MEMORY_NAMESPACE.",
    checker=_check_q1,
    hints=[
        "CompositeBackend(default=..., routes={prefix: backend}) sends every path that starts "
        "with prefix to that backend, with the prefix cut off: '/team/AGENTS.md' becomes "
        "'/AGENTS.md' inside it.",
        "Keep StateBackend() as the default, and route '/team/' to "
        "StoreBackend(namespace=lambda rt: scenario.MEMORY_NAMESPACE, store=store).",
    ],
    solution_text=(
        "def answer(store):\n"
        "    return CompositeBackend(default=StateBackend(), routes={'/team/': StoreBackend(\n"
        "        namespace=lambda rt: scenario.MEMORY_NAMESPACE, store=store)})"
    ),
    given=_names,
)
