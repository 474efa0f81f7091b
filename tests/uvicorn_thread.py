"""uvicorn on a free 127.0.0.1 port in a thread, for the tests' servers (the live jeeves app,
the fake providers): `serving` returns once the server says it serves, never by polling."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

__all__ = ["serving"]


class _Server(uvicorn.Server):
    """A uvicorn server that sets `settled` when its startup is over (serving, or failed)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.settled = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets=sockets)
        finally:
            self.settled.set()


@contextmanager
def serving(app: Any, what: str, **config: Any) -> Iterator[int]:
    """Serve `app` (uvicorn `config` options) for the block; yields the port once it serves.

    Fails naming `what` when the server ends before serving; on leaving, the server is
    asked to exit and must stop within 30 s.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    server = _Server(uvicorn.Config(app, **config))

    def run() -> None:
        try:
            server.run(sockets=[sock])
        finally:
            server.settled.set()  # ended before its startup did: the wait below must not hang

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        assert server.settled.wait(60), f"{what} did not start within 60 s"
        assert server.started, f"{what} did not start (uvicorn ended during its startup)"
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
    assert not thread.is_alive(), f"{what} did not stop"
