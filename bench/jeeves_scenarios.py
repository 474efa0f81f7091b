"""jeeves, every scenario: (a) ActorCritic, (b) Supervisor, (c) 1,000 × (a) at once,
(e) events per second from a supervisor → supervisor → ActorCritic run, (f) replay vs
live, (g) SSE events per second from `jeeves serve` (bench/sse.py).

One `BenchModel` answers every call from the request (its role and text; see
bench/common.py), so one model serves any number of concurrent runs. It is a plain
`jeeves.ModelClient`, as a provider adapter is: it yields once, streams
`common.chunks(text)` and reports `common`'s usage, like every peer's fake. Events are
read through `jeeves.stream`, one by one. Prints JSON; run by bench/run.py.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(1, str(BENCH.parent))

import common  # noqa: E402

import jeeves  # noqa: E402
from jeeves import Agent  # noqa: E402
from jeeves.messages import ModelRequest, ModelResponse, ToolCall, Usage  # noqa: E402
from jeeves.models.base import DeltaSink  # noqa: E402

ActorCritic: Any = getattr(jeeves, "ActorCritic", None)
Supervisor: Any = getattr(jeeves, "Supervisor", None)
CALLS_E = 10
"""(e): outer supervisor 2 + inner supervisor 2 + ActorCritic 6."""


def _prompt(request: ModelRequest) -> str:
    return next((m.content or "" for m in reversed(request.messages) if m.role == "user"), "")


def answer(request: ModelRequest, delegate_to: str) -> str | list[ToolCall]:
    """The fake model: actor, critic, worker or coordinator, by the caller's role.

    The root coordinator delegates to `delegate_to`; a nested one always to the coder.
    """
    role = request.role_path[-1] if request.role_path else ""
    if role == "actor":
        return common.actor_reply(_prompt(request))
    if role == "critic":
        return common.critic_reply(_prompt(request))
    if role == common.WORKER:
        return common.worker_reply()
    reply = common.supervisor_reply(request.messages[-1].role == "tool")
    if isinstance(reply, str):
        return reply
    worker = delegate_to if len(request.role_path) == 1 else common.WORKER
    return [ToolCall(id="call_1", name="delegate", arguments=json.dumps({**reply, "worker": worker}))]


class BenchModel:
    """The bench's fake provider: a `jeeves.ModelClient` answering from the request."""

    model_name = "bench"

    def __init__(self, delegate_to: str) -> None:
        self.delegate_to = delegate_to

    async def complete(self, request: ModelRequest, *, on_delta: DeltaSink | None = None) -> ModelResponse:
        reply = answer(request, self.delegate_to)
        await common.provider_wait()
        usage = Usage(input_tokens=common.INPUT_TOKENS, output_tokens=common.OUTPUT_TOKENS, model_calls=1)
        if isinstance(reply, list):
            return ModelResponse(
                tool_calls=reply, usage=usage, model=request.model, finish_reason="tool_calls"
            )
        if on_delta is not None:
            for chunk in common.chunks(reply):
                await on_delta(chunk)
        return ModelResponse(text=reply, usage=usage, model=request.model, finish_reason="stop")


MODEL = BenchModel(common.WORKER)
NESTED_MODEL = BenchModel("team")


def actor_critic() -> Any:
    return ActorCritic(
        Agent("You write code.", role="actor"),
        Agent("You review code.", role="critic", output_type=jeeves.Verdict),
        max_rounds=2,
        threshold=common.APPROVE_AT,
    )


async def consume(arch: Any, model: BenchModel = MODEL) -> int:
    count = 0
    async with jeeves.stream(arch, common.TASK, model=model) as events:
        async for _ in events:
            count += 1
    return count


ARCHS: dict[str, Any] = {}


async def loop_a() -> int:
    return await consume(ARCHS["a"])


async def loop_b() -> int:
    return await consume(ARCHS["b"])


async def loop_e() -> int:
    return await consume(ARCHS["e"], NESTED_MODEL)


