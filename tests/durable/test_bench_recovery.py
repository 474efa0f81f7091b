"""bench/durable_recovery.py runs (tiny): a restart is recovered from, nothing written is lost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, subprocess_env
from tests.postgres import find_binaries

pytestmark = [pytest.mark.postgres]


def test_the_recovery_bench_measures_a_restart(tmp_path: Path) -> None:
    if find_binaries() is None:
        pytest.skip("PostgreSQL is not installed")
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "durable_recovery.py"), "--trials", "1", "--down", "0.5",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, env=subprocess_env(), cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])["summary"]["down 0.5 s"]
    assert all(0 <= summary[key]["max"] < 10 for key in ("step_s", "event_s", "lock_s"))
    assert "| down 0.5 s |" in (tmp_path / "DURABLE_RECOVERY.md").read_text()
