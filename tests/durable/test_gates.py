"""A gated run on durable workers: it waits at its gate on a worker, an approval given from a
third process (`jeeves approve DATABASE SESSION`) wakes it, and whichever worker is alive
resumes it: the gated tool runs once and no completed call is made again."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from jeeves.durable import submit, wait, wake
from tests.conftest import jeeves_cli
from tests.durable.conftest import CountingServer, WorkerProcess
from tests.postgres import row_written

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]

GATED = "tests.durable.archs:refund_agent"
FAST = ("--heartbeat", "0.2", "--takeover-after", "4", "--poll", "0.1", "--ask", "destructive")


async def taken_over(url: str, worker_id: str) -> None:
    """Until a live worker has claimed `worker_id` (its heartbeat row flipped to dead)."""
    select = "SELECT 1 FROM jeeves_workers WHERE worker_id = %s AND status = 'dead'"
    await row_written(
        url, "jeeves_workers", select, (worker_id,), what=f"worker {worker_id!r} to be taken over"
    )


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_gated_run_approved_from_a_third_process_resumes_on_the_worker_that_is_alive(
    postgres_url: str, counter: CountingServer, workers: Callable[..., WorkerProcess]
) -> None:
    first, second = workers(*FAST, target=GATED), workers(*FAST, target=GATED)
    await submit(GATED, "Refund order 881", session_id="gated-1", database=postgres_url)

    suspended = await wait("gated-1", database=postgres_url, timeout_s=120)

    assert suspended["status"] == "awaiting_approval", suspended
    assert len(suspended["pending"]) == 1 and suspended["pending"][0].startswith("gated-1")
    [held_by] = {c["pid"] for c in counter.calls}  # the worker that ran it up to the gate
    victim, survivor = (first, second) if held_by == first.pid else (second, first)
    assert counter.counts()[("tool", "issue_refund:881")] == 0  # gated: not run yet
    victim.kill()  # the run waits durably: the survivor takes it over, still waiting
    await taken_over(postgres_url, victim.worker_id)

    approved = jeeves_cli("approve", postgres_url, "gated-1", "--by", "alice")  # a third process

    assert approved.returncode == 0
    assert "approved" in approved.stdout and "resumes on a worker" in approved.stdout
    outcome = await wait("gated-1", database=postgres_url, timeout_s=120, stop_at_gates=False)
    assert outcome["status"] == "completed", (outcome, survivor.text())
    assert outcome["text"] == "Done: refunded 12.5 on order 881"
    counts = counter.counts()
    assert counts[("tool", "issue_refund:881")] == 1  # the gated tool ran once
    model_calls = {key: n for key, n in counts.items() if key[0] != "tool"}
    assert len(model_calls) == 2 and set(model_calls.values()) == {1}  # neither model call repeated
    assert {c["pid"] for c in counter.calls if c["pid"] != held_by} == {survivor.pid}
    assert await wake("gated-1", database=postgres_url)  # a durable run (ended: no message sent)
    assert not await wake("never-submitted", database=postgres_url)
    replayed = jeeves_cli("replay", postgres_url, "gated-1")  # offline, from the shared database
    assert replayed.returncode == 0, replayed.stderr


async def test_a_gate_in_a_branch_on_another_worker_is_reported_and_approved_from_a_third_process(
    postgres_url: str, counter: CountingServer, workers: Callable[..., WorkerProcess]
) -> None:
    target = "tests.durable.archs:gated_fan_out"
    workers(*FAST, "--concurrency", "1", target=target)
    workers(*FAST, "--concurrency", "1", target=target)
    await submit(target, "Refund and note", session_id="gated-2", database=postgres_url)

    suspended = await wait("gated-2", database=postgres_url, timeout_s=120)

    # The refund runs as a branch (its own workflow) and waits at its gate there.
    assert suspended["status"] == "awaiting_approval", suspended
    assert [gate.split("#")[0] for gate in suspended["pending"]] == ["gated-2__refund_0"]
    assert counter.counts()[("tool", "issue_refund:881")] == 0

    approved = jeeves_cli("approve", postgres_url, "gated-2", "--by", "alice")  # wakes the branch
    assert approved.returncode == 0, approved.stderr

    outcome = await wait("gated-2", database=postgres_url, timeout_s=120, stop_at_gates=False)
    assert outcome["status"] == "completed", outcome
    assert outcome["text"] == "Combined: Done: refunded 12.5 on order 881 | draft gated-2__notes_0"
    counts = counter.counts()
    assert counts[("tool", "issue_refund:881")] == 1
    assert all(n == 1 for n in counts.values())  # no call made twice, the tool once
    replayed = jeeves_cli("replay", postgres_url, "gated-2")
    assert replayed.returncode == 0, replayed.stderr
