"""What the gate commands print and return: expiries in ISO 8601 with the time left, one exit
code per outcome, a resume that fails before any step leaving the run as it was, and an
offline script that goes on where the run stopped."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import jeeves
from jeeves._run.replay import skip_served
from jeeves.approvals.decide import Approvals, Decision, pending_gates, record_decision
from jeeves.approvals.policy import PendingGate
from jeeves.cli.exits import ExitCode, exit_code
from jeeves.cli.gates import describe_gate, gates_command, when_expires
from jeeves.errors import MissingCredentials
from jeeves.journal.open import list_runs
from jeeves.journal.sqlite import SQLiteJournal
from jeeves.testing import Reply, ScriptedModel, call
from tests.conftest import REPO

NOW = 1_795_855_890.0


def test_an_expiry_is_iso_8601_in_utc_with_the_time_left() -> None:
    assert when_expires(NOW + 86_340, NOW).endswith("Z (in 23 h 59 min)")
    assert (
        when_expires(1_795_910_400.0, 1_795_910_400.0 - 86_400 - 3_600) == "2026-11-29T00:00:00Z (in 1 d 1 h)"
    )
    assert when_expires(NOW + 90, NOW).endswith("(in 1 min)")
    assert when_expires(NOW + 20, NOW).endswith("(in 20 s)")
    assert when_expires(NOW - 300, NOW).endswith("(expired 5 min ago)")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(in 2 h 0 min\)", when_expires(NOW + 7_200, NOW))


def test_a_gate_line_names_the_call_its_mode_and_its_expiry() -> None:
    gate = PendingGate(
        session_id="t-881",
        step=3,
        gate_id="t-881#3",
        tool="issue_refund",
        arguments={"order_id": "881"},
        mode="destructive",
        arguments_hash="h",
        expires_at=NOW + 3_600,
    )
    line = describe_gate(gate, NOW)
    assert line.startswith("t-881#3  issue_refund({'order_id': '881'})  mode=destructive  expires 20")
    assert line.endswith("Z (in 1 h 0 min)")
    assert "expires" not in describe_gate(gate.model_copy(update={"expires_at": None}), NOW)


def test_the_viewer_prints_an_expiry_as_the_commands_do() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed; this test runs the viewer's function in Node.js")
    script = (REPO / "jeeves" / "server" / "static" / "explorer.js").read_text(encoding="utf-8")
    function = re.search(r"^function whenExpires\(.*?^\}\n", script, re.MULTILINE | re.DOTALL)
    assert function is not None
    cases = [(NOW + 86_340, NOW), (NOW + 20, NOW), (NOW - 300, NOW), (NOW + 90_000, NOW)]
    calls = "".join(f"console.log(whenExpires({e}, {n}));" for e, n in cases)
    done = subprocess.run([node, "-e", function.group(0) + calls], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [when_expires(e, n) for e, n in cases]


def test_one_exit_code_per_outcome() -> None:
    assert exit_code("completed", "approved") == ExitCode.COMPLETED == 0
    assert exit_code("completed", "budget") == ExitCode.BUDGET == 4
    assert exit_code("awaiting_approval", "awaiting_approval") == ExitCode.AWAITING_APPROVAL == 3
    for status in ("failed", "expired", "rejected", "cancelled"):
        assert exit_code(status) == ExitCode.FAILED == 1
    assert ExitCode.BAD_INPUT == 2


def test_every_exit_code_is_in_the_cli_page_table() -> None:
    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(\d+)` \| (.+?) \|$", page, re.MULTILINE))
    assert sorted(int(code) for code in rows) == sorted(int(code) for code in ExitCode)


@jeeves.tool(approval="destructive")
def refund(order_id: str) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


def _support(model: ScriptedModel) -> jeeves.Agent:
    return jeeves.Agent("You refund.", role="support", tools=[refund], model=model)


def _script() -> list[object]:
    return [Reply(tool_calls=[call("refund", {"order_id": "881"})]), "refunded 881"]


@pytest.mark.anyio
async def test_an_offline_script_goes_on_where_the_run_stopped(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    first = await jeeves.run(
        _support(ScriptedModel({"support": _script()})),
        "Refund 881",
        journal=path,
        session_id="t-1",
        approvals=Approvals(),
    )
    assert first.status == "awaiting_approval"
    (gate,) = await pending_gates(path, "t-1")
    await record_decision(path, gate.gate_id, Decision.approve(gate, by="alice"))
    again = ScriptedModel({"support": _script()})  # a fresh script, as `jeeves resume --offline` builds
    async with SQLiteJournal(path) as journal:
        await skip_served(again, journal, "t-1")
    assert again.remaining() == {"support": 1}  # the first reply was served from the journal
    done = await jeeves.resume(_support(again), "t-1", journal=path, approvals=Approvals())
    assert (done.status, done.text) == ("completed", "refunded 881")
    again.assert_consumed()


async def _suspended(path: Path, decision: str = "approve") -> None:
    await jeeves.run(
        _support(ScriptedModel({"support": _script()})),
        "Refund 881",
        journal=path,
        session_id="t-1",
        approvals=Approvals(),
    )
    (gate,) = await pending_gates(path, "t-1")
    made = Decision.approve(gate, by="alice") if decision == "approve" else Decision.deny(gate, by="bob")
    await record_decision(path, gate.gate_id, made)


@pytest.mark.anyio
async def test_replaying_a_run_that_has_not_finished_says_to_resume_it_first(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    await _suspended(path, "approve")  # decided, not yet resumed: the record ends at the gate
    with pytest.raises(jeeves.ReplayDivergence) as info:
        await jeeves.replay(_support(ScriptedModel({"support": _script()})), path, "t-1")
    said = str(info.value)
    assert said.startswith("Session 't-1' asked for step ")
    assert said.endswith(
        "Run 't-1' has not finished (it is awaiting_gate), so its record ends where it stopped: resume it "
        "(jeeves resume JOURNAL t-1), then replay it."
    )
    assert info.value.session_id == "t-1" and "\n" not in said


async def _status(path: Path) -> str:
    (run,) = await list_runs(path)
    return run.status


@pytest.mark.anyio
async def test_a_resume_that_fails_before_any_step_leaves_the_run_waiting(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    await _suspended(path, "deny")
    broken = jeeves.Agent("You refund.", role="support", tools=[refund])  # no model, no route
    with pytest.raises(jeeves.UserError, match="No model route for role 'support'"):
        await jeeves.resume(broken, "t-1", journal=path, approvals=Approvals())
    assert await _status(path) == "awaiting_gate"

    # A model call that fails (a missing key) ran nothing either: the next resume makes it again.
    missing = MissingCredentials("needs OPENAI_API_KEY", env_var="OPENAI_API_KEY")
    keyless = ScriptedModel({"support": [_script()[0], missing]})  # its first reply is served
    async with SQLiteJournal(path) as journal:
        await skip_served(keyless, journal, "t-1")
    with pytest.raises(MissingCredentials):
        await jeeves.resume(_support(keyless), "t-1", journal=path, approvals=Approvals())
    assert await _status(path) == "awaiting_gate"


@pytest.mark.anyio
async def test_a_resume_that_ran_a_step_then_failed_is_failed(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    await _suspended(path, "approve")
    keyless = ScriptedModel({"support": [_script()[0], KeyError("x")]})
    async with SQLiteJournal(path) as journal:
        await skip_served(keyless, journal, "t-1")
    with pytest.raises(KeyError):  # the refund ran (a step on record), then the model call failed
        await jeeves.resume(_support(keyless), "t-1", journal=path, approvals=Approvals())
    assert await _status(path) == "failed"


@pytest.mark.anyio
async def test_gates_lists_what_waits_and_how_to_decide_it(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    await _suspended(path, "approve")  # t-1: decided, no longer waiting
    await jeeves.run(
        _support(ScriptedModel({"support": _script()})),
        "Refund 882",
        journal=path,
        session_id="t-2",
        approvals=Approvals(gate_ttl_s=3_600),
    )
    out = io.StringIO()
    assert await gates_command(str(path), out=out) == 0
    gate, decide = out.getvalue().splitlines()
    assert gate.startswith("t-2#1  refund({'order_id': '881'})  mode=destructive  expires ")
    assert gate.endswith(" (in 59 min)")
    assert decide.endswith(f"approve {path} t-2 --by NAME")
    only = io.StringIO()
    await gates_command(str(path), "t-1", out=only)
    assert only.getvalue() == "no gate is waiting for a decision\n"
    with pytest.raises(jeeves.UserError, match="holds no run 't-3'"):
        await gates_command(str(path), "t-3")


@pytest.mark.anyio
@pytest.mark.parametrize("ended", ["completed", "rejected", "expired"])
async def test_gates_reads_no_step_of_a_run_that_ended(tmp_path: Path, ended: str) -> None:
    """A gate left pending in a run no resume goes on from waits for nothing: listing every
    run's gates skips such runs without reading their steps (a journal of thousands of
    finished runs lists its few waiting gates at once). Named, the run is still searched."""
    path = tmp_path / "runs.db"
    for sid in ("t-1", "t-2"):
        await jeeves.run(
            _support(ScriptedModel({"support": _script()})),
            "Refund 881",
            journal=path,
            session_id=sid,
            approvals=Approvals(gate_ttl_s=3_600),
        )
    async with SQLiteJournal(path) as journal:
        record = await journal.get_session("t-1")
        assert record is not None and record.status == "awaiting_gate"
        await journal.put_session(record.model_copy(update={"status": ended}))
    out = io.StringIO()
    assert await gates_command(str(path), out=out) == 0
    assert [line.split()[0] for line in out.getvalue().splitlines()[::2]] == ["t-2#1"]
    named = io.StringIO()
    assert await gates_command(str(path), "t-1", out=named) == 0
    assert named.getvalue().startswith("t-1#1  refund(")
