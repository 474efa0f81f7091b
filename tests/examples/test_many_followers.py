from __future__ import annotations

import io

import pytest

from tests.examples import load_example, run_example


def test_example_runs_offline_as_a_script() -> None:
    done = run_example("many_followers.py", "--followers", "30")
    assert done.returncode == 0, done.stderr
    assert "30 followers read them all; identical streams: True" in done.stdout
    assert "one per event: True" in done.stdout
    assert "exact: True" in done.stdout


def test_a_bad_follower_count_is_refused_with_the_value() -> None:
    done = run_example("many_followers.py", "--followers", "0")
    assert done.returncode == 2 and "--followers must be at least 1, got 0" in done.stderr


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # uvicorn is asyncio-only
async def test_fifty_followers_share_one_encoding_per_event_and_a_reattach_is_exact() -> None:
    example = load_example("many_followers.py")
    summary = await example.main(followers=50, out=io.StringIO())
    assert summary["identical"] is True and summary["reattach_exact"] is True
    assert summary["encoded"] == summary["events"] > 10
    assert 0 < summary["last_seen"] < summary["events"]
