"""The process's pool of idle PostgreSQL connections (`jeeves.journal.pgbatch`): a forked
child never uses (or ends) the parent's, and a process closes its own when it exits."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from jeeves.journal import pgbatch
from tests.conftest import REPO, subprocess_env

pytestmark = [pytest.mark.postgres]


def test_a_forked_child_does_not_take_or_end_the_parents_pooled_connection(postgres_url: str) -> None:
    import psycopg

    conn = psycopg.connect(postgres_url, autocommit=True)
    assert pgbatch.put_idle(postgres_url, conn)
    pid = os.fork()
    if pid == 0:  # the child: exits without running the parent's test machinery
        code = 0 if pgbatch.take_idle(postgres_url) is None else 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child was handed the parent's connection"
    again = pgbatch.take_idle(postgres_url)
    assert again is conn
    assert conn.execute("SELECT 1").fetchone() == (1,)  # the child did not end its session
    conn.close()


_POOL_AT_EXIT = """
import atexit, sys
import psycopg
from jeeves.journal import pgbatch

conn = psycopg.connect(sys.argv[1], autocommit=True)
assert pgbatch.put_idle(sys.argv[1], conn)
atexit._run_exitfuncs()  # what the interpreter runs as it exits
print("closed" if conn.closed else "open")
"""


def test_a_process_closes_its_pooled_connections_when_it_exits(postgres_url: str) -> None:
    """Left to the interpreter's teardown, each would be freed open (a `ResourceWarning`, and
    no clean end of its server session)."""
    done = subprocess.run(
        [sys.executable, "-c", _POOL_AT_EXIT, postgres_url],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "closed"
