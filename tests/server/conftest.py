"""Server test helpers: an in-process ASGI client, a real uvicorn on 127.0.0.1, an SSE reader."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import httpx
from starlette.applications import Starlette
from starlette.types import Receive, Scope, Send

from jeeves import Agent, Context, Output, ScriptedModel
from jeeves.events import RoundStarted
from tests.uvicorn_thread import serving
from tests.waiting import ThreadGate

T = TypeVar("T")


@dataclass
class Sse:
    """One SSE message as a client sees it."""

    data: str
    id: str | None = None
    event: str | None = None

    def json(self) -> Any:
        return json.loads(self.data)


def parse_sse(lines: Iterable[str]) -> Iterator[Sse | None]:
    """SSE messages from text lines; yields None for each comment (keep-alive)."""
    data: list[str] = []
    fields: dict[str, str] = {}
    for line in lines:
        if line == "":
            if data:
                yield Sse("\n".join(data), fields.get("id"), fields.get("event"))
            data, fields = [], {}
        elif line.startswith(":"):
            yield None
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            else:
                fields[name] = value


def messages(text: str) -> list[Sse]:
    """Every SSE message in a complete body (comments dropped)."""
    return [m for m in parse_sse(text.split("\n")) if m is not None]


@asynccontextmanager
async def asgi_client(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client calling `app` in-process, with the app's lifespan (its run registry) open."""
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            yield client


class Blocked:
    """Emits one event, then waits until cancelled: a run that only DELETE or a disconnect ends."""

    name = "blocked"

    async def run(self, ctx: Context, task: str) -> Output:
        await ctx.emit(RoundStarted(session_id=ctx.session_id, round=0))
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


class Gated:
    """Runs one agent, waits for `gate` (opened by a test thread), runs another."""

    name = "gated"

    def __init__(self, gate: ThreadGate) -> None:
        self.gate = gate

    async def run(self, ctx: Context, task: str) -> Output:
        await ctx.run(Agent("First."), task, role="first")
        await self.gate.wait()
        second = await ctx.run(Agent("Second."), task, role="second")
        return Output.of(second.text)


def gated_model() -> ScriptedModel:
    return ScriptedModel({"first": ["one two three"], "second": ["four five six"]})


class _LoopProbe:
    """Wraps an ASGI app to learn which event loop the server runs it on."""

    def __init__(self, app: Starlette) -> None:
        self.app = app
        self.loop: asyncio.AbstractEventLoop | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.loop = asyncio.get_running_loop()
        await self.app(scope, receive, send)


@dataclass
class LiveServer:
    """A uvicorn server on 127.0.0.1 in a thread, serving `app`."""

    url: str
    app: Starlette
    probe: _LoopProbe

    def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on the server's loop and return its result (to inspect server state safely)."""
        assert self.probe.loop is not None

        async def run() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self.probe.loop).result(timeout=30)

    def wait(self, until: Callable[[], Coroutine[Any, Any, object]], within_s: float = 30) -> None:
        """Await `until()` on the server's loop (an event of the app: a run's end, say)."""
        assert self.probe.loop is not None
        asyncio.run_coroutine_threadsafe(until(), self.probe.loop).result(timeout=within_s)

    def task_count(self) -> int:
        """How many asyncio tasks the server's loop has right now."""
        return self.call(lambda: len(asyncio.all_tasks()))


@contextmanager
def live_server(app: Starlette) -> Iterator[LiveServer]:
    """Serve `app` with uvicorn on a free 127.0.0.1 port for the duration of the block."""
    probe = _LoopProbe(app)
    with serving(probe, "uvicorn", log_level="warning", lifespan="on") as port:
        yield LiveServer(f"http://127.0.0.1:{port}", app, probe)