def build() -> tuple[dict[str, tuple[common.Loop, int]], dict[str, str]]:
    """The loops whose architectures exist on this checkout, and why the others are missing."""
    loops: dict[str, tuple[common.Loop, int]] = {}
    errors: dict[str, str] = {}
    if ActorCritic is not None:
        ARCHS["a"] = actor_critic()
        loops["a"] = (loop_a, common.CALLS_A)
    else:
        errors["a"] = "jeeves.ActorCritic is not on this checkout yet (branch actor-critic)"
    if Supervisor is not None:
        ARCHS["b"] = Supervisor({common.WORKER: Agent("You write code.")}, instructions="You coordinate.")
        loops["b"] = (loop_b, common.CALLS_B)
    else:
        errors["b"] = "jeeves.Supervisor is not on this checkout yet (branch supervisor)"
    if ActorCritic is not None and Supervisor is not None:
        inner = Supervisor({common.WORKER: ARCHS["a"]}, instructions="You lead the coders.")
        ARCHS["e"] = Supervisor({"team": inner}, instructions="You coordinate.")
        loops["e"] = (loop_e, CALLS_E)
    else:
        errors["e"] = "needs jeeves.ActorCritic and jeeves.Supervisor"
    return loops, errors


# -- (h) cost per session against nesting depth and parallel workers -------------------------

DEPTHS = (1, 2, 3, 4, 5)
WORKERS = (1, 2, 5, 10, 20, 50)


class FanOutModel:
    """(h)'s fake provider: a coordinator delegates to its `worker` (depth) or to `n` workers
    at once (fan-out), then sums up; every worker answers in one reply."""

    model_name = "bench"

    def __init__(self, n: int) -> None:
        self.n = n

    async def complete(self, request: ModelRequest, *, on_delta: DeltaSink | None = None) -> ModelResponse:
        common.CALLS += 1
        await common.provider_wait()
        usage = Usage(input_tokens=common.INPUT_TOKENS, output_tokens=common.OUTPUT_TOKENS, model_calls=1)
        if not request.tools or request.messages[-1].role == "tool":
            if on_delta is not None:
                await on_delta("done")
            return ModelResponse(text="done", usage=usage, model=request.model, finish_reason="stop")
        arguments = json.dumps({"worker": "w", "instructions": "go"})
        calls = [ToolCall(id=f"call_{i}", name="delegate", arguments=arguments) for i in range(self.n)]
        return ModelResponse(tool_calls=calls, usage=usage, model=request.model, finish_reason="tool_calls")


def nested(depth: int) -> Any:
    """`depth` sessions: depth − 1 supervisors, each over the next, over one agent."""
    arch: Any = Agent("You work.")
    for _ in range(depth - 1):
        arch = Supervisor({"w": arch}, max_delegations=60)
    return arch


def _stream_loop(arch: Any, model: Any) -> Any:
    async def once() -> int:
        count = 0
        async with jeeves.stream(arch, common.TASK, model=model) as events:
            async for _ in events:
                count += 1
        return count

    return once


