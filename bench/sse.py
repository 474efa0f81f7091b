"""(g) SSE events per second: the jeeves server (the app `jeeves serve` runs) to an httpx client.

The server runs in its own process (uvicorn on 127.0.0.1, a free port) with the bench's
nested run (supervisor → supervisor → ActorCritic, 10 model calls, ~115 events) in its
catalog and the instant fake model as its router's default. The client starts a run
with `POST /runs`, follows `GET /runs/{id}/events` to the `end` event, and counts the
events (`id:` lines). Runs one after another; events/s = events read / wall time,
run start and HTTP included. Prints JSON; run by `jeeves_scenarios.py --mode sse`.
"""

from __future__ import annotations

import asyncio
import json
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent


def serve(port: int) -> None:
    """The server process: the nested run behind jeeves.server, on 127.0.0.1:port."""
    sys.path.insert(0, str(BENCH.parent))
    import jeeves_scenarios as js

    from jeeves.models.router import Router
    from jeeves.server.app import create_app
    from jeeves.server.serve import serve as run_server

    js.build()
    app = create_app(
        {"nested": js.ARCHS["e"]}, router=Router().override({"default": js.NESTED_MODEL}), retention_s=5
    )
    run_server(app, host="127.0.0.1", port=port, log_level="warning")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _one_run(client: Any) -> int:
    started = await client.post("/runs", json={"architecture": "nested", "task": "Write add(a, b)."})
    started.raise_for_status()
    session_id = started.json()["session_id"]
    count = 0
    async with client.stream("GET", f"/runs/{session_id}/events") as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.startswith("id:"):
                count += 1
            elif line.startswith("event: end"):
                break
    return count


async def _client(port: int, runs: int) -> dict[str, Any]:
    import httpx

    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        for _ in range(100):  # wait for the server to listen
            try:
                (await client.get("/architectures")).raise_for_status()
                break
            except httpx.TransportError:
                await asyncio.sleep(0.05)
        for _ in range(min(3, runs)):
            await _one_run(client)
        per_run: list[float] = []
        events = 0
        t0 = time.perf_counter()
        for _ in range(runs):
            t = time.perf_counter()
            events += await _one_run(client)
            per_run.append(time.perf_counter() - t)
        wall = time.perf_counter() - t0
    rate = events / wall
    return {
        "runs": runs,
        "events_per_run": events // runs,
        "events_per_s": rate,
        "median_run_ms": statistics.median(per_run) * 1e3,
        "summary": (
            f"{events // runs} events per nested run over HTTP, {runs} runs one after another: "
            f"**{rate:,.0f} events/s** to the httpx client ({statistics.median(per_run) * 1e3:.1f} ms per run, "
            f"median; the same run in-process through `jeeves.stream` is (e))."
        ),
    }


def main(versions: Mapping[str, str]) -> None:
    port = _free_port()
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)], cwd=BENCH)
    try:
        runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 30
        result = asyncio.run(_client(port, runs))
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(json.dumps({"versions": dict(versions), "g": result}))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(int(sys.argv[2]))
