"""`jeeves serve --journal` keeps runs waiting at gates across its own restart (real processes).

A server process starts a run that reaches a gate; the server is stopped (SIGTERM, or killed
with SIGKILL while the gate waits); a new server on the same journal lists the pending gate,
takes the approval over HTTP, resumes the run and finishes it. Model and tool calls are
counted in a file across both processes: no completed model call is repeated, and the
gated tool runs once.
"""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import offline_env
from tests.server.conftest import messages
from tests.server.test_serve import process, served_url
from tests.waiting import wait_until


def counts(path: Path) -> Counter[str]:
    return Counter(path.read_text().split()) if path.exists() else Counter()


def end_of(client: httpx.Client, sid: str) -> dict[str, Any]:
    """Follow the run's SSE stream to its `end` message."""
    with client.stream("GET", f"/runs/{sid}/events") as response:
        body = "".join(response.iter_text())
    (end,) = [m for m in messages(body) if m.event == "end"]
    return json.loads(end.data)  # type: ignore[no-any-return]


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_a_gated_run_survives_a_server_restart_on_its_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: signal.Signals
) -> None:
    journal, counted = tmp_path / "runs.db", tmp_path / "calls.txt"
    env = {**offline_env(), "JEEVES_TEST_COUNTS": str(counted)}
    monkeypatch.setattr("tests.server.test_serve.offline_env", lambda: env)

    with process("-m", "tests.server.gated_serve", str(journal)) as first:
        url, _ = served_url(first)
        with httpx.Client(base_url=url, timeout=30) as client:
            body = {"architecture": "team", "task": "Refund order 881", "session_id": "t-881"}
            assert client.post("/runs", json=body).status_code == 201
            wait_until(lambda: bool(client.get("/runs/t-881/gates").json()), "the run to reach its gate")
        first.send_signal(stop)
        first.wait(timeout=30)
    assert counts(counted) == {"model": 2}  # the supervisor's turn and the worker's, before the gate

    with process("-m", "tests.server.gated_serve", str(journal)) as second:
        url, _ = served_url(second)
        with httpx.Client(base_url=url, timeout=30) as client:
            run = client.get("/runs/t-881").json()
            assert run["status"] == "awaiting_approval" and run["pending_gates"] == ["t-881__refunds_0#1"]
            (gate,) = client.get("/runs/t-881/gates").json()
            assert gate["tool"] == "issue_refund" and gate["arguments"] == {"order_id": "881", "amount": 12.5}
            decision = {"decision": "approve", "by": "alice", "arguments_hash": gate["arguments_hash"]}
            decided = client.post("/runs/t-881/gates/t-881__refunds_0%231", json=decision)
            assert decided.status_code == 200, decided.text
            end = end_of(client, "t-881")
            assert end["status"] == "completed", end
            assert client.get("/runs/t-881").json()["output"] == "Done: order 881 is refunded."
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=30)
    assert counts(counted) == {"model": 4, "issue_refund": 1}  # 2 before + 2 after: none repeated
