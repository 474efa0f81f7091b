"""A scripted ActorCritic coder fixes a failing test through `@modelcontextprotocol/server-filesystem`:
reads run inline, writes pass a gate, the critic runs the real test suite; then the run is
replayed offline with the server absent."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import jeeves
from jeeves import ActorCritic, Agent, MemoryJournal, Verdict
from jeeves.approvals.decide import Approvals, Decision, PendingGate
from jeeves.critics import FunctionCritic
from jeeves.mcp import MCPServer
from jeeves.testing import Reply, ScriptedModel, call
from tests.mcp.conftest import filesystem_server

BUGGY = "def slugify(text: str) -> str:\n    return text.lower()\n"
WRONG = "def slugify(text: str) -> str:\n    return text.lower().replace(' ', '_')\n"
FIXED = "def slugify(text: str) -> str:\n    return '-'.join(text.lower().split())\n"
TEST = "from slugify import slugify\n\n\ndef test_slugify():\n    assert slugify('Hello  World') == 'hello-world'\n"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _project(root: Path) -> Path:
    root.mkdir()
    (root / "slugify.py").write_text(BUGGY)
    (root / "test_slugify.py").write_text(TEST)
    return root


def _tests_pass(root: Path) -> FunctionCritic:
    def tests_pass(task: str, output: str) -> Verdict:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(root)],
            cwd=root,
            capture_output=True,
            text=True,
        )
        if done.returncode == 0:
            return Verdict(score=1.0, summary="the tests pass")
        return Verdict(score=0.0, hard_fail=True, issues=[done.stdout[-600:]], summary="the tests fail")

    return FunctionCritic(tests_pass)


def _coder(root: Path, server: MCPServer, model: ScriptedModel) -> ActorCritic:
    actor = Agent("You fix the failing test by editing files.", tools=[server], model=model, max_turns=6)
    return ActorCritic(actor, [_tests_pass(root)], max_rounds=3)


def _script(root: Path) -> ScriptedModel:
    source, test = str(root / "slugify.py"), str(root / "test_slugify.py")
    return ScriptedModel(
        [
            Reply(
                tool_calls=[call("read_text_file", {"path": test}), call("read_text_file", {"path": source})]
            ),
            Reply(tool_calls=[call("write_file", {"path": source, "content": WRONG})]),
            "Replaced spaces.",
            Reply(tool_calls=[call("write_file", {"path": source, "content": FIXED})]),
            "Joined the words with hyphens.",
        ]
    )


@pytest.mark.anyio
async def test_a_coder_fixes_a_failing_test_through_the_filesystem_server_and_replays_offline(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path / "project")
    journal = MemoryJournal()
    asked: list[str] = []

    async def approve(gate: PendingGate) -> Decision:
        asked.append(f"{gate.tool}:{gate.mode}")
        return Decision.approve(gate, by="reviewer")

    model = _script(root)
    result = await jeeves.run(
        _coder(root, filesystem_server(root), model),
        "Make test_slugify pass.",
        journal=journal,
        session_id="fix",
        approvals=Approvals(),
        approver=approve,
    )
    assert result.status == "completed" and result.text == "Joined the words with hyphens."
    assert [r.score for r in result.detail.rounds] == [0.0, 1.0]  # type: ignore[union-attr]
    assert asked == ["write_file:destructive", "write_file:destructive"]  # reads ran inline
    assert (root / "slugify.py").read_text() == FIXED
    first_reads = [m.content for m in model.requests[1].messages if m.role == "tool"]
    assert first_reads == [TEST, BUGGY]

    (root / "slugify.py").write_text(BUGGY)  # the world changes; a replay must not touch it
    absent = filesystem_server(root, cwd="/nonexistent/jeeves-mcp-test")
    replayed = await jeeves.run(
        _coder(root, absent, ScriptedModel([])),
        "Make test_slugify pass.",
        journal=journal,
        session_id="fix",
        mode="replay",
        approvals=Approvals(),
    )
    assert replayed.text == result.text
    assert [r.score for r in replayed.detail.rounds] == [0.0, 1.0]  # type: ignore[union-attr]
    assert (root / "slugify.py").read_text() == BUGGY
