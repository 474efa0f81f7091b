from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest

from jeeves.critics import CodeCritic, extract_code
from jeeves.errors import CriticError, UserError
from tests.critics.helpers import review
from tests.memory_journal import DictJournal
from tests.waiting import reports

pytestmark = pytest.mark.anyio

TESTS = """\
from solution import add


def test_add():
    assert add(1, 2) == 3


def test_add_negative():
    assert add(-1, -2) == -3


def test_zero():
    assert add(0, 0) == 0
"""

PASSING = "Here you go:\n```python\ndef add(a, b):\n    return a + b\n```\n"
FAILING = "```python\ndef add(a, b):\n    return a - b\n```"


async def test_passing_file() -> None:
    verdict = await review(CodeCritic(TESTS), PASSING)
    assert (verdict.score, verdict.hard_fail, verdict.issues) == (1.0, False, [])
    assert (verdict.source, verdict.obtained, verdict.summary) == ("tests", "function", "3/3 tests passed.")
    assert verdict.approves(1.0)


async def test_failing_file_names_tests_and_assertions() -> None:
    verdict = await review(CodeCritic(TESTS), FAILING)
    assert verdict.score == pytest.approx(1 / 3)
    assert verdict.hard_fail  # all_must_pass: a failing test blocks approval whatever the score
    assert verdict.issues == [
        "test_add failed: assert -1 == 3\n +  where -1 = add(1, 2)",
        "test_add_negative failed: assert 1 == -3\n +  where 1 = add(-1, -2)",
    ]
    lenient = await review(CodeCritic(TESTS, all_must_pass=False), FAILING)
    assert (lenient.score, lenient.hard_fail) == (pytest.approx(1 / 3), False)


async def test_syntax_error_is_a_hard_fail_with_the_line() -> None:
    verdict = await review(CodeCritic(TESTS), "```python\ndef add(a, b)\n    return a + b\n```")
    assert (verdict.score, verdict.hard_fail) == (0.0, True)
    assert verdict.issues == ["syntax error in solution.py line 1: expected ':' in 'def add(a, b)'"]


async def test_infinite_loop_times_out_as_a_hard_fail() -> None:
    code = "```python\ndef add(a, b):\n    while True:\n        pass\n```"
    verdict = await review(CodeCritic(TESTS, timeout_s=1.5), code)
    assert (verdict.score, verdict.hard_fail) == (0.0, True)
    assert verdict.issues[0].startswith("timed out after 1.5s")


async def test_import_error_is_a_hard_fail() -> None:
    verdict = await review(CodeCritic(TESTS), "```python\ndef plus(a, b):\n    return a + b\n```")
    assert (verdict.score, verdict.hard_fail) == (0.0, True)
    assert verdict.issues == [
        "collecting the tests failed: ImportError: cannot import name 'add' from 'solution' (solution.py)"
    ]


async def test_no_code_and_exiting_code_are_hard_fails() -> None:
    verdict = await review(CodeCritic(TESTS), "```bash\necho hi\n```")
    assert verdict.hard_fail and "no Python code" in verdict.issues[0]
    exiting = await review(CodeCritic(TESTS), "```python\nimport os\nos._exit(0)\n```")
    assert exiting.hard_fail and exiting.issues == ["the test run ended without a report (exit code 0)"]


async def test_the_candidate_gets_a_minimal_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JEEVES_FAKE_API_KEY", "secret")
    tests = "import os\n\ndef test_env():\n    assert 'JEEVES_FAKE_API_KEY' not in os.environ\n    assert os.environ['EXTRA'] == 'yes'\n"
    verdict = await review(CodeCritic(tests, env={"EXTRA": "yes"}), "```python\nx = 1\n```")
    assert verdict.score == 1.0, verdict.issues


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is enforced on Linux")
async def test_memory_cap() -> None:
    tests = "from solution import grab\n\ndef test_grab():\n    assert grab() > 0\n"
    code = "```python\ndef grab():\n    return len(bytearray(2 * 1024**3))\n```"
    verdict = await review(CodeCritic(tests, memory_mb=256), code)
    assert verdict.hard_fail and verdict.issues == ["test_grab failed: MemoryError"]


