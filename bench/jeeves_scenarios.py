"""jeeves, every scenario: (a) ActorCritic, (b) Supervisor, (c) 1,000 × (a) at once,
(e) events per second from a supervisor → supervisor → ActorCritic run, (f) replay vs
live, (g) SSE events per second from `jeeves serve` (bench/sse.py).

One `FunctionModel` answers every call from the request (its role and text; see
bench/common.py), so one model serves any number of concurrent runs. Events are read
through `jeeves.stream`, one by one. Prints JSON; run by bench/run.py.
"""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(1, str(BENCH.parent))

import common  # noqa: E402

import jeeves  # noqa: E402
from jeeves import Agent, FunctionModel  # noqa: E402
from jeeves.messages import ModelRequest  # noqa: E402
from jeeves.testing import Reply, call  # noqa: E402

ActorCritic: Any = getattr(jeeves, "ActorCritic", None)
Supervisor: Any = getattr(jeeves, "Supervisor", None)
CALLS_E = 10
"""(e): outer supervisor 2 + inner supervisor 2 + ActorCritic 6."""


def _prompt(request: ModelRequest) -> str:
    return next((m.content or "" for m in reversed(request.messages) if m.role == "user"), "")


def answer(request: ModelRequest, delegate_to: str) -> str | Reply:
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
    return Reply(tool_calls=[call("delegate", {**reply, "worker": worker})])


MODEL = FunctionModel(lambda request: answer(request, common.WORKER))
NESTED_MODEL = FunctionModel(lambda request: answer(request, "team"))


def actor_critic() -> Any:
    return ActorCritic(
        Agent("You write code.", role="actor"),
        Agent("You review code.", role="critic", output_type=jeeves.Verdict),
        max_rounds=2,
        threshold=common.APPROVE_AT,
    )


async def consume(arch: Any, model: FunctionModel = MODEL) -> int:
    count = 0
    async with jeeves.stream(arch, common.TASK, model=model) as events:
        async for _ in events:
            count += 1
    model.requests.clear()  # FunctionModel keeps every request for test assertions; a bench keeps none
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


def _version() -> str:
    try:
        return version("jeeves")
    except PackageNotFoundError:
        return "checkout"


if __name__ == "__main__":
    mode = sys.argv[sys.argv.index("--mode") + 1] if "--mode" in sys.argv else "loops"
    loops, errors = build()
    versions = {"jeeves": _version()}
    if mode == "replay":
        import replay_speed

        replay_speed.main(versions)
    elif mode == "sse":
        import sse

        sse.main(versions)
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
