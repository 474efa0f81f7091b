"""`jeeves submit` fails fast and says why: a target no worker serves is refused in one line
(not queued to wait forever), and a target whose build fails on the worker ends the run with
the cause, typed, in `submit --wait`, `jeeves runs` and the run's record. On a SQLite DBOS
database (one machine), so no server is needed."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, jeeves_cli, offline_env


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path


def test_a_target_no_worker_serves_is_refused_in_one_line(folder: Path) -> None:
    database = f"sqlite:///{folder}/dbos.sqlite"  # a new database: DBOS's tables are not there yet
    started = time.monotonic()
    done = jeeves_cli(
        "submit", "no_such_module:arch", "x", "--wait", "--worker-timeout", "1", "--database", database
    )
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "no worker" in line and "'no_such_module:arch'" in line and "not importable" in line
    assert "jeeves worker no_such_module:arch" in line
    assert time.monotonic() - started < 30


@pytest.fixture
def worker(folder: Path) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "jeeves", "worker", "tests.durable.archs:breaks_after_loading",
         "--database", f"sqlite:///{folder}/dbos.sqlite", "--journal", str(folder / "runs.db"), "--poll", "0.1"],
        cwd=REPO, env=offline_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    for line in process.stdout:
        if re.match(r"jeeves worker \S+ ready", line):
            break
    else:
        raise AssertionError("the worker exited before it was ready")
    try:
        yield process
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stdout.close()


def test_a_target_whose_build_fails_on_the_worker_ends_the_run_with_the_cause(
    folder: Path, worker: subprocess.Popen[str]
) -> None:
    database = f"sqlite:///{folder}/dbos.sqlite"
    done = jeeves_cli(
        "submit", "tests.durable.archs:breaks_after_loading", "Write add", "--session-id", "b-1",
        "--database", database, "--wait",
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    cause = "RuntimeError: the model registry at registry.internal is unreachable"
    assert cause in done.stderr and "TaskGroup" not in done.stderr
    runs = jeeves_cli("runs", str(folder / "runs.db"))
    assert runs.returncode == 0 and re.search(r"b-1\s+failed", runs.stdout), runs.stdout + runs.stderr
    listed = jeeves_cli("runs", str(folder / "runs.db"), "--json")
    assert "the model registry at registry.internal is unreachable" in listed.stdout
    assert worker.poll() is None  # the worker serves on


def test_a_worker_on_a_database_it_cannot_reach_says_so_in_one_line() -> None:
    done = jeeves_cli(
        "worker", "tests.durable.archs:actor_critic", "--database", "postgresql://nobody:s3cret@127.0.0.1:1/x"
    )
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "Cannot reach the database postgresql://nobody:***@127.0.0.1:1/x" in line and "s3cret" not in line


def test_a_worker_given_a_url_libpq_cannot_read_says_so_in_one_line_without_its_password() -> None:
    for command in ("worker", "submit"):
        args = [command, "tests.durable.archs:actor_critic", *(["Write add"] if command == "submit" else [])]
        done = jeeves_cli(*args, "--database", "postgresql://nobody:s3cret-pw@[::1:5432/x")
        assert done.returncode == 2, done.stderr
        [line] = done.stderr.strip().splitlines()
        assert "postgresql://nobody:***@[::1:5432/x is not a PostgreSQL URL libpq can read" in line
        assert "s3cret" not in line