async def test_cancelling_the_review_kills_the_test_process() -> None:
    # The candidate's test reports its pid, then waits on the connection: it lives until killed.
    tests = (
        "import os, socket\nfrom solution import add\n\ndef test_slow():\n"
        "    report = socket.create_connection(('127.0.0.1', int(os.environ['REPORT'])))\n"
        "    report.sendall(f'{os.getpid()}\\n'.encode())\n    report.recv(1)\n"
    )
    async with reports() as inbox:
        critic = CodeCritic(tests, env={"REPORT": str(inbox.port)})
        with anyio.fail_after(60):  # a hang guard: the test process reports as soon as it runs
            async with anyio.create_task_group() as group:
                group.start_soon(review, critic, PASSING)
                pid = int(await inbox.receive())
                group.cancel_scope.cancel()
        with pytest.raises(ProcessLookupError):  # killed and reaped before the cancel returned
            os.kill(pid, 0)


async def test_replay_serves_the_verdict_without_running_pytest() -> None:
    journal = DictJournal()
    recorded = await review(CodeCritic(TESTS), FAILING, journal=journal)
    assert [k[2:] for k in await journal.kinds()] == [("function", "tests")]
    broken_python = CodeCritic(TESTS, python="/nonexistent/python")  # would fail if it ran
    replayed = await review(broken_python, FAILING, journal=journal, mode="replay")
    assert replayed == recorded


async def test_pytest_that_cannot_start_is_a_critic_error_not_the_candidates_fault() -> None:
    with pytest.raises(CriticError, match="pytest could not run"):
        await review(CodeCritic(TESTS, python=sys.executable + "-missing"), PASSING)
    with pytest.raises(CriticError, match="No module named"):
        await review(CodeCritic(TESTS, plugins=["no_such_plugin_xyz"]), PASSING)


async def test_a_tests_file_that_collects_nothing_is_a_user_error() -> None:
    tests = "class Helpers:\n    def test_hidden(self):\n        pass\n"
    with pytest.raises(UserError, match="collected no tests"):
        await review(CodeCritic(tests), PASSING)


def test_bad_configuration() -> None:
    with pytest.raises(UserError, match="read_text"):
        CodeCritic("tests/test_add.py")
    with pytest.raises(UserError, match="module="):
        CodeCritic(TESTS, module="my-solution")
    with pytest.raises(UserError, match="test_file="):
        CodeCritic(TESTS, test_file="sub/test_x.py")
    with pytest.raises(UserError, match="timeout_s"):
        CodeCritic(TESTS, timeout_s=0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("```python\nA = 1\n```", "A = 1\n"),
        ("```py\nA = 1 + 2 + 3\n```\nUsage:\n```python\nprint(A)\n```", "A = 1 + 2 + 3\n"),  # the largest
        ("```python\nA = 1\n```\n```python\nB = 2\n```", "B = 2\n"),  # ties: the last
        ("```bash\npip install x\n```\n```\nA = 1\n```", "A = 1\n"),  # untagged when no python block
        ("  ```python\n  A = 1\n  ```", "A = 1\n"),  # indented (in a list) is dedented
        ("A = 1\n", "A = 1\n"),  # no fences: the whole text
        ("```bash\nls\n```", ""),  # only other languages: nothing
    ],
)
def test_extract_code(text: str, expected: str) -> None:
    assert extract_code(text) == expected


