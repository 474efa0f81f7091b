"""One open connection to an MCP server, held by a task of the scope that opened it.

The `mcp` SDK's client is an async context manager with task groups inside, and anyio
requires a cancel scope to be left by the task that entered it. A connection opened lazily
(by the first tool call of a run, in some tool task) therefore cannot be entered by that
task: it is entered by a *holder* task started in the task group of the scope the agent (or
the user, `async with server:`) opened, and left by the same holder when the scope closes.

A server that dies takes only its holder down: the failure is kept as `fault` (the next
call reports it and opens a new connection), never raised into the run's task group.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus

from jeeves.errors import JeevesError
from jeeves.mcp.client.asks import InFlight

__all__ = ["Connection", "MCPServerError"]


class MCPServerError(JeevesError):
    """An MCP server could not be reached: it did not start, or did not answer its handshake."""


class Connection:
    """The live client of one server within one scope; opened at first use, reopened after a death."""

    def __init__(
        self,
        name: str,
        group: TaskGroup,
        connect: Callable[[Connection], AbstractAsyncContextManager[Any]],
        startup_timeout_s: float,
    ) -> None:
        self.name = name
        self._group = group
        self._connect = connect
        self._startup = startup_timeout_s
        self._lock = anyio.Lock()
        self._client: Any = None
        self._closing = anyio.Event()
        self.changed = True
        """The server's tool list may differ from `listing` (never listed, or `list_changed`)."""
        self.relist = False
        """The server would not say when its list changes: ask it every turn."""
        self.listing: list[dict[str, Any]] | None = None
        self.fault: str | None = None
        """Why the last connection ended, when it ended by itself."""
        self.in_flight: dict[int, InFlight] = {}
        """The tool calls in flight on this connection (a server's sampling or elicitation
        request is answered through the one call in flight, `jeeves.mcp.client.asks`)."""

    @property
    def is_open(self) -> bool:
        return self._client is not None

    async def client(self) -> Any:
        """The open client, connecting first if needed; `MCPServerError` when that fails."""
        async with self._lock:
            if self._client is None:
                self._closing = anyio.Event()
                try:
                    with anyio.fail_after(self._startup):
                        self._client = await self._group.start(self._hold)
                except TimeoutError:
                    raise MCPServerError(
                        f"MCP server {self.name!r} did not finish its handshake within {self._startup:g} s; "
                        f"check that it starts (run its command by hand) or raise startup_timeout_s."
                    ) from None
                except Exception as exc:
                    raise MCPServerError(
                        f"MCP server {self.name!r} could not be started or reached: {_describe(exc)}. "
                        f"Check its command (or URL), its arguments and its environment."
                    ) from exc
                self.changed, self.relist = True, False
            return self._client

    async def _hold(self, *, task_status: TaskStatus[Any]) -> None:
        started: Any = None
        closing = self._closing
        try:
            async with self._connect(self) as client:
                task_status.started(client)
                started = client
                await closing.wait()
        except Exception as exc:
            if started is None:
                raise
            self.fault = _describe(exc)
        finally:
            if started is not None and self._client is started:
                self._client = None

    def drop(self, why: str) -> None:
        """Give up this connection (its server died or broke the protocol); the next call reconnects."""
        self.fault = why
        self._client = None
        self._closing.set()

    def close(self) -> None:
        self._closing.set()


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    text = str(exc) or "no message"
    return f"{type(exc).__name__}: {text}"
