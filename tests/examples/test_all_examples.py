"""Every script in examples/ runs offline by default (no API key, no network) and takes `--live`.

Per-example tests check what each prints; this one makes sure none is left out.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, subprocess_env

EXAMPLES = sorted((REPO / "examples").glob("*.py"))
ONE_SHOT = {"stream_to_browser.py": ["--once"]}
"""Examples that serve until interrupted by default, and the flag that makes them run once."""


def offline_env() -> dict[str, str]:
    return {k: v for k, v in subprocess_env().items() if not k.endswith("_API_KEY")}


def run(example: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(example), *args],
        cwd=REPO,
        env=offline_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_offline(example: Path, tmp_path: Path) -> None:
    args = ONE_SHOT.get(example.name, [])
    if "--journal" in run(example, "--help").stdout:
        args = [*args, "--journal", str(tmp_path / "journal.jsonl")]
    done = run(example, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip()
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_takes_live(example: Path) -> None:
    done = run(example, "--help")
    assert done.returncode == 0, done.stderr
    assert "--live" in done.stdout
