"""`@modelcontextprotocol/inspector` in CLI mode (npm, tests/mcp/servers) as a client of
`jeeves mcp serve`: it lists the served architectures and calls one (an offline spec)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from jeeves.journal.open import list_runs
from jeeves.mcp.serve import run_id
from tests.conftest import REPO, subprocess_env
from tests.mcp.conftest import MODULES

CODEGEN = "architectures/codegen.toml"


def inspector(journal: Path, *method: str) -> Any:
    """Run the inspector's CLI against `jeeves mcp serve CODEGEN shouter`; its JSON answer."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed: @modelcontextprotocol/inspector needs it")
    entry = MODULES / "inspector" / "clients" / "launcher" / "build" / "index.js"
    if not entry.exists():
        pytest.fail(f"{entry} is missing: run `npm ci --prefix tests/mcp/servers` (as .ci/run does)")
    serve = [sys.executable, "-m", "jeeves", "mcp", "serve", CODEGEN, "tests.mcp.served:shouter"]
    out = subprocess.run(
        ["node", str(entry), "--cli", *serve, "--offline", "--journal", str(journal), *method],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr + out.stdout
    return json.loads(out.stdout)


def test_the_inspector_lists_the_served_architectures(tmp_path: Path) -> None:
    listed = inspector(tmp_path / "runs.db", "--method", "tools/list")
    tools = {t["name"]: t for t in listed["tools"]}
    assert sorted(tools) == ["codegen", "tests_mcp_served_shouter"]
    assert tools["codegen"]["inputSchema"]["required"] == ["task"]
    assert set(tools["codegen"]["inputSchema"]["properties"]) == {"task", "session_id"}
    assert tools["codegen"]["annotations"]["readOnlyHint"] is False


def test_the_inspector_calls_a_served_spec_and_the_run_is_journaled(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    task = "Write parse_duration."
    called = inspector(
        journal, "--method", "tools/call", "--tool-name", "codegen", "--tool-arg", f"task={task}"
    )
    assert called["isError"] is False
    served = called["structuredContent"]
    assert served["session_id"] == run_id("codegen", task)
    assert served["status"] == "completed" and "def parse_duration" in served["output"]
    assert json.loads(called["content"][0]["text"]) == served
    runs = anyio.run(list_runs, str(journal))
    assert [(r.session_id, r.status) for r in runs] == [(served["session_id"], "completed")]
