"""Kernel overhead: an Agent making 6 model calls through jeeves.stream vs a hand-written loop.

The model answers instantly (a FunctionModel with no latency), so the difference is what
jeeves itself costs per model call: routing, the journal hook, events built, stamped and
streamed to a consumer, usage accounting. Run: `python bench/overhead.py [--runs N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import jeeves  # noqa: E402
from jeeves import Agent, FunctionModel, tool  # noqa: E402
from jeeves.messages import Message, ModelRequest, ModelResponse, ToolCall, Usage  # noqa: E402
from jeeves.testing import Reply, call  # noqa: E402

CALLS = 6


@tool
async def step(n: int) -> int:
    """Returns n."""
    return n


def _reply(request: ModelRequest) -> Reply:
    turn = sum(1 for m in request.messages if m.role == "assistant")
    if turn < CALLS - 1:
        return Reply(tool_calls=[call("step", {"n": turn})])
    return Reply(text="done")


async def jeeves_once(agent: Agent, model: FunctionModel) -> int:
    count = 0
    async with jeeves.stream(agent, "go", model=model, session_id="bench") as events:
        async for _ in events:
            count += 1
    return count


async def floor_once() -> int:
    """The same 6 calls and 5 tool runs, by hand: a list of messages and a loop."""
    messages = [Message.system("x"), Message.user("go")]
    seen = 0
    for _ in range(CALLS):
        turn = sum(1 for m in messages if m.role == "assistant")
        reply = _reply(ModelRequest(messages=messages))
        response = ModelResponse(
            text=reply.text,
            tool_calls=[
                ToolCall(id=f"c{turn}", name=c.name, arguments=c.arguments) for c in reply.tool_calls
            ],
            usage=Usage(input_tokens=1, output_tokens=1),
        )
        messages.append(Message(role="assistant", content=response.text, tool_calls=response.tool_calls))
        for c in response.tool_calls:
            result = await step.function(n=turn)
            messages.append(Message(role="tool", content=str(result), tool_call_id=c.id))
        seen += 1
    return seen


def _median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


async def measure(runs: int) -> dict[str, float]:
    agent = Agent("x", tools=[step])
    model = FunctionModel(_reply)
    for _ in range(30):  # warm up
        await jeeves_once(agent, model)
        await floor_once()
    j, f, events = [], [], 0
    for _ in range(runs):
        t = time.perf_counter()
        events = await jeeves_once(agent, model)
        j.append(time.perf_counter() - t)
        model.requests.clear()
        t = time.perf_counter()
        await floor_once()
        f.append(time.perf_counter() - t)
    jeeves_us, floor_us = _median_us(j), _median_us(f)
    return {
        "jeeves_us": jeeves_us,
        "floor_us": floor_us,
        "overhead_per_call_us": (jeeves_us - floor_us) / CALLS,
        "events": events,
    }


def import_ms(repeats: int = 7) -> float:
    code = "import time; t = time.perf_counter(); import jeeves; print(time.perf_counter() - t)"
    times = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
            ).stdout
        )
        for _ in range(repeats)
    ]
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=500)
    args = parser.parse_args()
    result = asyncio.run(measure(args.runs))
    print(
        f"agent, {CALLS} model calls + {CALLS - 1} tool calls, events streamed ({result['events']:.0f} per run)"
    )
    print(f"  jeeves.stream  median {result['jeeves_us']:8.1f} µs per run over {args.runs} runs")
    print(f"  asyncio floor  median {result['floor_us']:8.1f} µs per run")
    print(f"  overhead       {result['overhead_per_call_us']:8.1f} µs per model call (target <= 50-100)")
    print(f"import jeeves    median {import_ms():8.1f} ms (target <= 150)")


if __name__ == "__main__":
    main()
