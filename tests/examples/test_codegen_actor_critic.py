"""examples/codegen_actor_critic.py runs offline: scripted coder and reviewer, real pytest."""

from __future__ import annotations

from tests.examples import run_example


def test_the_example_runs_offline_and_the_second_draft_is_approved() -> None:
    out = run_example("codegen_actor_critic.py")
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "critique: score 0.33, not approved (tests,llm, schema)" in text
    assert "[tests] test_collapses_runs_of_separators failed" in text
    assert "[llm] runs of separators are not collapsed" in text
    assert "critique: score 0.95, approved" in text
    assert "stop reason: approved; best round: 1" in text
    assert "slugify__critic_1 (combined_critic, model scripted-reviewer)" in text
    assert 're.sub(r"[^a-z0-9]+", "-", text.lower())' in text
