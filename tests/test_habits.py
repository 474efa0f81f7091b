"""The test suite's own habits: it synchronises by events, never by sleeping and hoping.

A test waits for what it needs to have happened (tests/waiting.py says how). A sleep stays
only where time itself is the thing under test or being simulated (a takeover period, an
outage, a slow stream), and then its line says so: `# time, not sync: <why>`. Polling lives
in one place, tests/waiting.py, and nowhere else.
"""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
POLLING_HOME = TESTS / "waiting.py"
SLEEP = re.compile(r"sleep\((?!\s*0\s*\))")
"""A call of any sleep (time., anyio., asyncio., pg_) for anything but zero seconds."""
MARKER = re.compile(r"#\s*time, not sync:\s*\S")


def unmarked_sleeps(text: str) -> list[int]:
    """The line numbers of `text` that sleep without saying why it is time, not sync."""
    return [
        number
        for number, line in enumerate(text.splitlines(), start=1)
        if SLEEP.search(line) and not MARKER.search(line)
    ]


def test_no_test_synchronises_by_sleeping() -> None:
    found = [
        f"{path.relative_to(TESTS.parent)}:{number}"
        for path in sorted(TESTS.rglob("*.py"))
        if "node_modules" not in path.parts and path != POLLING_HOME
        for number in unmarked_sleeps(path.read_text())
    ]
    assert not found, (
        "These lines sleep: wait for an event instead (an anyio.Event, a child's line with "
        "tests.conftest.wait_for_line, tests.waiting for a condition only another process can tell), "
        "or, where time itself is under test, end the line with `# time, not sync: <why>`:\n"
        + "\n".join(found)
    )


def test_the_check_sees_every_kind_of_sleep_and_accepts_a_marked_one() -> None:
    lines = [  # "nap" stands for "sleep": this file must not trip its own check
        "    await anyio.nap(0.05)",
        "    time.nap(down_s)",
        '    conn.execute("SELECT pg_nap(1)")',
        "    await asyncio.nap( 2 )",
        "    await anyio.nap(0)  # a checkpoint",
        "    await anyio.nap_forever()",
        "    time.nap(1.0)  # time, not sync: nothing may happen within a takeover period",
        "    time.nap(1.0)  # time, not sync:",
    ]
    text = "\n".join(lines).replace("nap", "sleep")
    assert unmarked_sleeps(text) == [1, 2, 3, 4, 8]
