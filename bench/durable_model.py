"""The architecture bench/durable.py submits to `jeeves worker` processes.

`actor_critic()`: an ActorCritic (max 3 rounds) whose actor and critic share one offline
`FunctionModel`. Every call sleeps `BENCH_MODEL_DELAY_S` seconds (0.05 by default: a 50 ms
provider), then answers: the actor writes `draft N` for round N, the critic rejects round 0
and approves round 1. So a run makes 4 model calls (actor, critic, actor, critic) and ends
"approved" with the text "draft 1". The sleep is an `anyio.sleep`, like waiting on a
socket: it costs no CPU, so what the workers spend CPU on is jeeves, DBOS and the journal.

Workers import it as `durable_model:actor_critic` (bench/ on their PYTHONPATH).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Awaitable, Callable

import anyio

from jeeves import ActorCritic, Agent, FunctionModel
from jeeves.messages import ModelRequest

__all__ = ["CALLS_PER_RUN", "DELAY_ENV", "TEXT", "actor_critic", "reply", "setup"]

DELAY_ENV = "BENCH_MODEL_DELAY_S"
CALLS_PER_RUN = 4
TEXT = "draft 1"
"""What every run returns: the second draft, approved."""

_ROUND = re.compile(r"__(actor|critic)_(\d+)$")


def reply(request: ModelRequest) -> str:
    """The answer to one call, from its session id (`..__actor_N` / `..__critic_N`)."""
    found = _ROUND.search(request.session_id)
    if found is None:
        raise ValueError(f"not an ActorCritic call: session {request.session_id!r}")
    role, index = found.group(1), int(found.group(2))
    if role == "actor":
        return f"draft {index}"
    approve = index >= 1
    verdict = {"score": 0.95 if approve else 0.3, "issues": [] if approve else ["more"], "summary": "ok"}
    return json.dumps(verdict)


def _sleeping(delay: float) -> Callable[[ModelRequest], Awaitable[str]]:
    """The model's function: `delay` seconds of sleep, then `reply`. The delay is read from
    the environment when the model is built, not at every call (reading `os.environ` cost
    3 % of a worker's CPU, which is the bench's, not jeeves')."""

    async def answer(request: ModelRequest) -> str:
        if delay > 0:
            await anyio.sleep(delay)
        return reply(request)

    return answer


def actor_critic() -> ActorCritic:
    """A fresh ActorCritic on the sleeping model (the worker builds one per run)."""
    model = FunctionModel(_sleeping(float(os.environ.get(DELAY_ENV, "0.05"))), model_name="sleep-50ms")
    return ActorCritic(
        actor=Agent("Write it.", model=model), critic=Agent("Judge it.", model=model), max_rounds=3
    )


def setup() -> ActorCritic:
    """The same architecture under another name, so on another queue: bench/durable.py
    starts a worker serving only this to create DBOS's tables before it queues the runs
    (a DBOS client cannot create them), and that worker never takes a benchmark run."""
    return actor_critic()
