from __future__ import annotations

import json
import re
import signal
import subprocess
import sys

import httpx

from tests.conftest import REPO, subprocess_env


def test_demo_runs_offline_and_prints_events() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "jeeves", "demo", "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=subprocess_env(),
    )
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    assert events[0]["type"] == "session.started"
    assert events[-1]["type"] == "session.completed"
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)


def test_demo_draws_the_session_tree_by_default() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "jeeves", "demo"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=subprocess_env(),
    )
    assert out.returncode == 0, out.stderr
    assert "counter agent · scripted-demo" in out.stdout and "completed" in out.stdout
    assert "result: The text 'the quick brown fox' has 4 words." in out.stdout


def test_serve_binds_localhost_needs_its_token_and_runs_the_demo() -> None:
    env = {**subprocess_env(), "JEEVES_TOKEN": "t0ken"}
    server = subprocess.Popen(
        [sys.executable, "-m", "jeeves", "serve", "--port", "0"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        port = None
        for line in server.stderr:
            found = re.search(r"Uvicorn running on http://127\.0\.0\.1:(\d+)", line)
            if found:
                port = int(found.group(1))
                break
        assert port, "the server did not report its address"
        base = f"http://127.0.0.1:{port}"
        auth = {"Authorization": "Bearer t0ken"}
        assert httpx.get(f"{base}/architectures").status_code == 401
        assert httpx.get(f"{base}/architectures", headers=auth).json() == {"architectures": ["demo"]}
        sid = httpx.post(f"{base}/runs", json={"architecture": "demo", "task": "count"}, headers=auth).json()[
            "session_id"
        ]
        body = httpx.get(f"{base}/runs/{sid}/events", headers=auth, timeout=30).text
        assert '"type":"session.completed"' in body and "event: end" in body
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=30)
    assert server.returncode == 0
