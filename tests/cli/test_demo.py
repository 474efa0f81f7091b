"""`jeeves demo`: a Supervisor over an ActorCritic coder (real pytest) and a researcher,
offline, recorded, and replayable with the command it prints."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import jeeves
from jeeves.cli.demo import TASK, demo_architecture, demo_router
from tests.conftest import jeeves_cli, offline_env

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


def _shell(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_it_ends_with_the_replay_command_and_that_command_replays_it(tmp_path: Path) -> None:
    # After the README's quick start `jeeves` is not on PATH: the user runs .venv/bin/jeeves.
    script = tmp_path / ".venv" / "bin" / "jeeves"
    script.parent.mkdir(parents=True)
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom jeeves.cli.main import main\nsys.exit(main())\n")
    script.chmod(0o755)
    env = {k: v for k, v in offline_env().items() if k != "COLUMNS"} | {"PATH": os.defpath}
    out = subprocess.run(
        [str(script), "demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert (tmp_path / ".jeeves" / "demo.jsonl").is_file()
    assert re.search(
        r"\n    └── ✓ researcher agent · scripted:openai/gpt-4o-mini · .* · completed\n\n", out.stdout
    )
    assert (
        "coder, round 0: score 0.50, not approved\n"
        "  - [tests] test_ignores_case_spaces_and_punctuation failed: AssertionError: assert False\n"
        "     +  where False = is_palindrome('A man, a plan, a canal: Panama!')\n"
        "  - [review] case, spaces and punctuation are not ignored\n"
    ) in out.stdout
    assert "coder, round 1: score 0.95, approved" in out.stdout
    found = re.search(r"Recorded to (\S+)\. Replay it offline, event for event:\n  (.*)\n", out.stdout)
    assert found, out.stdout
    assert found.group(1) == str(Path(".jeeves") / "demo.jsonl")
    session = found.group(2).rsplit(" ", 1)[-1]
    assert found.group(2) == f".venv/bin/jeeves replay .jeeves/demo.jsonl {session}"
    replayed = _shell(found.group(2), tmp_path, env)  # as the user pastes it
    assert replayed.returncode == 0, replayed.stderr
    assert "stop reason: completed (replayed offline)" in replayed.stdout
    assert f"{session}  session.started  role=lead architecture=supervisor" in replayed.stdout
    runs = _shell(".venv/bin/jeeves runs", tmp_path, env)  # no JOURNAL: the demo's
    assert runs.returncode == 0, runs.stderr
    assert runs.stdout.splitlines()[1].startswith(f"{session} ")


def test_run_as_a_module_it_prints_a_replay_command_that_runs_as_printed(tmp_path: Path) -> None:
    env = {**offline_env(), "PATH": os.defpath}  # no `python` that is this interpreter on PATH
    out = jeeves_cli("demo", cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    command = out.stdout.splitlines()[-1].strip()
    assert command.startswith(f"{shlex.quote(sys.executable)} -m jeeves replay .jeeves/demo.jsonl demo-")
    replayed = _shell(command, tmp_path, env)
    assert replayed.returncode == 0, replayed.stderr


async def test_the_demo_is_a_plain_architecture_with_its_own_routes() -> None:
    router = demo_router()
    result = await jeeves.run(demo_architecture(), TASK, router=router, session_id="d")
    assert result.stop_reason == "completed"
    assert set(result.usage_by_role) == {"lead", "actor", "critic", "researcher"}
    router.routes["default"].client.assert_consumed()
