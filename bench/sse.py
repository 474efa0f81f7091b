"""(g) SSE events per second: the jeeves server (the app `jeeves serve` runs) to its clients.

The server runs in its own process (uvicorn on 127.0.0.1, a free port, the same
`jeeves.server.serve.serve` as `jeeves serve`) with two architectures in its catalog:

- `nested`: the bench's supervisor → supervisor → ActorCritic run (10 model calls, ~52
  events) with the instant fake model, as (e) runs it in-process;
- `stream`: one agent whose fake model streams `--words` words, one `model.delta` each
  (a long answer streamed token by token); `fan`: the same with 1,000 words.

The client reads the raw HTTP response from an asyncio socket in 1 MiB reads and counts
messages with `bytes.count` (it asks `Connection: close`, so the body ends at EOF), so
it costs a few Python calls per TCP read, not per event: the figures are the server's.
After the clock stops it checks that the ids are exactly 1, 2, ... N (or after the
`Last-Event-ID`) and that `event: end` came last. Client and server share this machine's
2 cores.

Four figures:

1. `live_nested`: `POST /runs` then follow the nested run to its end, runs one after
   another (run start, the run itself and HTTP included: bounded by (e)'s rate).
2. `live_stream`: the same for one `stream` run, followed live while it streams.
3. `reattach`: the finished `stream` run read again from `Last-Event-ID: 0`: what the
   server's SSE path delivers to one client (no run behind it).
4. `fanout`: `--followers` clients follow one `fan` run from its start; events/s is
   all events all clients read over the wall time, and `encodes` is how many times an
   event was turned into JSON in the server process during that run (every
   `model_dump_json` of a jeeves event, counted there): one per event means the
   followers shared the bytes.

Prints JSON; run by `jeeves_scenarios.py --mode sse`.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))  # this checkout's jeeves, in the server process too

from jeeves.messages import ModelRequest, ModelResponse, Usage  # noqa: E402
from jeeves.models.base import DeltaSink  # noqa: E402

ID_LINE = re.compile(rb"(?:^|\n)id: (\d+)\n")
FAN_WORDS = 1_000
"""Deltas of the run the followers share (100 followers: ~100,000 events read in all)."""


class WordsModel:
    """A fake provider streaming `words` words, one delta each (a `jeeves.ModelClient`)."""

    model_name = "words"

    def __init__(self, words: int) -> None:
        self.words = words

    async def complete(self, request: ModelRequest, *, on_delta: DeltaSink | None = None) -> ModelResponse:
        await asyncio.sleep(0)
        for i in range(self.words):
            if on_delta is not None:
                await on_delta(f"w{i} ")
        usage = Usage(input_tokens=10, output_tokens=self.words, model_calls=1)
        return ModelResponse(text="done", usage=usage, model=request.model, finish_reason="stop")


async def _in_process(words: int, runs: int) -> dict[str, Any]:
    """The `stream` run read through `jeeves.stream` in this process: what SSE adds to."""
    import jeeves

    rates = []
    events = 0
    for _ in range(runs + 1):  # the first warms up
        t = time.perf_counter()
        events = 0
        async with jeeves.stream(jeeves.Agent("You write."), "Write.", model=WordsModel(words)) as stream:
            async for _ in stream:
                events += 1
        rates.append(events / (time.perf_counter() - t))
    return {"events": events, "runs": runs, "events_per_s": statistics.median(rates[1:])}


def _arg(name: str, default: int) -> int:
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def serve(port: int, words: int) -> None:
    """The server process: the bench's runs behind jeeves.server, on 127.0.0.1:port."""
    import jeeves_scenarios as js
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from jeeves import Agent
    from jeeves.events import BaseEvent
    from jeeves.models.router import Router
    from jeeves.server.app import create_app
    from jeeves.server.serve import serve as run_server

    encodes = 0
    dump = BaseEvent.model_dump_json

    def counting(self: Any, **kwargs: Any) -> str:
        nonlocal encodes
        encodes += 1
        return dump(self, **kwargs)

    BaseEvent.model_dump_json = counting  # type: ignore[method-assign]  # every event's JSON, however made

    async def count(request: Request) -> JSONResponse:
        return JSONResponse({"encodes": encodes})

    js.build()
    words_router = Router({"default": WordsModel(words)})  # one delta per word
    fan_router = Router({"default": WordsModel(FAN_WORDS)})
    app = create_app(
        {
            "nested": js.ARCHS["e"],
            "stream": lambda: (Agent("You write."), words_router),
            "fan": lambda: (Agent("You write."), fan_router),
        },
        router=Router().override({"default": js.NESTED_MODEL}),
        retention_s=600,
        max_runs=4,
    )
    app.router.routes.append(Route("/bench/encodes", count))
    run_server(app, host="127.0.0.1", port=port, log_level="warning")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _read_events(port: int, session_id: str, last_event_id: int = 0) -> bytes:
    """The whole SSE body of `GET /runs/{id}/events`, read raw (chunked framing included)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = (
        f"GET /runs/{session_id}/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Accept: text/event-stream\r\nLast-Event-ID: {last_event_id}\r\nConnection: close\r\n\r\n"
    )
    writer.write(head.encode())
    parts = []
    while data := await reader.read(1 << 20):
        parts.append(data)
    writer.close()
    return b"".join(parts)


def _check(body: bytes, after: int) -> int:
    """The events in `body`; fails unless their ids are after+1, after+2, ... and `end` is last."""
    if not body.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"the server answered {body[:200]!r}")
    ids = [int(i) for i in ID_LINE.findall(body)]
    if ids != list(range(after + 1, after + 1 + len(ids))):
        raise RuntimeError(f"ids out of order or missing after {after}: {ids[:10]}...")
    if body.rfind(b"event: end\n") < body.rfind(b"\nid: "):
        raise RuntimeError("`event: end` was not the last message")
    return len(ids)


async def _start(client: Any, architecture: str) -> str:
    started = await client.post("/runs", json={"architecture": architecture, "task": "Write add(a, b)."})
    started.raise_for_status()
    return str(started.json()["session_id"])


async def _live(client: Any, port: int, architecture: str, runs: int) -> dict[str, Any]:
    for _ in range(min(3, runs)):  # warm-up
        _check(await _read_events(port, await _start(client, architecture)), 0)
    per_run: list[float] = []
    events = 0
    bodies = []
    t0 = time.perf_counter()
    for _ in range(runs):
        t = time.perf_counter()
        body = await _read_events(port, await _start(client, architecture))
        events += body.count(b"\nid: ")
        per_run.append(time.perf_counter() - t)
        bodies.append(body)
    wall = time.perf_counter() - t0
    if sum(_check(b, 0) for b in bodies) != events:
        raise RuntimeError("the counted events disagree with the ids")
    return {
        "runs": runs,
        "events_per_run": events // runs,
        "events_per_s": events / wall,
        "median_run_ms": statistics.median(per_run) * 1e3,
    }


async def _reattach(port: int, session_id: str, repeats: int) -> dict[str, Any]:
    rates = []
    events = 0
    for _ in range(repeats):
        t = time.perf_counter()
        body = await _read_events(port, session_id)
        events = body.count(b"\nid: ")
        rates.append(events / (time.perf_counter() - t))
        _check(body, 0)
    return {"events": events, "repeats": repeats, "events_per_s": statistics.median(rates)}


async def _fanout(client: Any, port: int, followers: int) -> dict[str, Any]:
    before = (await client.get("/bench/encodes")).json()["encodes"]
    session_id = await _start(client, "fan")
    t0 = time.perf_counter()
    bodies: list[bytes] = []

    async def follow() -> None:
        bodies.append(await _read_events(port, session_id))

    async with anyio.create_task_group() as group:
        for _ in range(followers):
            group.start_soon(follow)
    wall = time.perf_counter() - t0
    total = sum(_check(b, 0) for b in bodies)
    per_client = total // followers
    encodes = (await client.get("/bench/encodes")).json()["encodes"] - before
    return {
        "followers": followers,
        "events_per_follower": per_client,
        "events_per_s": total / wall,
        "wall_ms": wall * 1e3,
        "encodes": encodes,
        "identical": len({_messages(b) for b in bodies}) == 1,
    }


def _messages(body: bytes) -> bytes:
    """The SSE messages of a raw chunked body, framing removed (chunks differ per follower)."""
    _, _, rest = body.partition(b"\r\n\r\n")
    out = []
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out.append(rest[:size])
        rest = rest[size + 2 :]
    return b"".join(out)


async def _client(port: int, runs: int, followers: int) -> dict[str, Any]:
    import httpx

    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
        for _ in range(200):  # wait for the server to listen
            try:
                (await client.get("/architectures")).raise_for_status()
                break
            except httpx.TransportError:
                await asyncio.sleep(0.05)
        nested = await _live(client, port, "nested", runs)
        stream = await _live(client, port, "stream", max(2, runs // 10))
        last = await _start(client, "stream")
        _check(await _read_events(port, last), 0)
        reattach = await _reattach(port, last, max(3, runs // 5))
        fanout = await _fanout(client, port, followers)
    local = await _in_process(stream["events_per_run"] - 3, 3)
    return {
        "events_per_s": reattach["events_per_s"],
        "followers": fanout["followers"],
        "encodes_per_event": fanout["encodes"] / fanout["events_per_follower"],
        "live_nested": nested,
        "live_stream": stream,
        "reattach": reattach,
        "fanout": fanout,
        "in_process_stream": local,
        "summary": (
            f"one client: **{reattach['events_per_s']:,.0f} events/s** re-reading a finished run of "
            f"{reattach['events']:,} events (the server's SSE path alone); "
            f"{stream['events_per_s']:,.0f} events/s following a run that streams "
            f"{stream['events_per_run']:,} deltas live (the same run read in-process through "
            f"`jeeves.stream`: {local['events_per_s']:,.0f} events/s); {nested['events_per_s']:,.0f} events/s over "
            f"{nested['runs']} nested runs one after another ({nested['events_per_run']} events, "
            f"{nested['median_run_ms']:.1f} ms per run median, run start and the run itself included; "
            f"in-process it is (e)). {fanout['followers']} followers of one run of "
            f"{fanout['events_per_follower']:,} events: {fanout['events_per_s']:,.0f} events/s in all, "
            f"{fanout['encodes']:,} JSON encodings ({fanout['encodes'] / fanout['events_per_follower']:.2f} per event), "
            f"{'identical' if fanout['identical'] else 'DIFFERENT'} streams."
        ),
    }


def main(versions: Mapping[str, str]) -> None:
    port = _free_port()
    words = _arg("--words", 10_000)
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(port), "--words", str(words)], cwd=BENCH
    )
    try:
        result = asyncio.run(_client(port, _arg("--runs", 30), _arg("--followers", 100)))
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(json.dumps({"versions": dict(versions), "g": result}))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(int(sys.argv[2]), _arg("--words", 10_000))
