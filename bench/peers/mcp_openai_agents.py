"""The OpenAI Agents SDK's MCP client on the server bench/mcp_overhead.py measures jeeves on.

Same shape as the jeeves rows: one `Runner.run` of an Agent whose zero-latency model asks
for `--calls` calls of `echo(message)`, then answers "done"; the median over `--runs` runs
of the run's time divided by the calls. Rows: a `function_tool` echo (in the event loop),
server-everything's `echo` through `MCPServerStdio`, and through `MCPServerStreamableHttp`
at `--url`. Each server is connected once, outside the timing (`async with`), and its tool
list is cached (`cache_tools_list=True`), as jeeves lists a server's tools once until it
says they changed. Tracing is disabled. Runs in its own venv (bench/.venvs/openai_agents,
built from requirements-openai_agents.txt); prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from typing import Any

from agents import Agent, Model, ModelResponse, Runner, Usage, function_tool, set_tracing_disabled
from agents.mcp import MCPServerStdio, MCPServerStreamableHttp
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

set_tracing_disabled(True)


@function_tool
def echo(message: str) -> str:
    """Echo the message."""
    return f"Echo: {message}"


class EchoModel(Model):
    """Asks for `calls` echo calls, one per turn, then answers "done"; no I/O."""

    def __init__(self, calls: int) -> None:
        self.calls = calls

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        items = input if isinstance(input, list) else [input]
        done = sum(1 for i in items if isinstance(i, dict) and i.get("type") == "function_call_output")
        if done < self.calls:
            output: list[Any] = [
                ResponseFunctionToolCall(
                    id=f"fc_{done}",
                    call_id=f"call_{done}",
                    type="function_call",
                    name="echo",
                    arguments=json.dumps({"message": f"m{done}"}),
                )
            ]
        else:
            text = ResponseOutputText(text="done", type="output_text", annotations=[], logprobs=[])
            output = [
                ResponseOutputMessage(
                    id="msg", type="message", role="assistant", status="completed", content=[text]
                )
            ]
        return ModelResponse(output=output, usage=Usage(requests=1), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the bench runs Runner.run, not streamed")


async def per_call(calls: int, runs: int, **tools: Any) -> float:
    """Median seconds per tool call over `runs` runs (the run's own overhead divided in)."""
    times = []
    for _ in range(runs):
        agent = Agent(name="echo", instructions="Echo.", model=EchoModel(calls), **tools)
        start = time.perf_counter()
        result = await Runner.run(agent, "echo", max_turns=calls + 1)
        times.append((time.perf_counter() - start) / calls)
        assert result.final_output == "done", result.final_output
    return statistics.median(times)


async def held(server: Any, calls: int, runs: int) -> float:
    async with server:
        await per_call(1, 1, mcp_servers=[server])  # connect and list tools outside the timing
        return await per_call(calls, runs, mcp_servers=[server])


async def main(everything: str, url: str, calls: int, runs: int) -> dict[str, Any]:
    stdio = MCPServerStdio({"command": "node", "args": [everything, "stdio"]}, cache_tools_list=True)
    http = MCPServerStreamableHttp({"url": url}, cache_tools_list=True)
    rows: dict[str, Callable[[], Awaitable[float]]] = {
        "python tool": lambda: per_call(calls, runs, tools=[echo]),
        "mcp tool, stdio": lambda: held(stdio, calls, runs),
        "mcp tool, streamable http": lambda: held(http, calls, runs),
    }
    results = {name: await measure() for name, measure in rows.items()}
    return {"framework": "openai-agents", "version": version("openai-agents"), "per_tool_call_s": results}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--everything", required=True, help="server-everything's dist/index.js")
    parser.add_argument("--url", required=True, help="server-everything's Streamable HTTP endpoint")
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.everything, args.url, args.calls, args.runs))))
