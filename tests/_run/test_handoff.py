"""jeeves._run.handoff: the producer task and wake-ups behind jeeves.stream, on asyncio and trio."""

from __future__ import annotations

import anyio
import pytest

from jeeves._run.handoff import Waiter, is_asyncio, running

pytestmark = pytest.mark.anyio


async def test_a_waiter_wakes_the_task_that_waits() -> None:
    waiter = Waiter(is_asyncio())
    order: list[str] = []

    async def wake() -> None:
        order.append("set")
        waiter.set()
        waiter.set()  # a second set is harmless

    async with anyio.create_task_group() as group:
        group.start_soon(wake)
        await waiter.wait()
        order.append("woke")
    assert order == ["set", "woke"]


async def test_a_waiter_wait_is_cancelled_by_a_cancel_scope() -> None:
    waiter = Waiter(is_asyncio())
    with anyio.move_on_after(0) as scope:
        await waiter.wait()
    assert scope.cancelled_caught


async def test_leaving_waits_for_the_producer_to_finish() -> None:
    done: list[str] = []

    async def produce() -> None:
        await anyio.lowlevel.checkpoint()
        done.append("produced")

    async with running(produce):
        pass
    assert done == ["produced"]


async def test_a_cancelled_producer_finishes_its_shielded_cleanup_first() -> None:
    steps: list[str] = []
    started = anyio.Event()

    async def produce() -> None:
        try:
            started.set()
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.lowlevel.checkpoint()  # a journal write, say
                steps.append("cleaned up")

    async with running(produce) as producer:
        await started.wait()
        producer.cancel()
    assert steps == ["cleaned up"]


async def test_an_outer_cancellation_reaches_the_producer() -> None:
    steps: list[str] = []
    started = anyio.Event()

    async def produce() -> None:
        try:
            started.set()
            await anyio.sleep_forever()
        finally:
            steps.append("stopped")

    with anyio.CancelScope() as outer:
        async with running(produce) as producer:
            try:
                await started.wait()
                outer.cancel()
                await anyio.sleep_forever()
            finally:
                producer.cancel()
    assert steps == ["stopped"] and outer.cancelled_caught
