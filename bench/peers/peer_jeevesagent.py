"""jeevesagent 0.9.7: its ActorCritic and Supervisor, answered by its ScriptedModel.

Each call picks one `ScriptedTurn` from the request (bench/common.py says how) and lets
jeevesagent's own `ScriptedModel` stream it word by word, so one model serves concurrent
runs. Memory is off (a null Memory): the default in-memory store keeps every episode and
recalls them on the next run, which would make each run slower than the one before.
Events are consumed through `Agent.stream`. Runs in its own venv; prints JSON.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import common
from jeevesagent import Agent
from jeevesagent.architecture import ActorCritic, Supervisor
from jeevesagent.core.types import ToolCall
from jeevesagent.model.scripted import ScriptedModel, ScriptedTurn


class RoleModel(ScriptedModel):
    """jeevesagent's ScriptedModel, with the turn chosen from the request."""

    def __init__(self, role: str) -> None:
        super().__init__([])
        self.role = role

    def _turn(self, messages: list[Any]) -> ScriptedTurn:
        prompt = messages[-1].content
        if self.role == "actor":
            return ScriptedTurn(text=common.actor_reply(prompt))
        if self.role == "critic":
            return ScriptedTurn(text=common.critic_reply(prompt))
        if self.role == "worker":
            return ScriptedTurn(text=common.worker_reply())
        reply = common.supervisor_reply(any(m.role == "tool" for m in messages))
        if isinstance(reply, str):
            return ScriptedTurn(text=reply)
        return ScriptedTurn(tool_calls=[ToolCall(id="call_1", tool="delegate", args=reply)])

    async def complete(self, messages: list[Any], **kwargs: Any) -> tuple[Any, ...]:
        return await ScriptedModel([self._turn(messages)]).complete(messages, **kwargs)

    async def stream(self, messages: list[Any], **kwargs: Any) -> AsyncIterator[Any]:
        async for chunk in ScriptedModel([self._turn(messages)]).stream(messages, **kwargs):
            yield chunk


class NullMemory:
    """Memory off: remembers nothing, recalls nothing."""

    async def working(self, **_: Any) -> list[Any]:
        return []

    async def update_block(self, *_: Any, **__: Any) -> None:
        return None

    async def append_block(self, *_: Any, **__: Any) -> None:
        return None

    async def remember(self, episode: Any) -> str:
        return ""

    async def recall(self, *_: Any, **__: Any) -> list[Any]:
        return []

    async def recall_facts(self, *_: Any, **__: Any) -> list[Any]:
        return []

    async def consolidate(self) -> None:
        return None

    async def session_messages(self, *_: Any, **__: Any) -> list[Any]:
        return []


def agent(instructions: str, role: str, **kwargs: Any) -> Agent:
    return Agent(instructions, model=RoleModel(role), memory=NullMemory(), **kwargs)


ACTOR_CRITIC = agent(
    "You coordinate a review.",
    "root",
    architecture=ActorCritic(
        actor=agent("You write code.", "actor"),
        critic=agent("You review code.", "critic"),
        max_rounds=3,
        approval_threshold=common.APPROVE_AT,
    ),
)
SUPERVISOR = agent(
    "You coordinate.",
    "supervisor",
    architecture=Supervisor(workers={common.WORKER: agent("You write code.", "worker")}),
)


async def consume(root: Agent) -> int:
    count = 0
    async for _ in root.stream(common.TASK):
        count += 1
    return count


async def actor_critic() -> int:
    return await consume(ACTOR_CRITIC)


async def supervisor() -> int:
    return await consume(SUPERVISOR)


if __name__ == "__main__":
    common.main(
        {"a": (actor_critic, common.CALLS_A), "b": (supervisor, common.CALLS_B)},
        {"jeevesagent": version("jeevesagent")},
        notes={"a": "ActorCritic, memory off", "b": "Supervisor, memory off"},
    )
