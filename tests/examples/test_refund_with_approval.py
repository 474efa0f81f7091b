from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, subprocess_env

EXAMPLE = REPO / "examples" / "refund_with_approval.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=REPO, env=subprocess_env(), capture_output=True, text=True, timeout=120
    )


def test_example_suspends_then_is_approved_and_resumed_from_other_processes(tmp_path: Path) -> None:
    journal = tmp_path / "refunds.db"
    done = run(str(EXAMPLE), "--journal", str(journal))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "1. status: awaiting_approval"
    assert lines[1].startswith("   pending: t-881#3 issue_refund({'order_id': '881', 'amount': 42.0})")
    assert lines[2].startswith("2. approved by alice: t-881#3  issue_refund(")
    assert re.search(r"  expires \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(in 23 h 59 min\)$", lines[2]), lines[2]
    assert lines[3] == "3. jeeves"  # the resumed run's tree, as `jeeves run` shows one
    tree = " ".join(done.stdout.split())  # the tree is wrapped to COLUMNS when it is set
    assert (
        "✓ gate t-881#3: issue_refund(order_id='881', amount=42.0) [destructive] · approved by alice" in tree
    )
    assert any(line.startswith("   Done. refunded 42.00 on order 881 (idempotency key jv-") for line in lines)
    assert "   stop reason: completed · 1 model call · 31 tokens · $0.0000" in lines

    listed = run("-m", "jeeves", "runs", str(journal), "--status", "completed")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[1].split()[:2] == ["t-881", "completed"]
    replayed = run("-m", "jeeves", "replay", str(journal), "t-881")
    assert replayed.returncode == 0, replayed.stderr
    assert "approval.decided" in replayed.stdout and "by=alice" in replayed.stdout


def test_cli_refuses_to_approve_a_run_with_no_pending_gate(tmp_path: Path) -> None:
    journal = tmp_path / "refunds.db"
    assert run(str(EXAMPLE), "start", "--journal", str(journal)).returncode == 0
    assert run("-m", "jeeves", "runs", str(journal), "--status", "awaiting_gate").stdout.count("t-881") == 1
    assert run("-m", "jeeves", "deny", str(journal), "t-881", "--by", "bob", "--note", "no").returncode == 0
    again = run("-m", "jeeves", "approve", str(journal), "t-881", "--by", "alice")
    assert again.returncode == 2
    assert "has no pending gate (decided already, or never reached)" in again.stderr
    resumed = run(
        "-m", "jeeves", "resume", str(journal), "t-881", "--approvals", "examples.refund_with_approval:POLICY"
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "Denied by bob (no): issue_refund was not run" in resumed.stdout
