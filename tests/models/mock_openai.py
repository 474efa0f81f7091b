"""A small OpenAI-compatible chat server on 127.0.0.1, scripted per test.

It lets the litellm adapter's tests go through litellm's real HTTP code path (the
OpenAI SDK, httpx, SSE parsing) without a network or a key. Each request to
`/v1/chat/completions` takes the next behaviour from the script: a text reply, a tool
call (or several), an HTTP error, a malformed body, or a fault: an HTML page with status
200, a stream cut off before its finish reason, a server that stops sending. A request that finds the script
empty gets a 500 and is recorded in `unexpected`, so the fixture can fail the test
instead of letting a retry hide it.

Flows whose call order is not worth scripting reply by reply (a supervisor's parallel
workers) use a responder instead: `serve(responder=fn)`, where `fn(request_body)` returns
the behaviour for that request. Scripted behaviours still come first.

The server runs uvicorn in a background thread on a port the OS picks, and stops when
the `serve()` context manager exits.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.uvicorn_thread import serving

_WORDS = re.compile(r"\s*\S+\s*")


@dataclass(frozen=True)
class Text:
    """A text reply; streamed one word per chunk (`gap_s` apart: a slow but steady stream)."""

    text: str
    prompt_tokens: int = 12
    completion_tokens: int = 7
    gap_s: float = 0.0


@dataclass(frozen=True)
class Tool:
    """A tool call reply; streamed with the arguments split into several pieces."""

    name: str
    arguments: str
    id: str = "call_abc"
    prompt_tokens: int = 20
    completion_tokens: int = 9


@dataclass(frozen=True)
class Fail:
    """An HTTP error with an OpenAI-style error body."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "scripted failure"
    raw: str | None = None
    """A body sent as is (an HTML error page from a proxy, say) instead of the JSON error."""


@dataclass(frozen=True)
class Malformed:
    """A 200 whose body is not what a chat completion looks like."""

    body: str = '{"id": "chatcmpl-1", "choices": [ {"index": 0, "mess'


@dataclass(frozen=True)
class Html:
    """A 200 with an HTML page (a captive portal, a proxy's login page), whatever was asked."""

    body: str = "<html><head><title>Sign in</title></head><body>Please sign in.</body></html>"


@dataclass(frozen=True)
class CutOff:
    """A stream that sends the first `words` words of `text`, then closes cleanly:
    no finish reason, no `[DONE]`, as when a proxy drops the upstream connection."""

    text: str
    words: int = 2


@dataclass(frozen=True)
class Hang:
    """Accept the request, then send nothing more until the client goes away.

    Streamed, the reply's headers and the first `words` words of `text` go out first (a
    stream that stalls mid-answer); otherwise nothing is sent at all (a hung server).
    """

    text: str = ""
    words: int = 0


@dataclass(frozen=True)
class Calls:
    """Several tool calls in one reply (parallel delegations, say), after optional text."""

    tools: tuple[Tool, ...]
    text: str = ""
    prompt_tokens: int = 20
    completion_tokens: int = 9


Behaviour = Text | Tool | Calls | Fail | Malformed | Html | CutOff | Hang
Responder = Callable[[dict[str, Any]], Behaviour]
"""Decides a reply from a request's JSON body."""
_Reply = Text | Tool | Calls


def _chunk(model: str, delta: dict[str, Any] | None, finish: str | None = None) -> str:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": model,
        "choices": choices,
    }
    return f"data: {json.dumps(body)}\n\n"


def _usage(reply: _Reply) -> dict[str, int]:
    total = reply.prompt_tokens + reply.completion_tokens
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": total,
    }


def _calls(reply: Tool | Calls) -> Calls:
    if isinstance(reply, Calls):
        return reply
    return Calls((reply,), prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens)


def _stream_events(reply: _Reply, model: str) -> Iterator[str]:
    if isinstance(reply, Text):
        yield _chunk(model, {"role": "assistant", "content": ""})
        for word in _WORDS.findall(reply.text):
            yield _chunk(model, {"content": word})
        yield _chunk(model, {}, "stop")
    else:
        calls = _calls(reply)
        if calls.text:
            yield _chunk(model, {"role": "assistant", "content": calls.text})
        for index, tool in enumerate(calls.tools):
            head = {
                "index": index,
                "id": tool.id,
                "type": "function",
                "function": {"name": tool.name, "arguments": ""},
            }
            opening = {"role": "assistant", "content": None} if index == 0 and not calls.text else {}
            yield _chunk(model, {**opening, "tool_calls": [head]})
            third = max(1, len(tool.arguments) // 3)
            for start in range(0, len(tool.arguments), third):
                piece = {"index": index, "function": {"arguments": tool.arguments[start : start + third]}}
                yield _chunk(model, {"tool_calls": [piece]})
        yield _chunk(model, {}, "tool_calls")
    usage_chunk = json.loads(_chunk(model, None)[len("data: ") :])
    usage_chunk["usage"] = _usage(reply)
    yield f"data: {json.dumps(usage_chunk)}\n\n"
    yield "data: [DONE]\n\n"


def _completion(reply: _Reply, model: str) -> dict[str, Any]:
    if isinstance(reply, Text):
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        finish = "stop"
    else:
        calls = _calls(reply)
        tool_calls = [
            {"id": t.id, "type": "function", "function": {"name": t.name, "arguments": t.arguments}}
            for t in calls.tools
        ]
        message = {"role": "assistant", "content": calls.text or None, "tool_calls": tool_calls}
        finish = "tool_calls"
    choice = {"index": 0, "message": message, "finish_reason": finish}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [choice],
        "usage": _usage(reply),
    }


