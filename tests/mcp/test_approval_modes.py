"""Annotations become approval modes; gates, refusals, deny_ends_run and TTLs on a real server
(`@modelcontextprotocol/server-filesystem`: reads are readOnlyHint, writes destructiveHint)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

import jeeves
from jeeves import Agent, MemoryJournal
from jeeves.approvals.decide import Approvals, Decision, PendingGate, record_decision
from jeeves.mcp import annotation_mode
from jeeves.mcp.client import resolve_mode
from jeeves.testing import Reply, ScriptedModel, call
from tests.mcp.conftest import filesystem_server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_annotation_table() -> None:
    def mode(**hints: Any) -> str:
        return annotation_mode(hints or None, unannotated="destructive")

    assert mode(readOnlyHint=True) == "read_only"
    assert mode(readOnlyHint=True, destructiveHint=True) == "read_only"
    assert mode(destructiveHint=True) == "destructive"
    assert mode(readOnlyHint=False) == "destructive"  # destructive unless the server says otherwise
    assert mode(destructiveHint=False) == "network"  # openWorld defaults to true
    assert mode(destructiveHint=False, openWorldHint=True) == "network"
    assert mode(destructiveHint=False, openWorldHint=False) == "local_write"
    assert mode(destructiveHint=False, openWorldHint=False, idempotentHint=True) == "local_write"
    assert mode() == "destructive"  # unannotated: conservative
    assert annotation_mode({"title": "x"}, unannotated="network") == "network"  # a title is no hint


def test_overrides_win_over_hints_tool_first_then_server() -> None:
    read = {"readOnlyHint": True}
    assert resolve_mode("read_file", read, mode=None, modes={}, unannotated="destructive") == "read_only"
    assert (
        resolve_mode("read_file", read, mode="destructive", modes={}, unannotated="destructive")
        == "destructive"
    )
    overrides = {"read_*": "network", "read_file": "local_write"}
    assert resolve_mode(
        "read_file", read, mode="destructive", modes=overrides, unannotated="destructive"
    ) == ("local_write")
    assert (
        resolve_mode("read_text_file", read, mode=None, modes=overrides, unannotated="destructive")
        == "network"
    )


def _coder(root: Path, model: ScriptedModel, **options: Any) -> Agent:
    return Agent("Edit files.", tools=[filesystem_server(root, **options)], model=model)


def _read_then_write(root: Path) -> ScriptedModel:
    return ScriptedModel(
        [
            Reply(tool_calls=[call("read_text_file", {"path": str(root / "a.txt")})]),
            Reply(tool_calls=[call("write_file", {"path": str(root / "a.txt"), "content": "new\n"})]),
            "done",
        ]
    )


def _tool_results(model: ScriptedModel) -> list[str]:
    return [m.content or "" for m in model.requests[-1].messages if m.role == "tool"]


@pytest.mark.anyio
async def test_reads_run_inline_and_a_denied_write_leaves_the_file_untouched(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    asked: list[PendingGate] = []

    async def deny(gate: PendingGate) -> Decision:
        asked.append(gate)
        return Decision.deny(gate, by="alice", note="not today")

    model = _read_then_write(tmp_path)
    result = await jeeves.run(_coder(tmp_path, model), "edit", approvals=Approvals(), approver=deny)
    assert result.text == "done"
    assert [(g.tool, g.mode) for g in asked] == [("write_file", "destructive")]  # the read was not asked
    read, denied = _tool_results(model)
    assert read == "old\n"
    assert denied.startswith("Denied by alice (not today): write_file was not run")
    assert (tmp_path / "a.txt").read_text() == "old\n"


@pytest.mark.anyio
async def test_a_write_suspends_the_run_at_a_durable_gate_and_runs_once_when_approved(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    journal = MemoryJournal()
    first = await jeeves.run(
        _coder(tmp_path, _read_then_write(tmp_path)),
        "edit",
        journal=journal,
        session_id="w",
        approvals=Approvals(),
    )
    assert first.status == "awaiting_approval"
    (gate,) = first.pending
    assert (gate.tool, gate.mode, gate.arguments["content"]) == ("write_file", "destructive", "new\n")
    assert (tmp_path / "a.txt").read_text() == "old\n"

    await record_decision(journal, gate.gate_id, Decision.approve(gate, by="alice"))
    model = ScriptedModel(["done"])
    done = await jeeves.resume(_coder(tmp_path, model), "w", journal=journal, approvals=Approvals())
    assert done.text == "done"
    assert (tmp_path / "a.txt").read_text() == "new\n"
    assert "Successfully wrote" in _tool_results(model)[-1]


@pytest.mark.anyio
async def test_a_write_above_the_safety_mode_is_refused_and_never_runs(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    model = _read_then_write(tmp_path)
    policy = Approvals(refuse_above="local_write")
    await jeeves.run(_coder(tmp_path, model), "edit", approvals=policy)
    assert "write_file" in _tool_results(model)[-1] and "destructive" in _tool_results(model)[-1]
    assert (tmp_path / "a.txt").read_text() == "old\n"


@pytest.mark.anyio
async def test_overrides_per_tool_and_per_server_change_what_is_gated(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    asked: list[str] = []

    async def approve(gate: PendingGate) -> Decision:
        asked.append(gate.tool)
        return Decision.approve(gate, by="alice")

    trusted = _coder(tmp_path, _read_then_write(tmp_path), modes={"write_file": "local_write"})
    await jeeves.run(trusted, "edit", approvals=Approvals(), approver=approve)
    assert asked == [] and (tmp_path / "a.txt").read_text() == "new\n"

    distrusted = _coder(tmp_path, _read_then_write(tmp_path), mode="destructive")
    await jeeves.run(distrusted, "edit", approvals=Approvals(), approver=approve)
    assert asked == ["read_text_file", "write_file"]


@pytest.mark.anyio
async def test_deny_ends_run_and_the_gate_ttl_apply_to_mcp_tools(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n")

    async def deny(gate: PendingGate) -> Decision:
        return Decision.deny(gate, by="bob")

    rejected = await jeeves.run(
        _coder(tmp_path, _read_then_write(tmp_path)),
        "edit",
        approvals=Approvals(deny_ends_run=True),
        approver=deny,
    )
    assert rejected.status == "rejected"

    async def never(gate: PendingGate) -> Decision:
        await anyio.sleep_forever()
        raise AssertionError

    expired = await jeeves.run(
        _coder(tmp_path, _read_then_write(tmp_path)),
        "edit",
        approvals=Approvals(gate_ttl_s=0.5),
        approver=never,
    )
    assert expired.status == "expired"
    assert (tmp_path / "a.txt").read_text() == "old\n"
