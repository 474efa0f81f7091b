from __future__ import annotations

import io

import pytest

from tests.conftest import REPO
from tests.examples import load_example, run_example

EXAMPLE = REPO / "examples" / "stream_to_browser.py"


def test_example_runs_once_offline_as_a_script() -> None:
    done = run_example("stream_to_browser.py", "--once")
    assert done.returncode == 0, done.stderr
    assert "  ▶ coder [actor_critic]" in done.stdout
    assert "    round 0: score 0.35 (revise)" in done.stdout
    assert "    round 1: score 0.95 (approved)" in done.stdout
    assert "'status': 'completed'" in done.stdout


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # uvicorn is asyncio-only
async def test_example_streams_the_same_team_over_sse_and_agui() -> None:
    example = load_example("stream_to_browser.py")
    summary = await example.once(out=io.StringIO())
    assert summary["status"] == "completed" and "FizzBuzz" in summary["output"]
    assert summary["sessions"][0] == "demo" and "demo__docs_0__critic_0" in summary["sessions"]
    agui = summary["agui"]
    assert agui["RUN_STARTED"] == agui["RUN_FINISHED"] == 1
    assert agui["SUBAGENT_STARTED"] == agui["SUBAGENT_FINISHED"] == 8
    assert agui["TEXT_MESSAGE_START"] == agui["TEXT_MESSAGE_END"] > 0
