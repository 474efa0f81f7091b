from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO, subprocess_env


def test_demo_runs_offline_and_prints_events() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "jeeves", "demo", "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=subprocess_env(),
    )
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    assert events[0]["type"] == "session.started"
    assert events[-1]["type"] == "session.completed"
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
