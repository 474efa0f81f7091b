"""What an MCP tool call costs over a Python tool, and a served architecture over `jeeves.run`.

Tool calls: one Agent run making `--calls` calls of `echo(message)` (then a final reply),
with a ScriptedModel that answers at once, so the rows differ only in where `echo` runs:

- python: a Python `echo` tool (in the event loop);
- mcp stdio: server-everything's `echo` over stdio (the server started once, outside the timing,
  by holding it open with `async with`);
- mcp http: the same server's Streamable HTTP transport on a loopback port.

Side by side, in the same run, on the same server processes (one stdio server each, one shared
HTTP server): a peer's MCP client, the OpenAI Agents SDK's `MCPServerStdio` and
`MCPServerStreamableHttp` (bench/peers/mcp_openai_agents.py, in its own venv
bench/.venvs/openai_agents built from bench/peers/requirements-openai_agents.txt on first use),
making the same calls from an Agent whose model answers at once, with its own Python-tool row
for its baseline. `--no-peer` leaves it out.

Served architecture: the `mcp` SDK's client calling `jeeves mcp serve` (stdio) on an agent that
makes one tool call, against `jeeves.run` of the same agent in this process.

Needs node and `npm ci --prefix tests/mcp/servers`. Prints a table and writes
bench/results/MCP_OVERHEAD.json and MCP_OVERHEAD.md.
Run: `python bench/mcp_overhead.py [--calls N] [--runs N] [--no-peer]`.
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
import anyio.to_thread

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import venvs  # noqa: E402

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


PEER = REPO / "bench" / "peers" / "mcp_openai_agents.py"
PEER_REQUIREMENTS = REPO / "bench" / "peers" / "requirements-openai_agents.txt"


def _peer(url: str, calls: int, runs: int) -> dict[str, Any]:
    """The OpenAI Agents SDK's rows, measured by its own script in its own venv."""
    python = venvs.ensure_venv("openai_agents", PEER_REQUIREMENTS)
    args = ["--everything", str(EVERYTHING), "--url", url, "--calls", str(calls), "--runs", str(runs)]
    done = subprocess.run(
        [str(python), str(PEER), *args], capture_output=True, text=True, timeout=900, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"the openai-agents peer exited {done.returncode}: {done.stderr[-2000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


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
    return f"{name:<42}{seconds * 1e3:>10.2f} ms{(seconds - base) * 1e3:>+10.2f} ms{seconds / base:>8.1f}x"


def _cells(seconds: float, base: float) -> str:
    return f"{seconds * 1e3:.2f} ms | {(seconds - base) * 1e3:+.2f} ms"


def _table(figures: dict[str, Any]) -> str:
    """The figures as the markdown bench/results/MCP_OVERHEAD.md holds."""
    ours, peer = figures["per_tool_call_s"], figures.get("peer")
    head = "| per tool call | jeeves | over its python tool |"
    rule = "|---|---|---|"
    if peer:
        head += f" openai-agents {peer['version']} | over its python tool |"
        rule += "---|---|"
    lines = [head, rule]
    for name, seconds in ours.items():
        line = f"| {name} | {_cells(seconds, ours['python tool'])} |"
        if peer:
            theirs = peer["per_tool_call_s"]
            line += f" {_cells(theirs[name], theirs['python tool'])} |"
        lines.append(line)
    served = figures["served_architecture_s"]
    lines += [
        "",
        "| one run of a one-tool agent | median | over direct |",
        "|---|---|---|",
        f"| jeeves.run, in process | {_cells(served['direct'], served['direct'])} |",
        f"| jeeves mcp serve (stdio) | {_cells(served['served_stdio'], served['direct'])} |",
    ]
    return "\n".join(lines)


def _print(figures: dict[str, Any]) -> None:
    ours, peer = figures["per_tool_call_s"], figures.get("peer")
    print(f"{'per tool call':<42}{'median':>13}{'over python':>13}{'ratio':>9}")
    for name, seconds in ours.items():
        print(_row(f"jeeves: {name}", seconds, ours["python tool"]))
    if peer:
        theirs = peer["per_tool_call_s"]
        for name, seconds in theirs.items():
            print(_row(f"openai-agents: {name}", seconds, theirs["python tool"]))
    served = figures["served_architecture_s"]
    print(f"\n{'one run of a one-tool agent':<42}{'median':>13}{'over direct':>13}{'ratio':>9}")
    print(_row("jeeves.run, in process", served["direct"], served["direct"]))
    print(_row("jeeves mcp serve (stdio)", served["served_stdio"], served["direct"]))


async def main(calls: int, runs: int, peer: bool = True) -> dict[str, Any]:
    process, url = _start_http()  # one HTTP server for both clients
    try:
        rows: dict[str, Callable[[], Awaitable[float]]] = {
            "python tool": lambda: _per_call([echo], calls, runs),
            "mcp tool, stdio": lambda: _held(MCPServer.stdio("node", str(EVERYTHING), "stdio"), calls, runs),
            "mcp tool, streamable http": lambda: _held(MCPServer.http(url, name="everything"), calls, runs),
        }
        results = {name: await measure() for name, measure in rows.items()}
        theirs = await anyio.to_thread.run_sync(_peer, url, calls, runs) if peer else None
    finally:
        process.terminate()
        process.communicate(timeout=30)
    served, direct = await _served(runs)
    figures: dict[str, Any] = {
        "calls_per_run": calls,
        "runs": runs,
        "per_tool_call_s": results,
        "served_architecture_s": {"direct": direct, "served_stdio": served},
    }
    if theirs is not None:
        figures["peer"] = theirs
    _print(figures)
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=50, help="tool calls per run (default: 50)")
    parser.add_argument("--runs", type=int, default=5, help="runs per row; the median is shown (default: 5)")
    parser.add_argument("--no-peer", action="store_true", help="leave out the openai-agents rows")
    args = parser.parse_args()
    figures = anyio.run(main, args.calls, args.runs, not args.no_peer)
    out = REPO / "bench" / "results" / "MCP_OVERHEAD.json"
    out.write_text(json.dumps(figures, indent=2) + "\n")
    table = out.with_suffix(".md")
    intro = (
        f"# MCP overhead (bench/mcp_overhead.py, {args.calls} calls per run, median of {args.runs} runs)\n\n"
        "Each framework's MCP rows are compared with its own Python tool (what MCP adds to a call); "
        "the Python-tool rows themselves measure each framework's per-turn cost. Both clients call "
        "server-everything's "
        "`echo` in the same run (a stdio server process of its own each, one shared HTTP server process).\n\n"
    )
    table.write_text(intro + _table(figures) + "\n")
    print(f"\nwritten to {out.relative_to(REPO)} and {table.relative_to(REPO)}")
