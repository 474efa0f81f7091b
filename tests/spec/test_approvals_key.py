"""The `[approvals]` spec key: parsed into the run's policy, used by `jeeves run`."""

from __future__ import annotations

from pathlib import Path

import pytest

from jeeves.approvals import Allow, Approvals
from jeeves.errors import UserError
from jeeves.spec import load_spec, parse_spec
from tests.conftest import REPO, jeeves_cli

SPEC = REPO / "architectures" / "refund_desk.toml"


def test_the_approvals_table_is_the_runs_policy() -> None:
    spec = load_spec(SPEC)
    assert spec.approvals == Approvals(
        auto=("read_only", "local_write"),
        gate_ttl_s=86400,
        rules=(Allow("send_email", where={"to": "*@ourco.com"}),),
    )


def test_a_bad_mode_names_the_key() -> None:
    with pytest.raises(UserError, match=r"approvals.*'dangerous'"):
        parse_spec({"type": "agent", "instructions": "x", "approvals": {"auto": ["dangerous"]}})


def test_jeeves_run_of_the_spec_suspends_at_the_refund(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    done = jeeves_cli("run", str(SPEC), "--offline", "--journal", str(journal), "--session-id", "t-881")
    assert done.returncode == 0, done.stderr
    assert "stop reason: awaiting_approval" in done.stdout
    listed = jeeves_cli("runs", str(journal), "--status", "awaiting_gate")
    assert listed.stdout.splitlines()[1].split()[:2] == ["t-881", "awaiting_gate"]