class MockOpenAI:
    """The scripted server's state: the script, and every request it received."""

    def __init__(self, responder: Responder | None = None) -> None:
        self.base_url = ""
        self.responder = responder
        """Answers each request the script does not cover, if set."""
        self.requests: list[dict[str, Any]] = []
        """Each request's JSON body, in order."""
        self.headers: list[dict[str, str]] = []
        self.unexpected: list[dict[str, Any]] = []
        """Requests that arrived when the script was empty and no responder was set."""
        self._script: deque[Behaviour] = deque()
        self._lock = threading.Lock()

    def script(self, *behaviours: Behaviour) -> None:
        """Queue behaviours for the next requests, in order."""
        with self._lock:
            self._script.extend(behaviours)

    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self.requests.clear()
            self.headers.clear()
            self.unexpected.clear()

    @property
    def models(self) -> list[str]:
        """The model named by each request, in order."""
        return [body.get("model", "") for body in self.requests]

    def calls(self, model: str) -> int:
        return Counter(self.models)[model]

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        with self._lock:
            self.requests.append(body)
            self.headers.append(dict(request.headers))
            behaviour = self._script.popleft() if self._script else None
            if behaviour is None and self.responder is None:
                self.unexpected.append(body)
        if behaviour is None and self.responder is not None:
            try:
                behaviour = self.responder(body)
            except Exception as exc:  # the test fails on `unexpected`, with the reason
                with self._lock:
                    self.unexpected.append({**body, "responder_error": repr(exc)})
                return JSONResponse({"error": {"message": f"responder failed: {exc!r}"}}, status_code=500)
        if behaviour is None:
            return JSONResponse({"error": {"message": "mock script is empty"}}, status_code=500)
        return await self._respond(behaviour, body, request)

    async def _respond(self, behaviour: Behaviour, body: dict[str, Any], request: Request) -> Response:
        model = str(body.get("model", ""))
        if isinstance(behaviour, Html):
            return Response(behaviour.body, media_type="text/html")
        if isinstance(behaviour, CutOff | Hang) and body.get("stream"):
            events = _stream_events(Text(behaviour.text), model)
            first = [
                next(events) for _ in range(1 + min(behaviour.words, len(_WORDS.findall(behaviour.text))))
            ]
            stall = isinstance(behaviour, Hang)
            return StreamingResponse(_then_stall(first, stall=stall), media_type="text/event-stream")
        if isinstance(behaviour, Hang):
            await _until_disconnected(request)
            return Response(status_code=499)
        if isinstance(behaviour, CutOff):
            raise ValueError("CutOff is a streamed behaviour; use Malformed for a whole reply")
        if isinstance(behaviour, Fail) and behaviour.raw is not None:
            return Response(behaviour.raw, behaviour.status, behaviour.headers, media_type="text/html")
        if isinstance(behaviour, Fail):
            error = {"error": {"message": behaviour.message, "type": "scripted", "code": behaviour.status}}
            return JSONResponse(error, status_code=behaviour.status, headers=behaviour.headers)
        if isinstance(behaviour, Malformed):
            if body.get("stream"):
                return StreamingResponse(_once(f"data: {behaviour.body}\n\n"), media_type="text/event-stream")
            return Response(behaviour.body, media_type="application/json")
        if body.get("stream"):
            gap_s = behaviour.gap_s if isinstance(behaviour, Text) else 0.0
            events = _aiter(_stream_events(behaviour, model), gap_s)
            return StreamingResponse(events, media_type="text/event-stream")
        return JSONResponse(_completion(behaviour, model))

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])


async def _aiter(events: Iterator[str], gap_s: float = 0.0) -> AsyncIterator[str]:
    for event in events:
        yield event
        if gap_s:
            await anyio.sleep(gap_s)  # time, not sync: a slow but steady stream is what is served


async def _once(event: str) -> AsyncIterator[str]:
    yield event


async def _then_stall(events: list[str], *, stall: bool) -> AsyncIterator[str]:
    """`events`, then (when `stall`) nothing until starlette cancels us as the client leaves."""
    for event in events:
        yield event
    if stall:
        await anyio.sleep_forever()


async def _until_disconnected(request: Request) -> None:
    """Wait, sending nothing, until the client closes the connection (the body is already read)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


@contextmanager
def serve(responder: Responder | None = None) -> Iterator[MockOpenAI]:
    """Run a MockOpenAI on a free 127.0.0.1 port until the block exits."""
    mock = MockOpenAI(responder)
    config = {"log_level": "warning", "lifespan": "off", "access_log": False, "timeout_graceful_shutdown": 2}
    with serving(mock.app(), "the mock OpenAI server", **config) as port:
        mock.base_url = f"http://127.0.0.1:{port}/v1"
        yield mock
