"""Architectures whose model requests the journal-delta tests change one part at a time.

`tool_agent()` with `tool_model()` recorded tests/journal/data/v2_agent.jsonl with jeeves
at commit cfc7d86 (journal schema v2, every model request stored whole):

    jeeves.run(tool_agent(), "Find k.", model=tool_model(), journal=path, session_id="v2run")

and tests/journal/data/v3_agent.jsonl the same way with jeeves at commit f46c18b (journal
schema v3, model requests stored as deltas, each message's canonical JSON chained), with
`session_id="v3run"`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from jeeves import Agent, FunctionModel, Output, ToolCall, tool
from jeeves._run.context import Context
from jeeves.messages import Message, ModelRequest, ToolSpec
from jeeves.testing import Reply

TURNS = 4
"""The tool agent's model calls: three tool calls, then its answer."""


@tool
async def lookup(key: str) -> str:
    """Look a key up."""
    return f"the value of {key} is " + "r" * 40


def answer(request: ModelRequest) -> Reply:
    made = sum(1 for m in request.messages if m.role == "assistant")
    if made + 1 >= TURNS:
        return Reply(text=f"done after {made} lookups")
    arguments = json.dumps({"key": f"k{made}"})
    return Reply(tool_calls=[ToolCall(id=f"c{made}", name="lookup", arguments=arguments)])


def tool_agent(instructions: str = "You look things up.", **params: Any) -> Agent:
    return Agent(instructions, tools=[lookup], params={"temperature": 0, **params}, max_turns=TURNS + 2)


def tool_model() -> FunctionModel:
    return FunctionModel(answer, model_name="fixture-model")


CHANGES = (
    "first",
    "first_in_place",
    "middle",
    "middle_in_place",
    "last",
    "tools",
    "tool_in_place",
    "params",
    "schema",
)
"""Each part of a request `Convo` can change at call `at`."""


@dataclass
class Convo:
    """Six model calls on one growing conversation. `change` (one of CHANGES) alters one part
    of call `at`'s request (and of the calls after it); `seen` keeps each request as the
    model was asked it (its fingerprint payload, taken at the call)."""

    change: str | None = None
    at: int = 4
    calls: int = 6
    name: str = "convo"
    seen: list[dict[str, Any]] = field(default_factory=list)

    def model(self) -> FunctionModel:
        def reply(request: ModelRequest) -> str:
            self.seen.append(request.fingerprint_payload())
            return f"reply {len(request.messages)}"

        return FunctionModel(reply)

    async def run(self, ctx: Context, task: str) -> Output:
        messages = [Message.system("You chat."), Message.user(task)]
        tools = [ToolSpec(name="lookup", description="Look a key up.")]
        params: dict[str, Any] = {"temperature": 0}
        schema: dict[str, Any] | None = None
        text = ""
        for turn in range(self.calls):
            messages.append(Message.user(f"turn {turn}"))
            if turn == self.at:
                messages, tools, params, schema = self._changed(messages, tools, params, schema)
            request = ModelRequest(messages=messages, tools=tools, params=params, output_schema=schema)
            text = (await ctx.call_model(request)).text
            messages.append(Message(role="assistant", content=text))
        return Output.of(text)

    def _changed(
        self, messages: list[Message], tools: list[ToolSpec], params: dict[str, Any], schema: Any
    ) -> tuple[list[Message], list[ToolSpec], dict[str, Any], Any]:
        middle = len(messages) // 2
        match self.change:
            case "first":  # a new list, a new first message
                messages = [Message.system("You chat tersely."), *messages[1:]]
            case "first_in_place":  # the same message object, edited
                messages[0].content = "You chat tersely."
            case "middle":
                edited = Message(role=messages[middle].role, content="edited")
                messages = [*messages[:middle], edited, *messages[middle + 1 :]]
            case "middle_in_place":
                messages[middle].content = "edited"
            case "last":
                messages[-1] = Message.user("a changed last message")
            case "tools":
                tools = [*tools, ToolSpec(name="other")]
            case "tool_in_place":
                tools[0].description = "Look a key up, changed."
            case "params":
                params = {"temperature": 0.5}
            case "schema":
                schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
        return messages, tools, params, schema
