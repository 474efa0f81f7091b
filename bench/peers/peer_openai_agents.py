"""openai-agents: (a) an actor agent and a critic agent in a loop, (b) a supervisor with a delegate tool.

The model is a custom `agents.Model` (one per agent, built once) that yields once, then
streams Responses events (`common.chunks(text)`, a function call whole) and answers from
the request's text; its completed response carries `common`'s usage. The critic's `output_type` is a
Verdict model, validated from its JSON reply. Tracing is disabled (it would otherwise try
to export to the vendor). Events are consumed through `Runner.run_streamed(...)`; the
worker in (b) is streamed the same way inside the delegate tool. Runs in its own venv;
prints JSON.
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
from agents import Agent, Model, ModelResponse, Runner, Usage, function_tool, set_tracing_disabled
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
    ResponseUsage,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails
from pydantic import BaseModel

set_tracing_disabled(True)
RESPONSE_USAGE = ResponseUsage(
    input_tokens=common.INPUT_TOKENS,
    output_tokens=common.OUTPUT_TOKENS,
    total_tokens=common.INPUT_TOKENS + common.OUTPUT_TOKENS,
    input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
    output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
)


class Verdict(BaseModel):
    score: float
    issues: list[str]
    summary: str


def _text(item: Any) -> str:
    if isinstance(item, dict):
        content = item.get("content", item.get("output", ""))
        if isinstance(content, list):
            return "".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
        return str(content)
    return str(item)


class FakeModel(Model):
    """Zero-latency model; the reply depends on `role` and the request's text."""

    def __init__(self, role: str) -> None:
        self.role = role

    def _output(self, input: str | list[Any]) -> list[Any]:
        items = [input] if isinstance(input, str) else input
        prompt = _text(items[-1])
        if self.role == "actor":
            text = common.actor_reply(prompt)
        elif self.role == "critic":
            text = common.critic_reply(prompt)
        elif self.role == "worker":
            text = common.worker_reply()
        else:
            has_result = isinstance(items[-1], dict) and items[-1].get("type") == "function_call_output"
            reply = common.supervisor_reply(has_result)
            if not isinstance(reply, str):
                call = ResponseFunctionToolCall(
                    id="fc_1",
                    call_id="call_1",
                    type="function_call",
                    name="delegate",
                    arguments=json.dumps(reply),
                )
                return [call]
            text = reply
        content = ResponseOutputText(text=text, type="output_text", annotations=[], logprobs=[])
        return [
            ResponseOutputMessage(
                id="msg_1", type="message", role="assistant", status="completed", content=[content]
            )
        ]

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        output = self._output(input)
        await common.provider_wait()
        usage = Usage(
            requests=1,
            input_tokens=common.INPUT_TOKENS,
            output_tokens=common.OUTPUT_TOKENS,
            total_tokens=common.INPUT_TOKENS + common.OUTPUT_TOKENS,
        )
        return ModelResponse(output=output, usage=usage, response_id=None)

    async def stream_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        output = self._output(input)
        await common.provider_wait()
        response = Response(
            id="resp_1",
            created_at=0,
            model="fake",
            object="response",
            output=[],
            tool_choice="auto",
            tools=[],
            top_p=None,
            parallel_tool_calls=False,
            status="in_progress",
        )
        seq = 0
        yield ResponseCreatedEvent(type="response.created", response=response, sequence_number=seq)
        item = output[0]
        if isinstance(item, ResponseOutputMessage):
            for word in common.chunks(item.content[0].text):  # type: ignore[union-attr]
                seq += 1
                yield ResponseTextDeltaEvent(
                    type="response.output_text.delta",
                    item_id=item.id,
                    output_index=0,
                    content_index=0,
                    delta=word,
                    logprobs=[],
                    sequence_number=seq,
                )
        done = response.model_copy(update={"output": output, "status": "completed", "usage": RESPONSE_USAGE})
        yield ResponseCompletedEvent(type="response.completed", response=done, sequence_number=seq + 1)


actor = Agent(name="actor", instructions="You write code.", model=FakeModel("actor"))
critic = Agent(name="critic", instructions="You review code.", model=FakeModel("critic"), output_type=Verdict)
worker = Agent(name="coder", instructions="You write code.", model=FakeModel("worker"))
WORKER_EVENTS = 0
"""Events the worker streamed inside the tool (read there, outside the supervisor's stream)."""


async def _stream(agent: Agent[Any], prompt: str) -> tuple[Any, int]:
    result = Runner.run_streamed(agent, prompt)
    count = 0
    async for _ in result.stream_events():
        count += 1
    return result.final_output, count


@function_tool
async def delegate(worker: str, instructions: str) -> str:
    """Hand a task to a worker."""
    global WORKER_EVENTS
    output, n = await _stream(globals()["worker"], instructions)
    WORKER_EVENTS += n
    return str(output)


supervisor_agent = Agent(
    name="supervisor", instructions="You coordinate.", model=FakeModel("supervisor"), tools=[delegate]
)


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
        {"openai-agents": version("openai-agents")},
        notes={
            "a": "two Agents in a loop, custom Model, tracing off",
            "b": "delegate function tool, worker streamed inside it",
        },
    )
