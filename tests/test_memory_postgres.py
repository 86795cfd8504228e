"""Notebook 13's memory and threads on PostgreSQL, for a class or a team: the lesson's code with
``PostgresStore`` and ``PostgresSaver`` in place of ``SqliteStore`` and ``SqliteSaver``, on a real
server this test starts (initdb + pg_ctl in a temp folder, a Unix socket only, trust auth).

Thread ``week-48`` edits the memory and is checkpointed in the database; another process then reads
the edited memory and resumes the thread. Skipped, with the reason, where PostgreSQL's server
programs are missing (``make test`` under CI installs Debian's ``postgresql``, as it installs
chromium) or, as root, without the ``postgres`` user initdb must run as.
"""

from __future__ import annotations

import glob
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from labkit import LabModel, scenario

NO_SERVER = ("PostgreSQL's server programs (initdb, pg_ctl) are not installed: "
             "`sudo apt-get install postgresql` runs this test")


def _server_bin() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(versions[-1]).parent if versions else None


def _as_server_user() -> list[str]:
    """initdb and postgres refuse to run as root: as root, run them as the ``postgres`` user."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("running as root, and there is no `postgres` user for PostgreSQL's server to run as")
    return ["runuser", "-u", "postgres", "--"]


@pytest.fixture(scope="module")
def postgres_url():
    """A PostgreSQL server of its own, on a Unix socket in a temp folder; its connection string."""
    bin_dir = _server_bin()
    if bin_dir is None:
        pytest.skip(NO_SERVER)
    prefix = _as_server_user()
    home = Path(tempfile.mkdtemp(prefix="labkit-pg-"))
    home.chmod(0o777)  # the server's user writes here
    data, socket = home / "data", home
    try:
        subprocess.run([*prefix, str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres",
                        "--auth=trust", "-E", "UTF8"], check=True, capture_output=True, timeout=120)
        subprocess.run([*prefix, str(bin_dir / "pg_ctl"), "-D", str(data), "-w", "-t", "60",
                        "-l", str(home / "server.log"), "-o", f"-k {socket} -c listen_addresses='' -p 5433",
                        "start"], check=True, capture_output=True, timeout=120)
        yield f"postgresql://postgres@/postgres?host={socket}&port=5433"
    finally:
        subprocess.run([*prefix, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True, timeout=60)
        shutil.rmtree(home, ignore_errors=True)


def memory_backend(store):  # notebook 13's, word for word
    from deepagents.backends import CompositeBackend, StateBackend, StoreBackend

    return CompositeBackend(default=StateBackend(), routes={"/memories/": StoreBackend(
        namespace=lambda rt: scenario.MEMORY_NAMESPACE, store=store)})


ANOTHER_PROCESS = """
import json, sys
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.store.postgres import PostgresStore
from labkit import LabModel, scenario

with PostgresStore.from_conn_string(sys.argv[1]) as store, \\
        PostgresSaver.from_conn_string(sys.argv[1]) as saver:
    memory = store.get(scenario.MEMORY_NAMESPACE, "/AGENTS.md").value["content"]
    run = scenario.run(LabModel(), harness="deep", turns=(scenario.FEEDBACK,), thread_id="week-48",
                       checkpointer=saver)
    print(json.dumps({"memory": memory, "messages": len(run.state["messages"]), "error": run.error}))
"""


def test_notebook_13s_memory_and_threads_on_postgres_outlive_the_process(postgres_url):
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.store.postgres import PostgresStore

    rule = "Always end reports with a 'Sources' line."
    with PostgresStore.from_conn_string(postgres_url) as store, \
            PostgresSaver.from_conn_string(postgres_url) as saver:
        store.setup()
        saver.setup()
        scenario.memory_store(store)
        assert rule not in store.get(scenario.MEMORY_NAMESPACE, "/AGENTS.md").value["content"]
        t1 = scenario.run(LabModel(), harness="deep", turns=(scenario.REQUEST, scenario.PREFERENCE_TURN),
                          memory=[scenario.MEMORY_PATH], backend=memory_backend(store), store=store,
                          thread_id="week-48", checkpointer=saver)
        assert t1.error is None and t1.turns_completed == 2, t1.error
    other = subprocess.run([sys.executable, "-c", ANOTHER_PROCESS, postgres_url], capture_output=True,
                           text=True, timeout=300)
    assert other.returncode == 0, other.stderr[-3000:]
    seen = json.loads(other.stdout)
    assert rule in seen["memory"], "the edit thread 1 made is in the database another process reads"
    assert seen["error"] is None and seen["messages"] > len(t1.state["messages"]), \
        "the other process resumed week-48 from its checkpoints"