async def _interleaved(points: list[dict[str, Any]], runs: int, rounds: int = 10) -> list[dict[str, Any]]:
    """Time every point of a curve in `rounds` alternating rounds and take each point's
    median over all its samples, so a noisy moment on this shared machine lands on every
    point of the curve instead of bending it at one point (the curve's shape is the figure).
    Each point keeps wall time and this thread's CPU time: the verdict reads CPU time, the
    run's own cost, which other processes on the machine do not inflate."""
    per_round = max(3, runs // rounds)
    samples: list[list[float]] = [[] for _ in points]
    cpu: list[list[float]] = [[] for _ in points]
    events: list[int] = [0 for _ in points]
    for point in points:
        for _ in range(3):  # warm-up: lazy imports, schema builds
            await point["loop"]()
    for _ in range(rounds):
        for i, point in enumerate(points):
            common.CALLS = 0
            for _ in range(per_round):
                t, c = time.perf_counter(), time.thread_time()
                events[i] = await point["loop"]()
                samples[i].append(time.perf_counter() - t)
                cpu[i].append(time.thread_time() - c)
            made = common.CALLS / per_round
            if made != point["calls"]:
                raise AssertionError(f"expected {point['calls']} model calls per run, the fake saw {made}")
    rows = []
    for point, times, cpu_times, count in zip(points, samples, cpu, events, strict=True):
        median_us = statistics.median(times) * 1e6
        cpu_us = statistics.median(cpu_times) * 1e6
        rows.append(
            {
                point["key"]: point["at"],
                "sessions": point["sessions"],
                "model_calls": point["calls"],
                "events": count,
                "runs": len(times),
                "us_per_run": median_us,
                "cpu_us_per_run": cpu_us,
                "us_per_session": median_us / point["sessions"],
                "us_per_call": median_us / point["calls"],
            }
        )
    return rows


async def scaling(runs: int) -> dict[str, Any]:
    """(h): µs per session and per model call as nesting deepens and workers multiply."""
    depth = [
        {
            "key": "depth",
            "at": d,
            "sessions": d,
            "calls": 2 * (d - 1) + 1,
            "loop": _stream_loop(nested(d), FanOutModel(1)),
        }
        for d in DEPTHS
    ]
    workers = [
        {
            "key": "workers",
            "at": n,
            "sessions": n + 1,
            "calls": n + 2,
            "loop": _stream_loop(Supervisor({"w": Agent("You work.")}, max_delegations=60), FanOutModel(n)),
        }
        for n in WORKERS
    ]
    return {"depth": await _interleaved(depth, runs), "workers": await _interleaved(workers, runs)}


# -- (i) what features cost: journal on, telemetry on ------------------------------------------


async def features(runs: int) -> dict[str, Any]:
    """(a) streamed, bare and with each feature on: µs per loop."""
    import tempfile

    from jeeves.journal.memory import MemoryJournal
    from jeeves.journal.sqlite import SQLiteJournal

    arch = ARCHS["a"]
    out: dict[str, Any] = {}

    async def bare() -> int:
        return await consume(arch)

    async def memory_journal() -> int:
        count = 0
        async with jeeves.stream(arch, common.TASK, model=MODEL, journal=MemoryJournal()) as events:
            async for _ in events:
                count += 1
        return count

    tmp = tempfile.mkdtemp()
    sqlite = SQLiteJournal(f"{tmp}/bench.db")

    async def sqlite_journal() -> int:
        count = 0
        async with jeeves.stream(arch, common.TASK, model=MODEL, journal=sqlite) as events:
            async for _ in events:
                count += 1
        return count

    variants: dict[str, common.Loop] = {
        "bare": bare,
        "memory journal": memory_journal,
        "sqlite journal": sqlite_journal,
    }
    try:
        from opentelemetry.sdk.trace import TracerProvider

        from jeeves.telemetry import OTelTracer

        tracer = OTelTracer(tracer_provider=TracerProvider())

        async def telemetry() -> int:
            count = 0
            async with jeeves.stream(arch, common.TASK, model=MODEL, tracer=tracer) as events:
                async for _ in events:
                    count += 1
            return count

        variants["telemetry (OTel SDK, no exporter)"] = telemetry
    except ImportError as exc:
        out["telemetry_error"] = str(exc)

    async def plain_run() -> int:
        await jeeves.run(arch, common.TASK, model=MODEL)
        return 0

    variants["jeeves.run (no stream)"] = plain_run
    rows = {}
    for name, loop in variants.items():
        rows[name] = await common.time_loop(loop, common.CALLS_A, runs=runs, budget_s=1.5, warmup=5)
    out["rows"] = rows
    await sqlite.aclose()
    return out


def _version() -> str:
    try:
        return version("jeeves")
    except PackageNotFoundError:
        return "checkout"


if __name__ == "__main__":
    mode = sys.argv[sys.argv.index("--mode") + 1] if "--mode" in sys.argv else "loops"
    loops, errors = build()
    versions = {"jeeves": _version()}
    if mode in ("scaling", "features"):
        import asyncio

        runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 50
        part = "h" if mode == "scaling" else "i"
        job = scaling(runs) if mode == "scaling" else features(runs)
        print(json.dumps({"versions": versions, part: asyncio.run(job)}))
    elif mode == "replay":
        import replay_speed

        replay_speed.main(versions)
    elif mode == "sse":
        import sse

        sse.main(versions)
    elif mode == "concurrent-journals":
        import concurrent_journals

        concurrent_journals.main(versions)
    elif mode == "long-runs":
        import long_runs

        long_runs.main()
    else:
        if mode == "concurrent" and "a" not in loops:
            common.fail_part("c", errors["a"], versions)
        common.main(
            loops,
            versions,
            notes={
                "a": "ActorCritic, events streamed",
                "b": "Supervisor, events streamed",
                "e": "3-level nested run",
            },
            errors=errors,
        )
