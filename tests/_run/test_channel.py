from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from jeeves._run.channel import EventChannel
from jeeves.events import ModelDelta

pytestmark = pytest.mark.anyio


async def test_blocked_producers_keep_arrival_order_and_seq() -> None:
    channel = EventChannel(max_buffer=1)
    received: list[tuple[int, str]] = []

    async def produce(name: str) -> None:
        for i in range(20):
            await channel.put(ModelDelta(session_id=name, text=str(i)))

    async def consume() -> None:
        while True:
            try:
                event = await channel.get()
            except anyio.EndOfStream:
                return
            received.append((event.seq, event.session_id))
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(consume)
        async with anyio.create_task_group() as producers:
            for name in "abc":
                producers.start_soon(produce, name)
        channel.close()
    assert [s for s, _ in received] == list(range(1, 61))
    assert {n for _, n in received} == {"a", "b", "c"}


async def test_cancelled_blocked_producer_is_removed() -> None:
    channel = EventChannel(max_buffer=1)
    await channel.put(ModelDelta(session_id="a", text="1"))
    with anyio.move_on_after(0.05):
        await channel.put(ModelDelta(session_id="a", text="2"))
    assert (await channel.get()).text == "1"
    channel.close()
    with pytest.raises(anyio.EndOfStream):
        await channel.get()


async def test_offer_enqueues_without_waiting_or_says_the_caller_must_wait() -> None:
    channel = EventChannel(max_buffer=1)
    first, second = ModelDelta(session_id="a", text="1"), ModelDelta(session_id="a", text="2")
    assert channel.offer(first) and first.seq == 1
    assert not channel.offer(second) and second.seq == 0  # full: untouched, `put` it
    async with anyio.create_task_group() as group:
        group.start_soon(channel.put, second)
        assert await channel.get() is first
        assert await channel.get() is second and second.seq == 2
    channel.close()
    late = ModelDelta(session_id="a", text="3")
    assert channel.offer(late) and late.seq == 3  # closed: stamped and dropped


def test_a_reader_that_never_catches_up_keeps_order_and_a_bounded_buffer() -> None:
    """The buffer is a list read from a head index: events come out in order, and the read
    prefix is dropped (at the latest once it is half the list), so a reader that stays
    behind a large buffer neither loses events nor keeps every one it read."""
    channel = EventChannel(max_buffer=1000)
    texts: list[str] = []
    sizes: list[int] = []
    sent = 0
    for _ in range(50):
        for _ in range(100):
            assert channel.offer(ModelDelta(session_id="s", text=str(sent)))
            sent += 1
        for _ in range(90):  # always 10 more unread per round: it never catches up
            event = channel.take()
            assert event is not None
            texts.append(event.text)
        sizes.append(len(channel._buffer))
    assert texts == [str(i) for i in range(len(texts))]
    assert max(sizes) <= 2 * 1000
    channel.close()
    while (event := channel.take()) is not None:
        texts.append(event.text)
    assert texts == [str(i) for i in range(sent)] and channel.closed
