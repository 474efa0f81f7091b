from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO, jeeves_cli, jeeves_serve, subprocess_env


def test_demo_runs_offline_and_prints_events(tmp_path: Path) -> None:
    out = jeeves_cli("demo", "--json", "--journal", str(tmp_path / "demo.jsonl"))
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    assert events[0]["type"] == "session.started"
    assert events[-1]["type"] == "session.completed"
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)


def test_demo_draws_the_session_tree_by_default(tmp_path: Path) -> None:
    out = jeeves_cli("demo", "--journal", str(tmp_path / "demo.jsonl"))
    assert out.returncode == 0, out.stderr
    assert "lead supervisor · scripted:anthropic/claude-sonnet-4-5" in out.stdout
    assert "coder actor_critic · round 1 · score 0.95 ✓" in out.stdout and "approved" in out.stdout
    assert "Here is `is_palindrome`; it passes all three tests" in out.stdout


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path) -> None:
    for args in (["--json"], []):  # `jeeves demo --json | head -1`, and the tree
        demo = subprocess.Popen(
            [sys.executable, "-m", "jeeves", "demo", *args, "--journal", str(tmp_path / "demo.jsonl")],
            cwd=REPO,
            env=subprocess_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert demo.stdout is not None and demo.stdout.readline()
        demo.stdout.close()
        _, err = demo.communicate(timeout=120)
        assert (demo.returncode, err) == (141, b"")  # 128 + SIGPIPE, as `yes | head` ends; no traceback


def test_serve_binds_localhost_needs_its_token_and_runs_the_demo() -> None:
    with jeeves_serve(env={**subprocess_env(), "JEEVES_TOKEN": "t0ken"}) as base:
        auth = {"Authorization": "Bearer t0ken"}
        assert httpx.get(f"{base}/architectures").status_code == 401
        assert httpx.get(f"{base}/architectures", headers=auth).json() == {"architectures": ["demo"]}
        sid = httpx.post(f"{base}/runs", json={"architecture": "demo", "task": "count"}, headers=auth).json()[
            "session_id"
        ]
        body = httpx.get(f"{base}/runs/{sid}/events", headers=auth, timeout=30).text
        assert '"type":"session.completed"' in body and "event: end" in body


def test_serve_with_live_specs_preloads_litellm_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first live request then finds litellm loaded instead of waiting seconds for it."""
    from jeeves import cli
    from jeeves.models import litellm as adapter

    serving = importlib.import_module("jeeves.server.serve")  # the module, not the function it exports
    spec = tmp_path / "one.toml"
    spec.write_text(
        'instructions = "Answer."\n[models]\ndefault = "openai/gpt-4o-mini"\n[demo.script]\ndefault = ["Hi."]\n'
    )
    started: list[str] = []
    monkeypatch.setattr(adapter, "preload", lambda: started.append("preload"))
    monkeypatch.setattr(serving, "serve", lambda app, **kw: started.append("serve"))

    assert cli.main(["serve", str(spec), "--port", "0"]) == 0
    assert started == ["preload", "serve"]
    started.clear()
    assert cli.main(["serve", str(spec), "--offline", "--port", "0"]) == 0
    assert cli.main(["serve", "--port", "0"]) == 0
    assert started == ["serve", "serve"], "offline and the demo make no live call"
