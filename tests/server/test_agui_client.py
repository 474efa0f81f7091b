"""The real AG-UI TypeScript client (@ag-ui/client, run with node) against a real uvicorn server."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from jeeves.server import create_app
from tests.server.conftest import live_server
from tests.server.nested import nested, nested_router

pytestmark = pytest.mark.node

CLIENT = Path(__file__).parent / "agui_client"


@pytest.fixture(scope="module")
def node() -> str:
    """node, with the client's packages installed (.ci/run runs `npm ci`; this does it if not)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed; the AG-UI client test needs Node.js (apt-get install nodejs npm)")
    if not (CLIENT / "node_modules" / "@ag-ui" / "client").is_dir():
        npm = shutil.which("npm")
        assert npm is not None, f"npm is missing: install it, then run `npm ci` in {CLIENT}"
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--prefer-offline"],
            cwd=CLIENT,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, f"`npm ci` in {CLIENT} failed:\n{done.stderr}"
    return node


def run_client(node: str, url: str, task: str, run_id: str) -> tuple[int, list[dict[str, Any]]]:
    done = subprocess.run(
        [node, "run.mjs", url, task, run_id], cwd=CLIENT, capture_output=True, text=True, timeout=120
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return done.returncode, lines


def test_the_typescript_client_receives_a_complete_nested_run(node: str) -> None:
    app = create_app({"nested": nested}, router=nested_router)
    with live_server(app) as server:
        code, lines = run_client(node, f"{server.url}/agui/nested", "Write and document add.", "node-run")
    outcome = lines[-1]
    assert code == 0 and outcome["kind"] == "result", outcome
    events = [line["event"] for line in lines if line["kind"] == "event"]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    assert events[-1]["result"] == outcome["result"] == "Done: add is written and documented."

    started = {e["subagentRunId"]: e for e in events if e["type"] == "SUBAGENT_STARTED"}
    ended = [e["subagentRunId"] for e in events if e["type"] == "SUBAGENT_FINISHED"]
    assert sorted(ended) == sorted(started) and len(started) == 8
    coder, writer = started["node-run__coder_0"], started["node-run__writer_0"]
    delegates = [e for e in events if e["type"] == "TOOL_CALL_START" and e["toolCallName"] == "delegate"]
    assert [coder["parentToolCallId"], writer["parentToolCallId"]] == [d["toolCallId"] for d in delegates]
    assert "parentSubagentRunId" not in coder
    assert started["node-run__coder_0__critic_1"]["parentSubagentRunId"] == "node-run__coder_0"

    scores = {
        (e["subagentRunId"], e["value"]["round"]): e["value"]["score"]
        for e in events
        if e.get("name") == "jeeves.critique"
    }
    assert scores == {
        ("node-run__coder_0", 0): 0.3,
        ("node-run__coder_0", 1): 0.95,
        ("node-run__writer_0", 0): 0.9,
    }

    by_id = {m["id"]: m for m in outcome["messages"]}
    actor_text = by_id["node-run__coder_0__actor_1/step-0"]
    assert actor_text["role"] == "assistant" and actor_text["content"] == "def add(a, b): return a + b"
    assert actor_text["subagentRunId"] == "node-run__coder_0__actor_1"
    results = [m for m in outcome["messages"] if m["role"] == "tool"]
    assert [r["toolCallId"] for r in results] == [d["toolCallId"] for d in delegates]


def test_a_failed_run_reaches_the_client_as_a_run_error(node: str) -> None:
    from jeeves import Router

    app = create_app({"nested": nested}, router=Router())
    with live_server(app) as server:
        code, lines = run_client(node, f"{server.url}/agui/nested", "Write add.", "node-fail")
    events = [line["event"] for line in lines if line["kind"] == "event"]
    assert [e["type"] for e in events] == ["RUN_STARTED", "CUSTOM", "CUSTOM", "RUN_ERROR"]
    assert [e["name"] for e in events[1:3]] == ["jeeves.session.started", "jeeves.session.failed"]
    assert events[-1]["code"] == "UserError" and "No model route" in events[-1]["message"]
    assert code == 0, lines[-1]  # a RUN_ERROR is a well-formed end of a run, not a client failure
