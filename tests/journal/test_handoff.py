"""Handoff: a store's own thread, fed jobs from event loops in batches (asyncio and trio)."""

from __future__ import annotations

import os
import threading

import anyio
import pytest

from jeeves.journal.handoff import Handoff, Job

pytestmark = pytest.mark.anyio


class Echo(Job):
    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n


class Runner:
    """Answers each job with its number times ten, in whatever thread runs it; records the
    batches and can be held (to let jobs pile up) or made to fail."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.threads: set[int] = set()
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()
        self.fail: BaseException | None = None

    def __call__(self, jobs: list[Job]) -> None:
        self.threads.add(threading.get_ident())
        self.entered.set()
        self.release.wait(10)
        self.batches.append([job.n for job in jobs if isinstance(job, Echo)])
        if self.fail is not None:
            raise self.fail
        for job in jobs:
            assert isinstance(job, Echo)
            job.value = job.n * 10


async def test_a_lone_job_runs_in_the_handoffs_thread_and_returns_its_value() -> None:
    runner = Runner()
    handoff = Handoff(runner, name="test")
    assert (await handoff.submit(Echo(4))).value == 40
    assert runner.batches == [[4]]
    assert runner.threads and threading.get_ident() not in runner.threads
    handoff.stop()


async def test_jobs_submitted_while_a_batch_runs_share_the_next_batch() -> None:
    runner = Runner()
    handoff = Handoff(runner, name="test")
    values: dict[int, int] = {}

    async def submit(n: int) -> None:
        values[n] = (await handoff.submit(Echo(n))).value

    runner.release.clear()  # the first batch is held in the thread while the others queue
    async with anyio.create_task_group() as group:
        group.start_soon(submit, 0)
        await anyio.to_thread.run_sync(runner.entered.wait, 10)
        for n in range(1, 50):
            group.start_soon(submit, n)
        await anyio.wait_all_tasks_blocked()
        runner.release.set()
    assert values == {n: n * 10 for n in range(50)}
    assert [sorted(batch) for batch in runner.batches] == [[0], list(range(1, 50))]
    handoff.stop()


async def test_a_failing_batch_fails_each_of_its_jobs_and_the_next_batch_runs() -> None:
    runner = Runner()
    runner.fail = RuntimeError("disk on fire")
    handoff = Handoff(runner, name="test")
    errors: list[str] = []

    async def submit(n: int) -> None:
        try:
            await handoff.submit(Echo(n))
        except RuntimeError as exc:
            errors.append(str(exc))

    async with anyio.create_task_group() as group:
        for n in range(5):
            group.start_soon(submit, n)
    assert errors == ["disk on fire"] * 5
    runner.fail = None
    assert (await handoff.submit(Echo(7))).value == 70
    handoff.stop()


class Fatal(BaseException):
    pass


async def test_a_runner_raising_a_base_exception_fails_its_jobs_and_the_thread_goes_on() -> None:
    runner = Runner()
    runner.fail = Fatal("not an Exception")
    handoff = Handoff(runner, name="test")
    with anyio.fail_after(5):  # a dead thread would leave the next job waiting forever
        with pytest.raises(Fatal):  # never answered as done: a write is not taken as committed
            await handoff.submit(Echo(1))
        runner.fail = None
        assert (await handoff.submit(Echo(2))).value == 20
    handoff.stop()


async def test_a_cancelled_caller_stops_waiting_and_its_job_still_runs() -> None:
    runner = Runner()
    handoff = Handoff(runner, name="test")
    runner.release.clear()
    with anyio.move_on_after(0.05):
        await handoff.submit(Echo(1))
    assert runner.batches == []
    runner.release.set()
    assert (await handoff.submit(Echo(2))).value == 20  # queued behind the first: it ran before
    assert runner.batches == [[1], [2]]
    handoff.stop()


def test_the_thread_ends_when_stopped_and_a_later_job_starts_another() -> None:
    runner = Runner()
    handoff = Handoff(runner, name="test-handoff")

    async def one(n: int) -> int:
        return int((await handoff.submit(Echo(n))).value)

    assert anyio.run(one, 1) == 10
    handoff.stop()
    for thread in [t for t in threading.enumerate() if t.name == "test-handoff"]:
        thread.join(5)
    assert not [t for t in threading.enumerate() if t.name == "test-handoff"]
    assert anyio.run(one, 2, backend="trio") == 20  # another loop, another backend: a new thread
    handoff.stop()


def test_a_loop_that_ended_before_its_answer_does_not_break_the_thread() -> None:
    runner = Runner()
    handoff = Handoff(runner, name="test")

    async def abandon() -> None:
        runner.release.clear()
        with anyio.move_on_after(0.05):
            await handoff.submit(Echo(1))

    anyio.run(abandon)  # the loop is gone when the thread answers
    runner.release.set()

    async def one() -> int:
        return int((await handoff.submit(Echo(2))).value)

    assert anyio.run(one) == 20
    assert runner.batches == [[1], [2]]
    handoff.stop()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_gets_a_thread_of_its_own() -> None:
    runner = Runner()
    handoff = Handoff(runner, name="test")

    async def one(n: int) -> int:
        with anyio.fail_after(5):  # the parent's thread is not in the child: waiting on it never ends
            return int((await handoff.submit(Echo(n))).value)

    assert anyio.run(one, 1) == 10  # the parent's thread is running now
    pid = os.fork()
    if pid == 0:  # pragma: no cover  (the child reports through its exit code)
        try:
            code = 0 if anyio.run(one, 2) == 20 else 1
        except BaseException:
            code = 2
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    handoff.stop()
