from __future__ import annotations

import pytest

from tests.examples import run_example

pytest.importorskip("dbos", reason="the durable example needs DBOS: pip install -e '.[dev,dbos]'")


def test_example_spreads_the_supervisors_workers_as_branches_and_replays_the_run() -> None:
    done = run_example("spread_fan_out.py")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "worker local serves examples.spread_fan_out:build, spreading"
    assert "ship-1: completed" in lines
    # Each delegation ran as its own workflow (a branch), and the run adopted both.
    assert "branch ship-1__coder_0: SUCCESS" in lines and "branch ship-1__tester_0: SUCCESS" in lines
    assert "def slugify(text):" in lines and "cases: 'Hello World' -> 'hello-world'; '' -> ''" in lines
    assert "replayed ship-1 offline, branches included: same output: True" in lines
