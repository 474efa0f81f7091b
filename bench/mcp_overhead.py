"""What an MCP tool call costs over a Python tool, and a served architecture over `jeeves.run`.

Tool calls: one Agent run making `--calls` calls of `echo(message)` (then a final reply),
with a ScriptedModel that answers at once, so the rows differ only in where `echo` runs:

- python: a Python `echo` tool (in the event loop);
- mcp stdio: server-everything's `echo` over stdio (the server started once, outside the timing,
  by holding it open with `async with`);
- mcp http: the same server's Streamable HTTP transport on a loopback port.

Served architecture: the `mcp` SDK's client calling `jeeves mcp serve` (stdio) on an agent that
makes one tool call, against `jeeves.run` of the same agent in this process.

Needs node and `npm ci --prefix tests/mcp/servers`. Prints a table and writes
bench/results/MCP_OVERHEAD.json. Run: `python bench/mcp_overhead.py [--calls N] [--runs N]`.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import jeeves  # noqa: E402
from jeeves import Agent, tool  # noqa: E402
from jeeves.mcp import MCPServer  # noqa: E402
from jeeves.testing import Reply, ScriptedModel, call  # noqa: E402

SERVERS = REPO / "tests" / "mcp" / "servers"
EVERYTHING = SERVERS / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
LOOPBACK = SERVERS / "loopback.mjs"


@tool
def echo(message: str) -> str:
    """Echo the message."""
    return f"Echo: {message}"


def _script(calls: int) -> ScriptedModel:
    steps: list[Any] = [Reply(tool_calls=[call("echo", {"message": f"m{i}"})]) for i in range(calls)]
    return ScriptedModel([*steps, "done"])


async def _per_call(tools: list[Any], calls: int, runs: int) -> float:
    """Median seconds per tool call over `runs` runs (the run's own overhead divided in)."""
    times = []
    for _ in range(runs):
        agent = Agent("Echo.", tools=tools, model=_script(calls), max_turns=calls + 1)
        start = time.perf_counter()
        result = await jeeves.run(agent, "echo")
        times.append((time.perf_counter() - start) / calls)
        assert result.text == "done"
    return statistics.median(times)


async def _held(server: MCPServer, calls: int, runs: int) -> float:
    async with server:
        await _per_call([server], 1, 1)  # start it and list its tools outside the timing
        return await _per_call([server], calls, runs)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_http() -> tuple[subprocess.Popen[str], str]:
    """server-everything's Streamable HTTP transport on a loopback port, once it listens."""
    port = _free_port()
    process = subprocess.Popen(
        ["node", "--import", LOOPBACK.as_uri(), str(EVERYTHING), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:
        if f"listening on port {port}" in line:
            break
    return process, f"http://127.0.0.1:{port}/mcp"


async def _http(calls: int, runs: int) -> float:
    process, url = _start_http()
    try:
        return await _held(MCPServer.http(url, name="everything"), calls, runs)
    finally:
        process.terminate()
        process.communicate(timeout=30)


async def _served(runs: int) -> tuple[float, float]:
    """Median seconds of one call of a served architecture, and of the same run in process."""
    from mcp import Client, StdioServerParameters

    from tests.mcp.served import shouter

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    target = "tests.mcp.served:shouter"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "jeeves", "mcp", "serve", target], env=env
    )
    served, direct = [], []
    async with Client(params) as client:
        for i in range(runs):
            start = time.perf_counter()
            await client.call_tool("tests_mcp_served_shouter", {"task": f"t{i}"})
            served.append(time.perf_counter() - start)
    for i in range(runs):
        start = time.perf_counter()
        await jeeves.run(shouter(), f"t{i}")
        direct.append(time.perf_counter() - start)
    return statistics.median(served), statistics.median(direct)


def _row(name: str, seconds: float, base: float) -> str:
    return f"{name:<28}{seconds * 1e3:>10.2f} ms{seconds / base:>10.1f}x"


async def main(calls: int, runs: int) -> dict[str, Any]:
    rows: dict[str, Callable[[], Awaitable[float]]] = {
        "python tool": lambda: _per_call([echo], calls, runs),
        "mcp tool, stdio": lambda: _held(MCPServer.stdio("node", str(EVERYTHING), "stdio"), calls, runs),
        "mcp tool, streamable http": lambda: _http(calls, runs),
    }
    results = {name: await measure() for name, measure in rows.items()}
    served, direct = await _served(runs)
    base = results["python tool"]
    print(f"{'per tool call':<28}{'median':>13}{'vs python':>11}")
    for name, seconds in results.items():
        print(_row(name, seconds, base))
    print(f"\n{'one run of a one-tool agent':<28}{'median':>13}{'vs direct':>11}")
    print(_row("jeeves.run, in process", direct, direct))
    print(_row("jeeves mcp serve (stdio)", served, direct))
    return {
        "calls_per_run": calls,
        "runs": runs,
        "per_tool_call_s": results,
        "served_architecture_s": {"direct": direct, "served_stdio": served},
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=50, help="tool calls per run (default: 50)")
    parser.add_argument("--runs", type=int, default=5, help="runs per row; the median is shown (default: 5)")
    args = parser.parse_args()
    figures = anyio.run(main, args.calls, args.runs)
    out = REPO / "bench" / "results" / "MCP_OVERHEAD.json"
    out.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"\nwritten to {out.relative_to(REPO)}")
