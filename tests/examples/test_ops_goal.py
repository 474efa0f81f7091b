"""examples/ops_goal.py runs offline: a loop signal steers the agent, the health check verifies."""

from __future__ import annotations

from tests.examples import run_example


def test_the_stuck_agent_is_steered_and_the_fix_is_verified() -> None:
    out = run_example("ops_goal.py")
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert (
        "watchdog #1: STUCK (signal): the agent called restart_service with the same arguments 3 times"
        in text
    )
    assert "steering (stuck) → ops__agent_0" in text
    assert "watchdog #2: PROGRESSING (model): It is reading the config now." in text
    # The steering came before the agent changed course.
    assert text.index("steering (stuck)") < text.index("read_config")
    assert "stop reason: verified; tool calls: 8; healthy: True" in text
