"""What the fake provider servers share: a script of replies, the requests seen, a port.

`FakeProvider` holds the script (replies and faults, taken one per request) and records
each request (path, headers, JSON body). A subclass turns a behaviour into the provider's
own wire format. `serve(provider)` runs it with uvicorn in a background thread on a port
the OS picks, on 127.0.0.1, until the block exits. A request that finds the script empty
gets a 500 and is recorded in `unexpected`, so a test fails instead of a retry hiding it.
"""

from __future__ import annotations

import gc
import json
import threading
import warnings
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.uvicorn_thread import serving


@dataclass(frozen=True)
class Reply:
    """A model's answer: text, tool calls (name, arguments), and its token counts."""

    text: str = ""
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    input_tokens: int = 11
    output_tokens: int = 5
    usage: bool = True
    """False: a stream that leaves out the provider's usage (some compatible servers do)."""


@dataclass(frozen=True)
class Truncated:
    """A stream that stops after its first `events` events, without the provider's end."""

    text: str = "cut short here"
    events: int = 3


@dataclass(frozen=True)
class Garbage:
    """A 200 whose body (whole, or a stream's one data line) is not JSON."""

    body: str = "<html><body>proxy says hi</body></html>"


@dataclass(frozen=True)
class Error:
    """An HTTP error with the provider's error body."""

    status: int
    message: str = "scripted failure"


Behaviour = Reply | Truncated | Garbage | Error


@dataclass
class Seen:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    query: dict[str, str] = field(default_factory=dict)

    @property
    def streamed(self) -> bool:
        """Whether the request asked for a stream (Anthropic's `stream`, Gemini's endpoint)."""
        return bool(self.body.get("stream")) or self.path.endswith(":streamGenerateContent")


class FakeProvider:
    """A scripted provider; subclasses speak one provider's wire format."""

    paths: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.base_url = ""
        self.requests: list[Seen] = []
        self.unexpected: list[Seen] = []
        self._script: deque[Behaviour] = deque()
        self._lock = threading.Lock()

    def script(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self._script.extend(behaviours)

    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self.requests.clear()
            self.unexpected.clear()

    def count(self, *, streamed: bool) -> int:
        """How many requests asked for a stream (or, `streamed=False`, for a whole reply)."""
        return sum(seen.streamed is streamed for seen in self.requests)

    async def _handle(self, request: Request) -> Response:
        seen = Seen(request.url.path, dict(request.headers), await request.json(), dict(request.query_params))
        with self._lock:
            self.requests.append(seen)
            behaviour = self._script.popleft() if self._script else None
            if behaviour is None:
                self.unexpected.append(seen)
        if behaviour is None:
            return JSONResponse({"error": {"message": "fake script is empty"}}, status_code=500)
        if isinstance(behaviour, Error):
            return JSONResponse(self.error_body(behaviour), status_code=behaviour.status)
        if isinstance(behaviour, Garbage) and not seen.streamed:
            return Response(behaviour.body, media_type="application/json")
        if isinstance(behaviour, Garbage):
            return _sse([f"data: {behaviour.body}\n\n"])
        if isinstance(behaviour, Truncated):
            if not seen.streamed:
                raise ValueError("Truncated is a streamed behaviour; use Garbage for a whole reply")
            return _sse(list(self.stream(Reply(behaviour.text), seen))[: behaviour.events])
        if seen.streamed:
            return _sse(list(self.stream(behaviour, seen)))
        return JSONResponse(self.whole(behaviour, seen))

    def error_body(self, error: Error) -> dict[str, Any]:
        raise NotImplementedError

    def whole(self, reply: Reply, seen: Seen) -> dict[str, Any]:
        raise NotImplementedError

    def stream(self, reply: Reply, seen: Seen) -> Iterator[str]:
        raise NotImplementedError

    def app(self) -> Starlette:
        return Starlette(routes=[Route(path, self._handle, methods=["POST"]) for path in self.paths])


async def close_litellm_clients() -> None:
    """Close the HTTP clients litellm cached for this test's event loop, while it runs, and
    collect what litellm dropped without closing.

    litellm keeps one client per provider and event loop, and after some failed calls
    (an error status on a whole reply, a stream cut short) drops a connection without
    closing it. Left to the garbage collector, its ResourceWarning would fail whichever
    later test happened to free it; what is checked here is the adapter, not litellm's pool.
    """
    from jeeves.models.litellm import _litellm

    cache = _litellm().in_memory_llm_clients_cache
    suffix = cache.update_cache_key_with_event_loop("")
    for key in [key for key in cache.cache_dict if suffix and key.endswith(suffix)]:
        client = getattr(cache.cache_dict[key], "client", cache.cache_dict[key])
        close = getattr(client, "aclose", None) or getattr(client, "close", None)
        if close is not None:
            await close()
        cache.delete_cache(key)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


def sse_event(data: dict[str, Any], name: str | None = None) -> str:
    """One server-sent event: `event: name` (when given) and its JSON data."""
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(data)}\n\n"


def _sse(events: list[str]) -> StreamingResponse:
    async def send() -> AsyncIterator[str]:
        for event in events:
            yield event

    return StreamingResponse(send(), media_type="text/event-stream")


P = TypeVar("P", bound=FakeProvider)


@contextmanager
def serve(provider: P, *, prefix: str = "") -> Iterator[P]:
    """Run `provider` on a free 127.0.0.1 port until the block exits; `base_url` is set."""
    config = {"log_level": "warning", "lifespan": "off", "access_log": False, "timeout_graceful_shutdown": 2}
    with serving(provider.app(), f"the fake {type(provider).__name__} server", **config) as port:
        provider.base_url = f"http://127.0.0.1:{port}{prefix}"
        yield provider
