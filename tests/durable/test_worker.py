"""Workers on a real PostgreSQL: submitted runs execute on DBOS queues, a killed worker's run
is taken over by another, no completed model call is made twice, and the run replays offline."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

import jeeves
from jeeves.durable import submit, wait
from tests.conftest import jeeves_cli
from tests.durable import archs
from tests.durable.conftest import TARGET, CountingServer, WorkerProcess, environ
from tests.postgres import row_written
from tests.waiting import eventually

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]

FAN_OUT = "tests.durable.archs:fan_out"
FAST = ("--heartbeat", "0.2", "--takeover-after", "4", "--poll", "0.1")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_submitted_run_executes_on_a_worker_and_replays_from_the_database(
    postgres_url: str, counter: CountingServer, workers: Callable[..., WorkerProcess]
) -> None:
    workers(*FAST)
    assert await submit(TARGET, "Write add", session_id="job-1", database=postgres_url) == "job-1"
    outcome = await wait("job-1", database=postgres_url, timeout_s=120)
    assert outcome == {
        "session_id": "job-1",
        "status": "completed",
        "text": "draft 2",
        "stop_reason": "approved",
    }
    assert sum(counter.counts().values()) == 6  # three rounds, actor and critic each
    runs = jeeves_cli("runs", postgres_url)
    assert runs.returncode == 0 and "job-1" in runs.stdout and "completed" in runs.stdout
    replayed = jeeves_cli("replay", postgres_url, "job-1")  # offline: no COUNTER_URL in its environment
    assert replayed.returncode == 0, replayed.stderr
    assert sum(counter.counts().values()) == 6


async def test_a_worker_killed_mid_call_is_taken_over_and_no_completed_call_is_repeated(
    postgres_url: str, counter: CountingServer, workers: Callable[..., WorkerProcess]
) -> None:
    first, second = workers(*FAST), workers(*FAST)
    # Hold the critic's round-1 call open: the actor's drafts 0 and 1 and the round-0 critic
    # call are complete and journaled; the held call is in flight when its worker dies.
    counter.hold(lambda call: call["session_id"] == "job-2__critic_1")
    await submit(TARGET, "Write add", session_id="job-2", database=postgres_url)
    assert counter.held.wait(120), "the run never reached the held call"
    assert counter.held_call is not None
    victim, survivor = (first, second) if counter.held_call["pid"] == first.pid else (second, first)
    before = counter.counts()
    victim.kill()
    counter.release()

    outcome = await wait("job-2", database=postgres_url, timeout_s=120)

    assert outcome["status"] == "completed", (outcome, survivor.text())
    assert (outcome["text"], outcome["stop_reason"]) == ("draft 2", "approved")  # as uninterrupted
    after = counter.counts()
    in_flight = ("job-2__critic_1", counter.held_call["key"])
    assert after[in_flight] == 2  # the call in flight was made again, with the same request
    assert all(after[key] == 1 for key in before if key != in_flight)  # completed calls were not
    assert sum(after.values()) == 7  # six calls, one of them twice
    assert {c["pid"] for c in counter.calls[len(before) :]} == {survivor.pid}
    replayed = jeeves_cli("replay", postgres_url, "job-2")  # offline, from the shared database
    assert replayed.returncode == 0, replayed.stderr
    result = await jeeves.replay(archs.actor_critic(), postgres_url, "job-2")
    assert result.text == "draft 2"


async def test_a_stopped_worker_hands_its_run_over_and_submit_reads_the_database_from_the_environment(
    postgres_url: str, counter: CountingServer, workers: Callable[..., WorkerProcess]
) -> None:
    first, second = workers(*FAST), workers(*FAST)
    counter.hold(lambda call: call["session_id"] == "job-3__actor_1")
    with environ(JEEVES_DATABASE=postgres_url):
        submitted = jeeves_cli("submit", TARGET, "Write add", "--session-id", "job-3", env=os.environ.copy())
    assert submitted.returncode == 0, submitted.stderr
    assert submitted.stdout.strip() == "job-3"
    assert counter.held.wait(120) and counter.held_call is not None
    victim, survivor = (first, second) if counter.held_call["pid"] == first.pid else (second, first)
    assert victim.stop() == 0, victim.text()  # SIGTERM: cancels its run, hands it over
    counter.release()

    outcome = await wait("job-3", database=postgres_url, timeout_s=120)

    assert (outcome["status"], outcome.get("text")) == ("completed", "draft 2"), (outcome, survivor.text())
    assert "runs in flight go to the other workers" in victim.text()
    assert sum(counter.counts().values()) == 7  # six calls, the one in flight twice


async def test_a_worker_killed_during_a_parallel_fan_out_is_taken_over_and_no_completed_call_is_repeated(
    postgres_url: str, counter: CountingServer, workers: Callable[..., WorkerProcess]
) -> None:
    first, second = workers(*FAST, target=FAN_OUT), workers(*FAST, target=FAN_OUT)
    # Hold the right worker's call; the left worker's runs beside it and completes first.
    counter.hold(lambda call: "right" in call["session_id"])
    await submit(FAN_OUT, "Do both parts", session_id="fan-1", database=postgres_url)
    assert counter.held.wait(120), "the run never reached the held call"
    assert counter.held_call is not None
    await journaled(postgres_url, "left")  # the parallel sibling is done
    victim, survivor = (first, second) if counter.held_call["pid"] == first.pid else (second, first)
    before = counter.counts()
    victim.kill()
    counter.release()

    outcome = await wait("fan-1", database=postgres_url, timeout_s=120)

    assert outcome["status"] == "completed", (outcome, survivor.text())
    left, right = sorted(key for key in before if key[0] != "fan-1")
    assert outcome["text"] == f"Combined: draft {left[0]} | draft {right[0]}"  # as uninterrupted
    after = counter.counts()
    in_flight = (counter.held_call["session_id"], counter.held_call["key"])
    assert after[in_flight] == 2  # the call in flight was made again, with the same request
    assert all(after[key] == 1 for key in before if key != in_flight)  # completed calls were not
    assert sum(after.values()) == 5  # supervisor twice, each worker once, the held call twice
    replayed = jeeves_cli("replay", postgres_url, "fan-1")  # offline, from the shared database
    assert replayed.returncode == 0, replayed.stderr


async def test_an_offline_worker_taking_over_a_run_goes_on_with_the_next_reply_of_its_script(
    postgres_url: str, counter: CountingServer, workers: Callable[..., WorkerProcess], tmp_path: Path
) -> None:
    """A run of a spec's `[demo]` script taken over by another worker: the journal serves the
    model call that asked for the tool, so the new worker's fresh script skips that reply (as
    `jeeves resume --offline` does) instead of asking for the tool again."""
    calls, release = tmp_path / "calls.log", tmp_path / "release"
    (tmp_path / "heldtools.py").write_text(
        "import pathlib, time\n\n\ndef hold(n: int) -> str:\n"
        '    """Hold until released."""\n'
        f"    with open({str(calls)!r}, 'a') as log:\n"
        "        log.write(f'hold({n})\\n')\n"
        f"    while not pathlib.Path({str(release)!r}).exists():\n"
        "        time.sleep(0.02)  # time, not sync: the tool polls for its release in the worker\n"
        "    return f'held {n}'\n"
    )
    spec = tmp_path / "held.toml"
    spec.write_text(
        'instructions = "Hold."\nrole = "holder"\ntools = ["heldtools:hold"]\n[demo]\ntask = "hold"\n'
        '[demo.script]\nholder = [{ tool_calls = [{ name = "hold", arguments = { n = 1 } }] }, "done"]\n'
    )
    first = workers(*FAST, "--offline", target=str(spec))
    await submit(str(spec), "hold", session_id="held-1", database=postgres_url)

    async def holding() -> bool:  # the first worker's process writes it as the tool starts
        return calls.exists() and calls.read_text() != ""

    await eventually(holding, "the tool to start on the first worker", within_s=120)
    first.kill()
    release.touch()
    survivor = workers(*FAST, "--offline", target=str(spec))

    outcome = await wait("held-1", database=postgres_url, timeout_s=120)

    assert (outcome["status"], outcome.get("text")) == ("completed", "done"), (outcome, survivor.text())
    assert calls.read_text().splitlines() == ["hold(1)", "hold(1)"]  # the one in flight again, no more


async def journaled(url: str, fragment: str) -> None:
    """Until a step of a session whose id holds `fragment` is in the journal (a worker wrote it)."""
    select = "SELECT session_id FROM jeeves_steps WHERE strpos(session_id, %s) > 0 LIMIT 1"
    await row_written(
        url, "jeeves_steps", select, (fragment,), what=f"a journaled step of a {fragment!r} session"
    )


def test_a_serving_worker_keeps_its_start_up_heap_out_of_the_collector_and_restores_it() -> None:
    """While `Worker.run` serves, the start-up heap is frozen and young collections are rarer;
    both settings come back when it returns (a process embedding a worker keeps its own)."""
    import gc

    from jeeves.durable.worker import GC_GEN0, _long_lived_heap

    before = gc.get_threshold()
    with _long_lived_heap():
        assert gc.get_threshold() == (GC_GEN0, *before[1:])
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
