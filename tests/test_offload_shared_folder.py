"""Two runs offloading to one folder at the same moment — two requests of one server (threads), two
workers of a pre-fork server (processes) — whose models reuse a tool-call id: each stub points at
its own text. A slow disk (the name's check takes 50 ms) makes the race certain without the lock."""

from __future__ import annotations

import multiprocessing as mp
import threading
import time
from types import SimpleNamespace

import pytest
from deepagents.backends import FilesystemBackend
from langchain_core.messages import ToolMessage

from labkit.offload import OFFLOADED, OffloadMiddleware


class SlowDisk(FilesystemBackend):
    def download_files(self, paths):
        found = super().download_files(paths)
        time.sleep(0.05)
        return found


def _offload(root: str, who: str, start) -> str:
    """One run's tool result, offloaded under the id every run's model used: the stub's path."""
    off = OffloadMiddleware(backend=SlowDisk(root_dir=root, virtual_mode=True), tool_limit=100)
    start.wait(10)
    out = off.wrap_tool_call(SimpleNamespace(tool_call={"name": "fetch", "id": "call_0"}),
                             lambda r: ToolMessage(f"{who} export line\n" * 500, tool_call_id="call_0"))
    return out.additional_kwargs[OFFLOADED]


def _check(root, paths: dict[str, str]) -> None:
    assert len(set(paths.values())) == 2, f"two files: {paths}"
    for who, path in paths.items():
        assert (root / path.lstrip("/")).read_text().startswith(f"{who} export"), f"{who}'s stub -> {path}"


def test_two_threads_offloading_under_one_id_to_one_folder_keep_both(tmp_path):
    start, paths = threading.Barrier(2), {}

    def run(who):
        paths[who] = _offload(str(tmp_path), who, start)
    threads = [threading.Thread(target=run, args=(who,)) for who in ("alder", "birch")]
    [t.start() for t in threads]
    [t.join(30) for t in threads]
    _check(tmp_path, paths)


def _worker(root, who, start, queue):
    queue.put((who, _offload(root, who, start)))


def test_two_processes_offloading_under_one_id_to_one_folder_keep_both(tmp_path):
    ctx = mp.get_context("fork")
    start, queue = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(str(tmp_path), who, start, queue))
             for who in ("alder", "birch")]
    [p.start() for p in procs]
    paths = dict(queue.get(timeout=60) for _ in procs)
    [p.join(30) for p in procs]
    _check(tmp_path, paths)


@pytest.mark.parametrize("call_id", ["call_0", ""])
def test_two_parallel_calls_with_one_id_keep_both_results_in_state(call_id):
    """A model gives two parallel calls of one reply the same id (or none): on deepagents' state
    backend neither write is visible to the other within the step, yet each stub points at its own
    file."""
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool

    from tests.conftest import Scripted

    @tool
    def export(company: str) -> str:
        """Export a company's rows."""
        return "\n".join(f"{company} row {i}: {i * 37 % 1000}" for i in range(400))

    calls = [{"name": "export", "args": {"company": c}, "id": call_id, "type": "tool_call"}
             for c in ("Alder", "Birch")]
    model = Scripted(messages=iter([AIMessage("", tool_calls=calls), AIMessage("done")]))
    offload = OffloadMiddleware(tool_limit=500, window=128_000)
    agent = create_agent(model, tools=[export], middleware=[offload])
    state = agent.invoke({"messages": [HumanMessage("export both")]})
    stubs = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    paths = [m.additional_kwargs[OFFLOADED] for m in stubs]
    assert len(set(paths)) == 2 and set(paths) == set(state["files"])
    for stub, path in zip(stubs, paths):
        company = "Alder" if "Alder row 0" in stub.text else "Birch"
        content = state["files"][path]["content"]
        assert (content if isinstance(content, str) else "\n".join(content)).startswith(f"{company} row 0")


def test_a_child_forked_while_the_lock_is_held_does_not_keep_the_folder_locked(tmp_path):
    """A pre-fork server forks while a thread offloads: the parent's unlock frees the folder, though
    the child still holds a copy of the descriptor."""
    import fcntl
    import os

    from labkit._file_lock import locked

    backend = FilesystemBackend(root_dir=str(tmp_path), virtual_mode=True)
    with locked(backend, "/large_tool_results/call_0"):
        child = os.fork()
        if child == 0:
            time.sleep(3)
            os._exit(0)
    fd = os.open(tmp_path / "large_tool_results", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises BlockingIOError while the child holds it
    finally:
        os.close(fd)
        os.kill(child, 9)
        os.waitpid(child, 0)


def test_a_folder_that_cannot_be_flocked_still_offloads(tmp_path, monkeypatch):
    """On NFS a read-only folder cannot take flock's emulated lock: the write goes on under this
    process's lock alone instead of keeping every result in the context."""
    import fcntl

    def refuse(fd, op):
        if op & fcntl.LOCK_EX:
            raise OSError(9, "Bad file descriptor")
    monkeypatch.setattr(fcntl, "flock", refuse)
    disk = FilesystemBackend(root_dir=str(tmp_path), virtual_mode=True)
    call = SimpleNamespace(tool_call={"name": "fetch", "id": "call_0"})
    out = OffloadMiddleware(backend=disk, tool_limit=100).wrap_tool_call(
        call, lambda r: ToolMessage("row\n" * 500, tool_call_id="call_0"))
    assert (tmp_path / out.additional_kwargs[OFFLOADED].lstrip("/")).read_text().startswith("row")
