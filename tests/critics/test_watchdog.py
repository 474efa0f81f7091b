"""The watchdog's reply parser and its deterministic loop signals."""

from __future__ import annotations

import pytest

from jeeves._run.steering import ToolStep
from jeeves.critics.watchdog import Watchdog, describe_step, parse_watch_verdict


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"verdict": "STUCK", "reason": "it loops."}', ("STUCK", "it loops.", "schema")),
        ('```json\n{"verdict": "achieved", "reason": "done"}\n```', ("ACHIEVED", "done", "repaired")),
        ("MISLED: it edits the docs.", ("MISLED", "it edits the docs", "repaired")),
        ("**Stuck** - same failing command\n", ("STUCK", "same failing command", "repaired")),
        (
            "PROGRESSING\nThe agent found the config file.",
            ("PROGRESSING", "The agent found the config file.", "repaired"),
        ),
    ],
)
def test_verdicts_are_read_from_json_or_the_first_word(reply: str, expected: tuple[str, str, str]) -> None:
    assert parse_watch_verdict(reply) == expected


@pytest.mark.parametrize(
    "reply",
    ["", "I think the agent is fine, mostly?", '{"verdict": "BORED"}', "The agent is STUCK, clearly."],
)
def test_an_unreadable_reply_is_progressing_flagged(reply: str) -> None:
    verdict, reason, obtained = parse_watch_verdict(reply)
    assert (verdict, obtained) == ("PROGRESSING", "fallback")
    assert "unreadable watchdog reply" in reason


def step(name: str, arguments: str = "{}", result: str = "ok", is_error: bool = False) -> ToolStep:
    return ToolStep(name, arguments, result, is_error)


def test_the_same_call_repeated_is_a_signal_whatever_the_key_order() -> None:
    w = Watchdog(repeat_limit=3)
    steps = [
        step("read", '{"a": 1, "b": 2}'),
        step("read", '{"b": 2, "a": 1}'),
        step("read", '{"a":1,"b":2}'),
    ]
    found = w.signal(steps)
    assert found is not None and "called read with the same arguments 3 times" in found[0]
    assert w.signal(steps[:2]) is None
    assert w.signal([*steps[:2], step("read", '{"a": 2, "b": 2}')]) is None


def test_the_same_failure_repeated_is_a_signal() -> None:
    w = Watchdog(repeat_limit=2)
    steps = [
        step("edit", '{"x": 1}', "E: permission denied", True),
        step("edit", '{"x": 2}', "E: permission denied", True),
    ]
    found = w.signal(steps)
    assert found is not None and "failed with the same error" in found[0]
    assert w.signal([steps[0], step("edit", '{"x": 2}', "E: other", True)]) is None
    assert Watchdog(repeat_limit=None).signal(steps) is None


def test_the_window_is_the_last_two_times_every_steps() -> None:
    steps = [step(f"t{i}") for i in range(12)]
    assert [s.name for s in Watchdog(every=3).window(steps)] == ["t6", "t7", "t8", "t9", "t10", "t11"]
    assert Watchdog(every=0).window(steps) == []


def test_a_step_is_one_line_with_a_bounded_preview() -> None:
    line = describe_step(step("run", '{"cmd": "ls"}', "a\nb " * 200, True), 20)
    assert line.startswith('run({"cmd": "ls"}) [error] → a b a b')
    assert line.endswith("…") and "\n" not in line
