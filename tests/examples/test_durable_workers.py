from __future__ import annotations

import pytest

from tests.examples import run_example

pytest.importorskip("dbos", reason="the durable example needs DBOS: pip install -e '.[dev,dbos]'")


def test_example_runs_two_submitted_runs_on_a_sqlite_backed_worker_and_replays_one() -> None:
    done = run_example("durable_workers.py")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "worker local serves examples.durable_workers:build"
    assert "slug-1: completed, approved" in lines and "slug-2: completed, approved" in lines
    assert "journal: slug-1 completed, 2 rounds" in lines and "journal: slug-2 completed, 2 rounds" in lines
    assert "replayed slug-1 offline: approved, same output: True" in lines
