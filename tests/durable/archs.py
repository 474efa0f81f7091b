"""Architectures the durable tests submit to real worker processes.

The model is a FunctionModel that asks a counting server on 127.0.0.1 (`COUNTER_URL`) for
each reply: the server counts every request by its (session, request hash) key and can
hold a request open, so a test can kill the worker while a model call is in flight and
then check that no completed call was made twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.request

import anyio.to_thread

from jeeves import ActorCritic, Agent, FunctionModel, Supervisor, tool
from jeeves.messages import ModelRequest
from jeeves.testing import Reply, call


def _ask(request: ModelRequest) -> str:
    body = json.dumps(
        {
            "session_id": request.session_id,
            "key": hashlib.sha256(
                json.dumps([m.model_dump(mode="json") for m in request.messages], sort_keys=True).encode()
            ).hexdigest()[:16],
            "critic": request.output_schema is not None,
            "pid": os.getpid(),
        }
    ).encode()
    http = urllib.request.Request(
        os.environ["COUNTER_URL"], data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(http, timeout=300) as reply:
        return str(json.loads(reply.read())["text"])


async def _reply(request: ModelRequest) -> str:
    return await anyio.to_thread.run_sync(_ask, request, abandon_on_cancel=True)


def actor_critic() -> ActorCritic:
    """An ActorCritic whose actor and critic both answer from the counting server."""
    model = FunctionModel(_reply, model_name="counted")
    return ActorCritic(
        actor=Agent("Write it.", model=model), critic=Agent("Judge it.", model=model), max_rounds=3
    )


def _count(session_id: str, key: str) -> None:
    body = json.dumps({"session_id": session_id, "key": key, "critic": False, "pid": os.getpid()}).encode()
    http = urllib.request.Request(
        os.environ["COUNTER_URL"], data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(http, timeout=60) as reply:
        reply.read()


@tool(approval="destructive")
def issue_refund(order_id: str, amount: float) -> str:
    """Refund an order (cannot be undone); counted at the counting server."""
    _count("tool", f"issue_refund:{order_id}")
    return f"refunded {amount} on order {order_id}"


def _refund_turn(request: ModelRequest) -> str | Reply:
    """Call the refund tool, then report what it said; each call counted by its request."""
    _ask(request)
    results = [m for m in request.messages if m.role == "tool"]
    if not results:
        return Reply(
            text="Refunding.", tool_calls=[call("issue_refund", {"order_id": "881", "amount": 12.5})]
        )
    return f"Done: {results[-1].content}"


async def _refund_reply(request: ModelRequest) -> str | Reply:
    return await anyio.to_thread.run_sync(_refund_turn, request, abandon_on_cancel=True)


def refund_agent() -> Agent:
    """An agent whose one tool is destructive: gated when the worker asks for destructive."""
    return Agent(
        "Handle refunds.",
        role="refund",
        tools=[issue_refund],
        model=FunctionModel(_refund_reply, model_name="counted"),
    )


def _supervisor_turn(request: ModelRequest) -> str | Reply:
    """Delegate to both workers in one reply (they run in parallel), then combine their outputs."""
    _ask(request)
    results = sorted(m.content or "" for m in request.messages if m.role == "tool")
    if not results:
        return Reply(
            tool_calls=[
                call("delegate", {"worker": name, "instructions": f"Part {name}."}, id=f"d-{name}")
                for name in ("left", "right")
            ]
        )
    return "Combined: " + " | ".join(results)


async def _supervisor_reply(request: ModelRequest) -> str | Reply:
    return await anyio.to_thread.run_sync(_supervisor_turn, request, abandon_on_cancel=True)


def fan_out() -> Supervisor:
    """A Supervisor whose two workers run in parallel, every model call counted at the server."""
    worker = FunctionModel(_reply, model_name="counted")
    return Supervisor(
        {
            "left": Agent("Do the left part.", model=worker),
            "right": Agent("Do the right part.", model=worker),
        },
        model=FunctionModel(_supervisor_reply, model_name="counted"),
    )


def _gated_supervisor_turn(request: ModelRequest) -> str | Reply:
    """Delegate the refund and a side task in one reply (parallel branches), then combine."""
    _ask(request)
    results = sorted(m.content or "" for m in request.messages if m.role == "tool")
    if not results:
        return Reply(
            tool_calls=[
                call("delegate", {"worker": "refund", "instructions": "Refund order 881."}, id="d-refund"),
                call("delegate", {"worker": "notes", "instructions": "Note it."}, id="d-notes"),
            ]
        )
    return "Combined: " + " | ".join(results)


async def _gated_supervisor_reply(request: ModelRequest) -> str | Reply:
    return await anyio.to_thread.run_sync(_gated_supervisor_turn, request, abandon_on_cancel=True)


def gated_fan_out() -> Supervisor:
    """A Supervisor whose refund worker reaches a destructive (gated) tool beside a plain worker."""
    return Supervisor(
        {
            "refund": refund_agent(),
            "notes": Agent("Take notes.", model=FunctionModel(_reply, model_name="counted")),
        },
        model=FunctionModel(_gated_supervisor_reply, model_name="counted"),
    )


_builds: list[int] = []


def breaks_after_loading() -> Agent:
    """Builds once, when the worker loads it, then fails: every run's build fails on the worker
    (as a target whose configuration or dependency went away after the worker started)."""
    _builds.append(1)
    if len(_builds) > 1:
        raise RuntimeError("the model registry at registry.internal is unreachable")
    return Agent("Write.", model=FunctionModel(_reply, model_name="counted"))
