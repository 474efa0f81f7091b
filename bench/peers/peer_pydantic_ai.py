"""pydantic-ai: (a) two agents in a Python loop, (b) a supervisor agent with a delegate tool.

The models are `FunctionModel`s with a stream function (it yields once, then streams
`common.chunks(text)`; a tool call is one delta), built once. `FunctionModel` estimates
tokens from the text of every chunk and message; a provider model reports them, so
`BenchModel` is a `FunctionModel` whose streamed response reports `common`'s usage instead
of estimating it (the estimate would cost pydantic-ai work no real run does). The critic's output type is `PromptedOutput(Verdict)`, so its JSON reply is
validated like a jeeves critic's. Events are consumed through `run_stream_events`; the
worker in (b) is streamed the same way inside the delegate tool (pydantic-ai's agent
delegation pattern); its events are read there and counted with the supervisor's. Runs in its own venv; prints JSON.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import asynccontextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import common
from pydantic import BaseModel
from pydantic_ai import Agent, PromptedOutput
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel, FunctionStreamedResponse
from pydantic_ai.usage import RequestUsage


class Verdict(BaseModel):
    score: float
    issues: list[str] = []
    summary: str = ""


def _prompt(messages: list[ModelMessage]) -> str:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    return "".join(str(p.content) for p in last.parts if isinstance(p, UserPromptPart))


class ReportedUsage(FunctionStreamedResponse):
    """FunctionModel's streamed response, with the usage a provider reports (no estimate)."""

    def __post_init__(self) -> None:
        self._usage = RequestUsage(input_tokens=common.INPUT_TOKENS, output_tokens=common.OUTPUT_TOKENS)

    def _map_item(self, item: Any) -> Iterator[Any]:
        if isinstance(item, str):
            yield from self._parts_manager.handle_text_delta(vendor_part_id="content", content=item)
        else:
            yield from super()._map_item(item)


class BenchModel(FunctionModel):
    @asynccontextmanager
    async def request_stream(
        self, messages: list[ModelMessage], model_settings: Any, params: Any, run_context: Any = None
    ) -> AsyncGenerator[Any]:
        model_settings, params = self.prepare_request(model_settings, params)
        info = AgentInfo(
            function_tools=params.declared_function_tools,
            allow_text_output=params.allow_text_output,
            output_tools=params.output_tools,
            model_settings=model_settings,
            model_request_parameters=params,
            instructions=None,
        )
        assert self.stream_function is not None
        stream = self.stream_function(messages, info)
        yield ReportedUsage(model_request_parameters=params, _model_name=self.model_name, _iter=stream)


async def _words(text: str) -> AsyncIterator[str]:
    await common.provider_wait()
    for chunk in common.chunks(text):
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
    await common.provider_wait()
    if isinstance(reply, str):
        for chunk in common.chunks(reply):
            yield chunk
    else:
        yield {0: DeltaToolCall(name="delegate", json_args=json.dumps(reply), tool_call_id="call_1")}


actor = Agent(BenchModel(stream_function=actor_fn), instructions="You write code.")
critic = Agent(
    BenchModel(stream_function=critic_fn),
    instructions="You review code.",
    output_type=PromptedOutput(Verdict),
)
worker = Agent(BenchModel(stream_function=worker_fn), instructions="You write code.")
supervisor_agent = Agent(BenchModel(stream_function=supervisor_fn), instructions="You coordinate.")


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
