"""Run awaitables concurrently and settle their outcomes in a fixed order.

`run_all` starts every function in one task group and waits for all of them; a failure
does not cancel its siblings. Results come back in the order the functions were given,
and if any failed, the first failure *in that order* is raised (never an ExceptionGroup),
so a replay, which may finish siblings in another order, fails the same way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import anyio

__all__ = ["run_all"]

T = TypeVar("T")


async def run_all(functions: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Await every function concurrently; return results in order or raise the first error in order."""
    if len(functions) == 1:
        return [await functions[0]()]
    results: list[T | None] = [None] * len(functions)
    errors: list[Exception | None] = [None] * len(functions)

    async def settle(position: int, function: Callable[[], Awaitable[T]]) -> None:
        try:
            results[position] = await function()
        except Exception as exc:  # cancellation (a BaseException) still tears the group down
            errors[position] = exc

    async with anyio.create_task_group() as group:
        for position, function in enumerate(functions):
            group.start_soon(settle, position, function)
    for error in errors:
        if error is not None:
            raise error
    return results  # type: ignore[return-value]
