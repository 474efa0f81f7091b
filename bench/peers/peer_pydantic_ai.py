"""pydantic-ai: (a) two agents in a Python loop, (b) a supervisor agent with a delegate tool.

The models are `FunctionModel`s with a stream function (text word by word, a tool call as
one delta); the critic's output type is `PromptedOutput(Verdict)`, so its JSON reply is
validated like a jeeves critic's. Events are consumed through `run_stream_events`; the
worker in (b) is streamed the same way inside the delegate tool (pydantic-ai's agent
delegation pattern); its events are read there and counted with the supervisor's. Runs in its own venv; prints JSON.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import common
from pydantic import BaseModel
from pydantic_ai import Agent, PromptedOutput
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel


class Verdict(BaseModel):
    score: float
    issues: list[str] = []
    summary: str = ""


def _prompt(messages: list[ModelMessage]) -> str:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    return "".join(str(p.content) for p in last.parts if isinstance(p, UserPromptPart))


async def _words(text: str) -> AsyncIterator[str]:
    for chunk in common.words(text):
        yield chunk


def actor_fn(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
    return _words(common.actor_reply(_prompt(messages)))


def critic_fn(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
    return _words(common.critic_reply(_prompt(messages)))


def worker_fn(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
    return _words(common.worker_reply())


async def supervisor_fn(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
    last = messages[-1]
    has_result = isinstance(last, ModelRequest) and any(isinstance(p, ToolReturnPart) for p in last.parts)
    reply = common.supervisor_reply(has_result)
    if isinstance(reply, str):
        for chunk in common.words(reply):
            yield chunk
    else:
        yield {0: DeltaToolCall(name="delegate", json_args=json.dumps(reply), tool_call_id="call_1")}


actor = Agent(FunctionModel(stream_function=actor_fn), instructions="You write code.")
critic = Agent(
    FunctionModel(stream_function=critic_fn),
    instructions="You review code.",
    output_type=PromptedOutput(Verdict),
)
worker = Agent(FunctionModel(stream_function=worker_fn), instructions="You write code.")
supervisor_agent = Agent(FunctionModel(stream_function=supervisor_fn), instructions="You coordinate.")


WORKER_EVENTS = 0
"""Events the worker streamed inside the tool (read there, outside the supervisor's stream)."""


@supervisor_agent.tool_plain
async def delegate(worker: str, instructions: str) -> str:
    """Hand a task to a worker."""
    global WORKER_EVENTS
    output, n = await _stream(globals()["worker"], instructions)
    WORKER_EVENTS += n
    return str(output)


async def _stream(agent: Agent[Any, Any], prompt: str) -> tuple[Any, int]:
    count = 0
    output: Any = None
    async with agent.run_stream_events(prompt) as events:
        async for event in events:
            count += 1
            if event.event_kind == "agent_run_result":
                output = event.result.output
    return output, count


async def actor_critic() -> int:
    return await common.two_agent_loop(
        lambda prompt: _stream(actor, prompt), lambda prompt: _stream(critic, prompt)
    )


async def supervisor() -> int:
    global WORKER_EVENTS
    WORKER_EVENTS = 0
    output, events = await _stream(supervisor_agent, common.TASK)
    assert output == common.SUMMARY, output
    return events + WORKER_EVENTS


if __name__ == "__main__":
    common.main(
        {"a": (actor_critic, common.CALLS_A), "b": (supervisor, common.CALLS_B)},
        {"pydantic-ai-slim": version("pydantic-ai-slim")},
        notes={
            "a": "two Agents in a loop, FunctionModel",
            "b": "agent delegation through a tool; worker streamed inside it",
        },
    )
