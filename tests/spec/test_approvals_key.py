"""The `[approvals]` spec key: parsed into the run's policy, used by `jeeves run`."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from jeeves.approvals.decide import Allow, Approvals
from jeeves.errors import UserError
from jeeves.spec import load_spec, parse_spec
from tests.conftest import REPO, jeeves_cli, offline_env

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
    assert done.returncode == 3, done.stderr  # ExitCode.AWAITING_APPROVAL, as `resume` and `submit --wait`
    assert "stop reason: awaiting_approval" in done.stdout
    listed = jeeves_cli("runs", str(journal), "--status", "awaiting_gate")
    assert listed.stdout.splitlines()[1].split()[:2] == ["t-881", "awaiting_gate"]


def test_jeeves_run_that_suspends_prints_its_gates_and_how_to_decide_and_resume(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    done = jeeves_cli("run", str(SPEC), "--offline", "--journal", str(journal), "--session-id", "t-881")
    assert done.returncode == 3, done.stderr
    lines = done.stdout.splitlines()
    assert "replay it:" not in done.stdout  # a replay would only stop at the same gate again
    pending = [line for line in lines if line.startswith("pending: ")]
    assert len(pending) == 1 and pending[0].startswith("pending: t-881#3  issue_refund(")
    assert "mode=destructive" in pending[0]
    (decide,) = [line.removeprefix("decide with: ") for line in lines if line.startswith("decide with: ")]
    (resume,) = [line.removeprefix("then resume: ") for line in lines if line.startswith("then resume: ")]
    assert shlex.split(decide)[-5:] == ["approve", str(journal), "t-881", "--by", "NAME"]
    assert shlex.split(resume)[-4:] == ["resume", str(journal), "t-881", "--offline"]

    # The printed command, as a user pastes it (with their name), records the decision.
    approve = [("ana" if word == "NAME" else word) for word in shlex.split(decide)]
    approved = subprocess.run(
        approve, capture_output=True, text=True, cwd=REPO, env=offline_env(), timeout=300
    )
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.startswith("approved by ana: t-881#3  issue_refund(")
    assert f"go on with: {resume}" in approved.stdout

    # The printed resume, pasted as it is, finishes the run offline: the [demo] script goes on
    # with its third reply (the two the journal serves are skipped), the refund runs once.
    resumed = subprocess.run(
        shlex.split(resume), capture_output=True, text=True, cwd=REPO, env=offline_env(), timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.startswith("jeeves\n")  # the run's tree, as `jeeves run` shows it
    assert "Order 881 is refunded: 42.00 back to dana@example.com." in resumed.stdout
    assert "stop reason: completed · 1 model call" in resumed.stdout
    listed = jeeves_cli("runs", str(journal), "--status", "completed")
    assert listed.stdout.splitlines()[1].split()[:2] == ["t-881", "completed"]
