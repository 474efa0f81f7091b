"""What tracing costs: per span, and per model call of a whole run.

Tracers compared:
- null: `jeeves.telemetry.tracer.NullTracer`, the default when telemetry is not configured;
- otel, no provider: `OTelTracer()` while no OpenTelemetry provider is set (the global
  proxy hands out non-recording spans): a library user who installed nothing;
- otel, SDK: `OTelTracer` on an SDK TracerProvider whose processor drops every span,
  i.e. the cost of recording spans before any exporter.

Per span: open and close one model-call span `--spans` times. Per model call: an Agent
making 6 model calls (5 with a tool call) through `jeeves.run`, with a FunctionModel that
answers at once, so the difference between rows is the tracer's cost.
Run: `python bench/telemetry_overhead.py [--spans N] [--runs N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider  # noqa: E402

import jeeves  # noqa: E402
from jeeves import Agent, FunctionModel, tool  # noqa: E402
from jeeves.events import SessionStarted  # noqa: E402
from jeeves.messages import Message, ModelRequest  # noqa: E402
from jeeves.telemetry import OTelTracer  # noqa: E402
from jeeves.telemetry.tracer import NullSpan, NullTracer, Tracer  # noqa: E402
from jeeves.testing import Reply, call  # noqa: E402

CALLS = 6


class _Drop(SpanProcessor):
    def on_end(self, span: ReadableSpan) -> None:
        pass


class GeneratorNullTracer(NullTracer):
    """A NullTracer that makes a @contextmanager generator per hook (for comparison)."""

    def model_call(self, started: SessionStarted, request: ModelRequest) -> AbstractContextManager[Any]:
        return _null()


@contextmanager
def _null() -> Any:
    yield NullSpan()


def tracers() -> dict[str, Tracer]:
    sdk = TracerProvider()
    sdk.add_span_processor(_Drop())
    return {
        "null, generator per hook": GeneratorNullTracer(),
        "null": NullTracer(),
        "otel, no provider": OTelTracer(),
        "otel, SDK, spans dropped": OTelTracer(sdk),
    }


def per_span(tracer: Tracer, n: int) -> float:
    """Microseconds to open and close one model-call span."""
    started = SessionStarted(session_id="bench", role="agent", architecture="agent", model="openai/gpt-4o")
    request = ModelRequest(messages=[Message.user("hi")], model="openai/gpt-4o", params={"temperature": 0})
    begin = time.perf_counter()
    for _ in range(n):
        with tracer.model_call(started, request) as span:
            span.set_attribute("jeeves.x", 1)
    return (time.perf_counter() - begin) / n * 1e6


@tool
async def step(n: int) -> int:
    """Returns n."""
    return n


def _reply(request: ModelRequest) -> Reply:
    turn = sum(1 for m in request.messages if m.role == "assistant")
    return Reply(tool_calls=[call("step", {"n": turn})]) if turn < CALLS - 1 else Reply(text="done")


async def per_call(all_tracers: dict[str, Tracer], runs: int) -> dict[str, float]:
    """Median microseconds per model call of a 6-call Agent run, per tracer.

    The tracers take turns run by run, in a shuffled order, so drift (load, thermal, GC)
    does not land on one tracer's timings.
    """
    agent, model = Agent("x", tools=[step]), FunctionModel(_reply)
    samples: dict[str, list[float]] = {name: [] for name in all_tracers}
    order = list(all_tracers.items())
    shuffle = random.Random(0).shuffle
    for _ in range(runs):
        shuffle(order)
        for name, tracer in order:
            begin = time.perf_counter()
            await jeeves.run(agent, "go", model=model, session_id="bench", tracer=tracer)
            samples[name].append((time.perf_counter() - begin) / CALLS * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--spans", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=500)
    args = parser.parse_args()
    all_tracers = tracers()
    print(f"python {sys.version.split()[0]}, {args.spans} spans, {args.runs} runs of {CALLS} model calls")
    asyncio.run(per_call(all_tracers, 20))  # warm up
    calls = asyncio.run(per_call(all_tracers, args.runs))
    print(f"{'tracer':<28}{'µs per span':>14}{'µs per model call':>20}")
    for name, tracer in all_tracers.items():
        per_span(tracer, 1000)  # warm up
        print(f"{name:<28}{per_span(tracer, args.spans):>14.2f}{calls[name]:>20.1f}")


if __name__ == "__main__":
    main()
