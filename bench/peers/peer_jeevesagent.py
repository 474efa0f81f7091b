"""jeevesagent 0.9.7: its ActorCritic and Supervisor, answered by one fake model per role.

`RoleModel` implements jeevesagent's model protocol (`complete` and `stream`, as its own
`ScriptedModel` does) and is built once: each call picks its reply from the request
(bench/common.py says how), yields once, streams `common.chunks(text)` as `ModelChunk`s
and reports `common`'s usage, so one model serves concurrent runs. Memory is off (a null Memory): the default in-memory store keeps every episode and
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
from jeevesagent.core.types import ModelChunk, ToolCall, Usage

USAGE = Usage(input_tokens=common.INPUT_TOKENS, output_tokens=common.OUTPUT_TOKENS)


class RoleModel:
    """A fake model for one role (jeevesagent's model protocol), built once per role."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.name = f"bench-{role}"

    def _turn(self, messages: list[Any]) -> tuple[str, list[ToolCall]]:
        prompt = messages[-1].content
        if self.role == "actor":
            return common.actor_reply(prompt), []
        if self.role == "critic":
            return common.critic_reply(prompt), []
        if self.role == "worker":
            return common.worker_reply(), []
        reply = common.supervisor_reply(any(m.role == "tool" for m in messages))
        if isinstance(reply, str):
            return reply, []
        return "", [ToolCall(id="call_1", tool="delegate", args=reply)]

    async def complete(self, messages: list[Any], **kwargs: Any) -> tuple[str, list[ToolCall], Usage, str]:
        text, calls = self._turn(messages)
        await common.provider_wait()
        return text, calls, USAGE, "tool_use" if calls else "stop"

    async def stream(self, messages: list[Any], **kwargs: Any) -> AsyncIterator[ModelChunk]:
        text, calls = self._turn(messages)
        await common.provider_wait()
        for piece in common.chunks(text):
            yield ModelChunk(kind="text", text=piece)
        for call in calls:
            yield ModelChunk(kind="tool_call", tool_call=call)
        yield ModelChunk(kind="finish", finish_reason="tool_use" if calls else "stop", usage=USAGE)


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
