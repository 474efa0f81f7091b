"""Cheap hand-offs between a run's producer task and its reader, on asyncio and trio.

`jeeves.stream` hands every event from the task that runs the architecture to the task
that reads it. anyio's portable primitives cost more than the hand-off itself: an
`anyio.Event` resolves the backend through sniffio and wraps the backend's own event
(~2.7 µs against ~0.8 µs for an asyncio future), and a task group with `start_soon` costs
~50 µs against ~9 µs for a bare task (measured on this machine, best of 5 × 5,000). So:

- `Waiter` is a one-shot wake-up: an asyncio future on asyncio, a `trio.Event` on trio.
  Awaiting it is a checkpoint that anyio cancel scopes cancel like any other.
- `Producer` runs one coroutine function in a task of its own, inside an anyio cancel
  scope the caller can cancel, and lets the caller wait for it: a bare task on asyncio,
  an anyio task group (a trio nursery) on trio.

Both keep anyio's semantics where it matters: cancel scopes and shields inside the
producer work as anywhere (the task runs in a scope anyio knows), and cancelling the
producer waits for its shielded cleanup (journal writes) to finish.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Generator
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    import asyncio

__all__ = ["Background", "Producer", "Waiter", "is_asyncio", "running"]


def is_asyncio() -> bool:
    """Whether the running event loop is asyncio (else trio, anyio's other backend).

    asyncio is imported only when it runs, so `import jeeves` does not pay for it.
    """
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class Waiter:
    """A one-shot wake-up for one waiting task: `await waiter.wait()`, then `waiter.set()`."""

    __slots__ = ("_event", "_future")

    def __init__(self, on_asyncio: bool) -> None:
        self._future: asyncio.Future[None] | None = None
        self._event: Any = None
        if on_asyncio:
            self._future = sys.modules["asyncio"].get_running_loop().create_future()
        else:
            import trio

            self._event = trio.Event()

    def set(self) -> None:
        future = self._future
        if future is not None:
            if not future.done():
                future.set_result(None)
        else:
            self._event.set()

    def __await__(self) -> Generator[Any, None, None]:
        """`await waiter`: the future's (or trio event's) own wait, with no coroutine frame."""
        if self._future is not None:
            return self._future.__await__()
        return self._event.wait().__await__()  # type: ignore[no-any-return]

    async def wait(self) -> None:
        await self


class Background:
    """One background coroutine, `_body`, in a task of its own inside `self.scope`:
    `_start()` starts it, `cancel()` cancels it, `_stop(...)` waits for it to end.

    Plain classes with `__aenter__`/`__aexit__` build on it (`Producer`, the runner's
    stream) rather than `@asynccontextmanager`: a run in flight keeps no generator, frame
    or context-manager wrapper for it (~0.5 KiB each, for each of 1,000 concurrent runs),
    and `_body` runs the work itself (no frame for a function it would call).
    """

    __slots__ = ("_group", "_task", "scope")

    def __init__(self) -> None:
        self.scope = anyio.CancelScope()
        self._task: asyncio.Task[None] | None = None
        self._group: Any = None

    def cancel(self) -> None:
        self.scope.cancel()

    async def _body(self) -> None:
        raise NotImplementedError

    async def _start(self) -> None:
        if not is_asyncio():
            group = self._group = anyio.create_task_group()
            await group.__aenter__()
            group.start_soon(self._body)
            return
        self._task = sys.modules["asyncio"].get_running_loop().create_task(self._body())

    async def _stop(self, *exc_info: Any) -> bool | None:
        """Wait for the task to end (shielded on asyncio; a trio nursery's exit on trio),
        raising what it raised."""
        if self._group is not None:
            return await self._group.__aexit__(*exc_info)  # type: ignore[no-any-return]
        task = self._task
        assert task is not None
        if not task.done():
            with anyio.CancelScope(shield=True):
                await sys.modules["asyncio"].wait((task,))
        if not task.cancelled():
            error = task.exception()
            if error is not None:
                raise error
        return None


class Producer(Background):
    """One background coroutine function: started by `async with running(function)`,
    cancelled by `cancel()`; leaving the block waits for it to end."""

    __slots__ = ("_function",)

    def __init__(self, function: Callable[[], Awaitable[None]]) -> None:
        super().__init__()
        self._function = function

    async def _body(self) -> None:
        with self.scope:
            await self._function()

    async def __aenter__(self) -> Producer:
        await self._start()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        return await self._stop(*exc_info)


def running(function: Callable[[], Awaitable[None]]) -> Producer:
    """Run `function` in its own task while the `async with` block runs; on leaving, wait
    for it to end (cancel it first with `producer.cancel()` to stop it early).

    `function` must not raise (it keeps its own outcome); a cancelled producer ends quietly.
    """
    return Producer(function)
