"""How the tests wait: on an event, and on a polled condition only where nothing can tell them.

A test waits for what it needs to have happened: an `anyio.Event` the code under test sets, a
line a child process prints (`tests.conftest.wait_for_line`), a port that accepts, a report a
child sends (`reports`), a thread gate (`ThreadGate`). Some conditions only another process's
database can answer (a heartbeat row, an advisory lock, a journal a subprocess writes): those
are polled here and nowhere else, by `wait_until` (blocking) and `eventually` (async), which
fail naming what they waited for. A child that must stay alive until the test kills it blocks
in `hang_until_killed`, not in a long sleep. `tests/test_habits.py` keeps other sleeps out.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import NoReturn, TypeVar

import anyio
import anyio.from_thread
from anyio.abc import SocketListener
from anyio.lowlevel import EventLoopToken, current_token
from anyio.streams.buffered import BufferedByteReceiveStream

__all__ = ["Reports", "ThreadGate", "eventually", "hang_until_killed", "reports", "wait_until"]

T = TypeVar("T")

POLL_S = 0.02
"""How often a polled condition is looked at again (the one poll interval of the suite)."""


def _timed_out(what: str, within_s: float) -> AssertionError:
    return AssertionError(f"timed out after {within_s:g} s waiting for {what}")


def wait_until(predicate: Callable[[], object], what: str, within_s: float = 30.0) -> None:
    """Block until `predicate()` is true; fail naming `what` after `within_s` seconds (a hang
    guard, not a speed check). Only for a condition nothing signals."""
    deadline = time.monotonic() + within_s
    while not predicate():
        if time.monotonic() > deadline:
            raise _timed_out(what, within_s)
        time.sleep(POLL_S)


async def eventually(probe: Callable[[], Awaitable[T]], what: str, within_s: float = 30.0) -> T:
    """Await `probe()` until it returns something true, and return that; fail naming `what`
    after `within_s` seconds. Only for a condition nothing signals (another process's state)."""
    with anyio.move_on_after(within_s):
        while not (found := await probe()):  # noqa: ASYNC110 - the one poll: nothing signals these conditions
            await anyio.sleep(POLL_S)
        return found
    raise _timed_out(what, within_s)


class ThreadGate:
    """A gate a test thread opens (`open()`) and code on any event loop waits for (`await
    wait()`), with no polling: `open` wakes each waiter on its own loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._opened = False
        self._waiters: list[tuple[EventLoopToken, anyio.Event]] = []

    def open(self) -> None:
        with self._lock:
            self._opened = True
            waiters, self._waiters = self._waiters, []
        for token, event in waiters:
            anyio.from_thread.run_sync(event.set, token=token)

    async def wait(self) -> None:
        waiter = (current_token(), anyio.Event())
        with self._lock:
            if self._opened:
                return
            self._waiters.append(waiter)
        try:
            await waiter[1].wait()
        finally:
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)


class Reports:
    """A port on 127.0.0.1 that a child process reports to: it connects to `port` and sends a
    line; `await receive()` is that line. Each reporter's connection stays open until the
    `reports()` block ends, so a child can block reading it (it stays alive exactly that long)."""

    def __init__(self, listener: SocketListener, held: AsyncExitStack) -> None:
        self._listener, self._held = listener, held
        self.port: int = listener.extra(anyio.abc.SocketAttribute.local_port)

    async def receive(self) -> str:
        stream = await self._listener.accept()
        self._held.push_async_callback(stream.aclose)
        line = await BufferedByteReceiveStream(stream).receive_until(b"\n", 4096)
        return line.decode()


@asynccontextmanager
async def reports() -> AsyncIterator[Reports]:
    """A `Reports` port for the duration of the block."""
    async with AsyncExitStack() as held:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
        held.push_async_callback(listener.aclose)
        [first] = listener.listeners
        yield Reports(first, held)


def hang_until_killed() -> NoReturn:
    """Block this process until the test kills it. It reads stdin, which the test holds open
    (start the child with `stdin=subprocess.PIPE`); should the test go away first, its end of
    the pipe closes and the process exits at once instead of going on."""
    sys.stdin.read()
    os._exit(70)
