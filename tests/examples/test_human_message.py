"""examples/human_message.py runs offline: a person's message reaches the agent, a replay brings it back."""

from __future__ import annotations

from pathlib import Path

from tests.examples import run_example

ADVICE = "The config is in /etc/web.conf, not /etc/nginx: it points at port 9090."


def test_the_message_reaches_the_next_request_and_the_replay_reproduces_it(tmp_path: Path) -> None:
    journal = tmp_path / "runs.jsonl"
    out = run_example("human_message.py", "--journal", str(journal))
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "2. steering.injected (human) → ops" in text
    # The message is the last thing in the agent's next request, right after the tool's result,
    # and the scripted agent acts on it (it answers otherwise without it).
    assert f"3. the agent's next model request ends with: ['tool', 'user']\n   user: {ADVICE}\n" in text
    assert "   the agent answered: Set port 8080 in /etc/web.conf and restarted web." in text
    assert text.index("1. the agent called look_around") < text.index("2. steering.injected")
    # The replay asked no model and no person: the message came from the journal.
    assert f"4. replayed offline: the journal brought back [{ADVICE!r}]" in text
    assert "   identical events: True, same answer: True, model requests: 0" in text
    assert '"inject"' in journal.read_text()
