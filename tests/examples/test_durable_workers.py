from __future__ import annotations

import pytest

from tests.examples import run_example

pytest.importorskip("dbos", reason="the durable example needs DBOS: pip install -e '.[dev,dbos]'")


def test_example_runs_two_submitted_runs_on_a_sqlite_backed_worker_follows_one_and_replays_one() -> None:
    done = run_example("durable_workers.py")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "worker local serves examples.durable_workers:build"
    assert "slug-1: completed, approved" in lines and "slug-2: completed, approved" in lines
    assert "journal: slug-1 completed, 2 rounds" in lines and "journal: slug-2 completed, 2 rounds" in lines
    assert "replayed slug-1 offline: approved, same output: True" in lines
    # Followed from `jeeves serve --database` in another process, dropped at the first
    # critique and re-attached with Last-Event-ID: exactly the rest, one gap-free sequence.
    assert "followed slug-1 from jeeves serve: 25 events up to the first critique" in lines
    assert "re-attached with Last-Event-ID 25: 29 more, then end: completed" in lines
    assert "one sequence, no gap, no duplicate: True" in lines
