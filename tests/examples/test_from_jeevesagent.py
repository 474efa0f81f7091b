"""examples/from_jeevesagent.py runs offline: jeevesagent's constructor and templates on jeeves."""

from __future__ import annotations

from tests.examples import run_example


def test_the_example_revises_with_jeevesagents_refine_template_and_is_approved() -> None:
    out = run_example("from_jeevesagent.py")
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "  critique: score 0.60, not approved\n    - punctuation is kept" in text
    assert "  example__critic_1 (critic, model scripted-reviewer)" in text
    assert "  critique: score 0.95, approved" in text
    assert "stop reason: approved" in text
    assert 're.sub(r"[^a-z0-9]+", "-", text.lower())' in text
