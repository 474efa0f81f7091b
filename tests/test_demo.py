"""`jeeves demo`: a Supervisor over an ActorCritic coder (real pytest) and a researcher,
offline, recorded, and replayable with the command it prints."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import jeeves
from jeeves.demo import TASK, demo_architecture, demo_router
from tests.conftest import jeeves_cli

pytestmark = pytest.mark.anyio


def test_the_coders_first_draft_fails_a_real_test_and_the_second_passes(tmp_path: Path) -> None:
    out = jeeves_cli("demo", "--json", "--journal", str(tmp_path / "demo.jsonl"))
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    critiques = [e for e in events if e["type"] == "critique"]
    assert [(c["round"], c["passed"], c["hard_fail"]) for c in critiques] == [
        (0, False, True),
        (1, True, False),
    ]
    assert "[tests] test_ignores_case_spaces_and_punctuation failed" in critiques[0]["issues"][0]
    started = {e["session_id"].split("__", 1)[-1] for e in events if e["type"] == "session.started"}
    assert {"coder_0", "researcher_0", "coder_0__actor_1", "coder_0__critic_1"} <= started
    delegations = [e["worker"] for e in events if e["type"] == "delegation.started"]
    assert delegations == ["coder", "researcher"]  # one reply, two workers at once


def test_it_ends_with_the_replay_command_and_that_command_replays_it(tmp_path: Path) -> None:
    out = jeeves_cli("demo", cwd=tmp_path)  # the default journal, where a user would run it
    assert out.returncode == 0, out.stderr
    assert (tmp_path / ".jeeves" / "demo.jsonl").is_file()
    assert (
        "coder, round 0: score 0.50, not approved\n  - [tests] test_ignores_case_spaces_and_punctuation"
        in out.stdout
    )
    assert "coder, round 1: score 0.95, approved" in out.stdout
    found = re.search(
        r"Recorded to (\S+)\. Replay it offline, event for event:\n  jeeves (replay \S+ (demo-\w+))",
        out.stdout,
    )
    assert found, out.stdout
    assert found.group(1) == str(Path(".jeeves") / "demo.jsonl")
    replayed = jeeves_cli(*found.group(2).split(), cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert "stop reason: completed (replayed offline)" in replayed.stdout
    assert f"{found.group(3)}  session.started  role=lead architecture=supervisor" in replayed.stdout


async def test_the_demo_is_a_plain_architecture_with_its_own_routes() -> None:
    router = demo_router()
    result = await jeeves.run(demo_architecture(), TASK, router=router, session_id="d")
    assert result.stop_reason == "completed"
    assert set(result.usage_by_role) == {"lead", "actor", "critic", "researcher"}
    router.routes["default"].client.assert_consumed()
