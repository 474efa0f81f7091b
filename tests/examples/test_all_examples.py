"""Every script in examples/ runs offline by default (no API key, no network) and takes `--live`.

Per-example tests check what each prints; this one makes sure none is left out.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.examples import run_example

EXAMPLES = sorted((REPO / "examples").glob("*.py"))
ONE_SHOT = {"stream_to_browser.py": ["--once"]}
"""Examples that serve until interrupted by default, and the flag that makes them run once."""


def run(example: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_example(example.name, *args)


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
