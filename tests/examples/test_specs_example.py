"""examples/specs.py: a ready spec runs offline from its script; a SelfRefine dumps and loads back equal."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO, subprocess_env


def test_the_example_runs_the_spec_and_round_trips_one() -> None:
    env = {k: v for k, v in subprocess_env().items() if not k.endswith("_API_KEY")}
    done = subprocess.run(
        [sys.executable, "examples/specs.py"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert (
        "1. codegen.toml: actor_critic with routes Router({'actor': 'scripted:anthropic/claude-sonnet-4-5'"
        in out
    )
    assert "   round 0: score 0.20, not approved" in out
    assert "     - [tests] test_combined_units failed" in out
    assert "   round 1: score 0.95, approved\n   stop reason: approved" in out
    assert "2. a SelfRefine built in code, as a spec (loads back equal: True):" in out
    assert '   [models]\n   explainer = "anthropic/claude-sonnet-4-5"' in out