# A candidate that leaves processes behind: 5 `sleep 600` in sessions of their own and a
# double-forked daemon (its parent exits at once), then, as MODE says, returns, hangs, or
# kills the review's supervisor (pytest's parent) first. It adds their pids to PIDS, then
# reports to the test's REPORT port (hanging, it waits on that connection until killed).
ESCAPING = """```python
import os, signal, socket, subprocess, sys

DAEMON = (
    "import subprocess; print(subprocess.Popen(['sleep', '600'], stdin=subprocess.DEVNULL, "
    "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True).pid)"
)

def supervised():  # the parent is a review's supervisor, not the test run itself
    with open(f"/proc/{os.getppid()}/environ", "rb") as environ:
        return b"JEEVES_CODE_REVIEW=" in environ.read()

def add(a, b):
    pids = [subprocess.Popen(["sleep", "600"], start_new_session=True).pid for _ in range(5)]
    daemon = subprocess.run([sys.executable, "-c", DAEMON], capture_output=True, text=True, check=True)
    pids.append(int(daemon.stdout))
    with open(os.environ["PIDS"], "a") as out:  # each test calls add: one line each
        out.write(" ".join(map(str, pids)) + "\\n")
    if os.environ["MODE"] == "kill_supervisor" and supervised():
        os.kill(os.getppid(), signal.SIGKILL)
    report = socket.create_connection(("127.0.0.1", int(os.environ["REPORT"])))
    report.sendall(b"started\\n")  # the test waits for this line
    if os.environ["MODE"] == "hang":
        report.recv(1)  # until killed: the test holds the connection open for the whole review
    return a + b
```"""


def _alive(pid: int) -> bool:
    """Running (a zombie is dead: only its parent's bookkeeping is left)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except FileNotFoundError:
        return False


def _survivors(pids_file: Path) -> list[int]:
    pids = [int(p) for p in pids_file.read_text().split()]
    assert pids and len(pids) % 6 == 0, pids
    alive = [pid for pid in pids if _alive(pid)]
    for pid in alive:  # leave nothing behind, even when the test fails
        os.kill(pid, 9)
    return alive


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and a subreaper: Linux")


@linux_only
@pytest.mark.parametrize("mode", ["return", "hang", "kill_supervisor"])
async def test_a_review_ends_every_process_the_candidate_started(tmp_path: Path, mode: str) -> None:
    pids_file = tmp_path / "pids"
    timeout = 15 if mode == "hang" else 60  # generous: the children must be started first
    async with reports() as inbox:
        env = {"PIDS": str(pids_file), "MODE": mode, "REPORT": str(inbox.port)}
        verdict = await review(CodeCritic(TESTS, timeout_s=timeout, env=env), ESCAPING)
    if mode == "return":
        assert (verdict.score, verdict.hard_fail) == (1.0, False), verdict.issues
    elif mode == "hang":
        assert verdict.issues[0].startswith("timed out after 15s")
    assert _survivors(pids_file) == []


@linux_only
async def test_cancelling_a_review_ends_every_process_the_candidate_started(tmp_path: Path) -> None:
    pids_file = tmp_path / "pids"
    async with reports() as inbox:
        critic = CodeCritic(TESTS, env={"PIDS": str(pids_file), "MODE": "hang", "REPORT": str(inbox.port)})
        with anyio.fail_after(60):  # a hang guard: the candidate reports once its children run
            async with anyio.create_task_group() as group:
                group.start_soon(review, critic, ESCAPING)
                assert await inbox.receive() == "started"
                group.cancel_scope.cancel()
        assert _survivors(pids_file) == []


def test_text_that_is_not_a_test_file_is_not_echoed_in_the_error() -> None:
    with pytest.raises(UserError, match=r"got 30 characters of text\. Pass Path") as info:
        CodeCritic("API_KEY = 'sk-live-123'\nx = 1\n")
    assert "sk-live" not in str(info.value)
    with pytest.raises(UserError, match=r"got 'tests/test_slug\.py'\. Pass Path"):
        CodeCritic("tests/test_slug.py")  # a path by mistake is shown, to be recognised
