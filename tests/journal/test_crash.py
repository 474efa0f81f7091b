"""Crash and resume: SIGKILL a recording run, restart it, and repeat no completed model call.

The model is a local OpenAI-compatible server reached through the litellm adapter, so
the calls are counted where a provider would bill them.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import jeeves
from tests.conftest import crash_child, wait_for_line
from tests.journal.children_crash_child import checked_run
from tests.journal.crash_child import tick_run
from tests.models.mock_openai import MockOpenAI, Text, Tool, serve

CALLS = 5
"""Model calls in a whole run: four ticks, then the answer."""
KILLED_AFTER = 3
"""Model calls completed before the kill."""


def script(mock: MockOpenAI, first: int = 0) -> None:
    replies: list[Any] = [Tool("tick", json.dumps({"n": n}), id=f"call_{n}") for n in range(1, CALLS)]
    mock.script(*[*replies, Text("Ticked four times.")][first:])


def child(mock: MockOpenAI, journal: Path, *extra: str) -> subprocess.Popen[str]:
    return crash_child("tests.journal.crash_child", mock.base_url, str(journal), "job-1", *extra)


def run_here(mock: MockOpenAI, journal: Path) -> jeeves.RunResult:
    """The same run in this process (litellm is imported once here, not in another child)."""
    return anyio.run(tick_run, mock.base_url, str(journal), "job-1")


def conversation(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"], sort_keys=True)


@pytest.fixture(scope="module")
def server() -> Iterator[MockOpenAI]:
    with serve() as mock:
        yield mock


@pytest.fixture(scope="module")
def uninterrupted(
    server: MockOpenAI, tmp_path_factory: pytest.TempPathFactory
) -> tuple[jeeves.RunResult, list[str]]:
    server.reset()
    script(server)
    result = run_here(server, tmp_path_factory.mktemp("whole") / "runs.db")
    assert len(server.requests) == CALLS and server.remaining() == 0
    return result, [conversation(body) for body in server.requests]


@pytest.mark.parametrize("name", ["runs.jsonl", "runs.db"])
def test_a_killed_run_resumes_without_repeating_a_completed_call(
    server: MockOpenAI, uninterrupted: tuple[jeeves.RunResult, list[str]], tmp_path: Path, name: str
) -> None:
    whole_result, whole_requests = uninterrupted
    journal = tmp_path / name
    server.reset()
    script(server)

    crashed = child(server, journal, str(KILLED_AFTER))
    wait_for_line(crashed, "blocked")  # printed at the blocking tick
    assert len(server.requests) == KILLED_AFTER
    os.kill(crashed.pid, signal.SIGKILL)
    crashed.communicate(timeout=30)
    assert crashed.returncode == -signal.SIGKILL
    before = [conversation(body) for body in server.requests]

    server.reset()
    script(server, first=KILLED_AFTER)
    resumed = run_here(server, journal)  # the restart: same journal, same session id
    after = [conversation(body) for body in server.requests]

    assert len(after) == CALLS - KILLED_AFTER  # the server saw only the calls not yet made
    assert not set(after) & set(before)  # no completed call was sent again
    assert before + after == whole_requests  # and the conversation is the uninterrupted one
    assert resumed.text == whole_result.text == "Ticked four times."
    assert resumed.usage.model_calls == CALLS - KILLED_AFTER
    assert server.unexpected == [] and server.remaining() == 0


def test_a_run_killed_before_a_childs_record_went_out_resumes_from_its_steps(tmp_path: Path) -> None:
    """SQLite leaves a child's record behind: killed while the actor's second call runs, the
    critic's end is not in the file yet. The resume serves every committed step, writes the
    records again, and ends as the uninterrupted run."""
    whole = anyio.run(checked_run, str(tmp_path / "whole.db"))
    journal = tmp_path / "runs.db"
    crashed = crash_child("tests.journal.children_crash_child", str(journal), "block")
    wait_for_line(crashed, "blocked")
    os.kill(crashed.pid, signal.SIGKILL)
    crashed.communicate(timeout=30)
    assert crashed.returncode == -signal.SIGKILL
    with sqlite3.connect(journal) as conn:
        statuses = dict(conn.execute("SELECT session_id, json_extract(record, '$.status') FROM sessions"))
    assert statuses == {"job": "in_progress", "job__actor_0": "completed", "job__critic_0": "in_progress"}

    resumed = anyio.run(checked_run, str(journal))
    assert (
        (resumed.text, resumed.stop_reason)
        == (whole.text, whole.stop_reason)
        == (
            "def add(a, b): return a + b",
            "approved",
        )
    )
    assert resumed.usage.model_calls == 2  # the actor's and the critic's second calls; the first ones served
    with sqlite3.connect(journal) as conn:
        rows = conn.execute(
            "SELECT session_id, json_extract(record, '$.status') FROM sessions ORDER BY rowid"
        )
        assert [status for _, status in rows] == ["completed"] * 5
