"""examples/specs.py: a ready spec runs offline from its script; a SelfRefine dumps and loads back equal."""

from __future__ import annotations

from tests.examples import run_example


def test_the_example_runs_the_spec_and_round_trips_one() -> None:
    done = run_example("specs.py")
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
