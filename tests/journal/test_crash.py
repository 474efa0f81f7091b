"""Crash and resume: SIGKILL a recording run, restart it, and repeat no completed model call.

The model is a local OpenAI-compatible server reached through the litellm adapter, so
the calls are counted where a provider would bill them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import jeeves
from tests.conftest import crash_child, wait_for_line
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
