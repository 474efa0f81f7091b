from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, subprocess_env

EXAMPLE = REPO / "examples" / "replay_and_resume.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=REPO, env=subprocess_env(), capture_output=True, text=True, timeout=120
    )


def test_example_records_resumes_replays_and_diverges_offline(tmp_path: Path) -> None:
    journal = tmp_path / "runs.jsonl"
    done = run(str(EXAMPLE), "--journal", str(journal))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "1. recorded 2 model calls, then stopped the run" in lines
    assert "2. resumed: 2 calls served from the journal, 2 made live" in lines
    assert any(
        line.startswith("3. replayed offline:") and "identical per session: True, model calls: 0" in line
        for line in lines
    )
    assert "4. a changed prompt diverges at session 'example__actor_0', step 0:" in lines
    assert "runs: example completed, 2 rounds, $0.0000" in lines

    # the journal it kept replays from the command line, which rebuilds build() from the journal
    listed = run("-m", "jeeves", "runs", str(journal))
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[1].split()[:3] == ["example", "completed", "2"]
    replayed = run("-m", "jeeves", "replay", str(journal), "example")
    assert replayed.returncode == 0, replayed.stderr
    assert "  critic_1  session.completed" in replayed.stdout
    assert "\nstop reason: approved (replayed offline)\nrecorded: 4 model calls · " in replayed.stdout
