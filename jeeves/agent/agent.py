"""Agent: the leaf architecture. One model, instructions, tools, an optional typed output.

Pattern:
    system instructions + the task → model → (tool calls, run concurrently → model)* → output.
    With `output_type`, the reply is validated against it; one repair turn quotes the
    validation error, and a second failure raises `OutputValidationError`.

Strengths:
    Small and predictable. Every model call and tool call is a journaled step, so a run
    replays exactly; tool failures and bad tool arguments are shown to the model, not raised.

Weaknesses:
    No memory across runs and no planning beyond what the model does in its turns; wrap it
    in an ActorCritic or a Supervisor for review and delegation.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import anyio
from pydantic import PydanticUserError, TypeAdapter, ValidationError

from jeeves._base.cache import kept
from jeeves._base.ids import validate_name
from jeeves._base.validate import check_int, check_mapping, check_str, short_repr
from jeeves._run import model_calls
from jeeves._run.concurrency import run_all
from jeeves._run.context import Caller, Context, Output, StepResult
from jeeves._run.sessions import injected, intervention, steered
from jeeves._run.state import count_tool_call
from jeeves._run.steering import ToolStep, Turn
from jeeves._run.steps import next_index
from jeeves.agent.gating import gated
from jeeves.agent.tools import Tool, ToolOutcome, ToolRun, Toolset
from jeeves.errors import (
    BudgetExceeded,
    MaxTurnsExceeded,
    OutputValidationError,
    UserError,
    UserTypeError,
)
from jeeves.events import OutputRetrying, ToolCompleted, ToolStarted
from jeeves.messages import Message, ModelRequest, ToolCall, ToolSpec, turn_request
from jeeves.models.base import ModelClient, Route

__all__ = ["Agent", "extract_json", "run_tool_calls"]

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def extract_json(text: str) -> str:
    """The JSON object or array in a reply: fenced, bare, or after a preamble."""
    stripped = text.strip()
    fenced = _FENCE.search(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    if stripped[:1] in "{[":
        return stripped
    starts = [i for i in (stripped.find("{"), stripped.find("[")) if i >= 0]
    if not starts:
        return stripped
    start = min(starts)
    end = max(stripped.rfind("}"), stripped.rfind("]"))
    return stripped[start : end + 1] if end > start else stripped[start:]


def _items(values: object, *, name: str) -> list[Any]:
    """The items of a list-like argument; a lone str, mapping or non-iterable is a mistake."""
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
        raise UserTypeError(f"{name} must be a list, got {short_repr(values)}; wrap a single one in [].")
    return list(values)


_SCHEMAS: dict[Any, tuple[TypeAdapter[Any], dict[str, Any]]] = {}
MAX_SCHEMAS = 512
"""How many output types `_adapter` keeps; past that, the oldest is dropped."""


def _adapter(output_type: Any) -> tuple[TypeAdapter[Any], dict[str, Any]]:
    """The validator of `output_type` and the JSON schema the model is shown, or a UserTypeError.

    Built once per type and kept: a program that builds its architecture per request would
    otherwise generate the same schema (milliseconds, and a pydantic generator that only
    the cyclic collector frees) for every `Agent`. An unhashable type is built each time."""
    try:
        hash(output_type)
    except TypeError:
        return _built(output_type)
    return kept(_SCHEMAS, output_type, _built, MAX_SCHEMAS)


def _built(output_type: Any) -> tuple[TypeAdapter[Any], dict[str, Any]]:
    if isinstance(output_type, str):  # a name, not a type: pydantic would take it as a forward reference
        raise UserTypeError(
            f"Agent output_type is the string {short_repr(output_type)}; pass the type itself "
            f"(output_type=Answer), not its name."
        )
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(output_type)
        return adapter, adapter.json_schema()
    except PydanticUserError:  # not a type, or one pydantic cannot describe as JSON
        raise UserTypeError(
            f"Agent output_type {short_repr(output_type)} is not a type pydantic can validate as JSON; "
            f"pass a pydantic model, a dataclass, a TypedDict or a type such as list[str]."
        ) from None


def _as_tool(value: object, index: int) -> Tool | Toolset:
    if isinstance(value, Tool | Toolset):
        return value
    if not callable(value) or isinstance(value, type):
        raise UserTypeError(
            f"Agent tools[{index}] is {short_repr(value)}, not a tool; pass a typed function or a @tool."
        )
    return Tool(value)


def _turn(
    ctx: Context, index: int, text: str, calls: Sequence[ToolCall], outcomes: Sequence[ToolOutcome]
) -> Turn:
    steps = tuple(
        ToolStep(c.name, c.arguments, o.text, o.is_error) for c, o in zip(calls, outcomes, strict=True)
    )
    return Turn(ctx.session_id, index, text, steps, final=not calls)


async def _between_turns(ctx: Context, turn: Turn) -> tuple[str | None, tuple[str, ...]]:
    """At a turn boundary: the intervener's stop reason, or the messages to add before the
    next model call (the intervener's, then a human's from the run's inbox)."""
    added: tuple[str, ...] = ()
    if steered(ctx):
        steer = await intervention(ctx, turn)
        if steer is not None and steer.stop is not None:
            return steer.stop, ()
        added = steer.messages if steer is not None else ()
    return None, added + await injected(ctx, turn.turn)


class Agent:
    """A model with instructions and tools.

    Args:
        instructions: The system prompt.
        role: The role name routing uses when this agent is the root of a run; as a child,
            the role its parent gives it (`actor`, `critic`, a worker name) is used instead.
        tools: Tools (or plain typed functions) the model may call.
        output_type: A pydantic model (or any type pydantic validates) for a structured
            reply; None for text.
        max_turns: Model calls allowed before `MaxTurnsExceeded`.
        model: Pin this agent to a model, whatever the router says: a model string, a
            Route, or a ModelClient. Unset, the router decides by role.
        params: Provider parameters sent with every call (temperature, max_tokens…); they
            are part of each request's replay fingerprint.
        description: What the agent does; a Supervisor shows it to its model.
    """

    name = "agent"

    def __init__(
        self,
        instructions: str,
        *,
        role: str = "agent",
        tools: Sequence[Tool | Toolset | Callable[..., Any]] = (),
        output_type: Any = None,
        max_turns: int = 10,
        model: str | Route | ModelClient | None = None,
        params: Mapping[str, Any] | None = None,
        description: str = "",
    ) -> None:
        self.instructions = check_str(instructions, name="Agent instructions")
        self.role = validate_name(role)
        given = [_as_tool(t, i) for i, t in enumerate(_items(tools, name="Agent tools"))]
        self.tools = [t for t in given if isinstance(t, Tool)]
        self.toolsets = [t for t in given if isinstance(t, Toolset)]
        """Tools listed at run time (an MCP server's), asked for before each model turn."""
        names = [t.name for t in self.tools]
        if len(set(names)) != len(names):
            raise UserError(f"Agent has two tools with the same name: {sorted(names)!r}; rename one.")
        self._tools = {t.name: t for t in self.tools}
        self.output_type = None if output_type is str else output_type
        self._adapter: TypeAdapter[Any] | None = None
        self._schema: dict[str, Any] | None = None
        if self.output_type is not None:
            self._adapter, self._schema = _adapter(self.output_type)
        self.max_turns = check_int(max_turns, name="Agent max_turns", minimum=1)
        self.route = None if model is None else Route.coerce(model, key=f"{role} (Agent model=)")
        self.params = check_mapping(params, name="Agent params")
        self.description = (
            check_str(description, name="Agent description") or instructions.split("\n", 1)[0][:200]
        )
        self._specs = [t.spec() for t in self.tools]
        self._own = _Kit(self._tools, self._specs)

    def describe_model(self, ctx: Context) -> str:
        """The model this agent's calls go to in `ctx` (shown in session.started)."""
        return (self.route or model_calls.route(ctx)).model

    def model_callers(self, path: tuple[str, ...], routed: tuple[str, ...]) -> list[Caller]:
        """This agent's session (see `jeeves._run.context.model_callers`)."""
        return [Caller(path, None if self.route is not None else routed)]

    def _request(self, messages: list[Message], kit: _Kit) -> ModelRequest:
        schema = self._schema
        name = getattr(self.output_type, "__name__", None) if schema else None
        return turn_request(messages, kit.specs, self.params, output_schema=schema, output_name=name)

    def run(self, ctx: Context, task: str) -> Coroutine[Any, Any, Output]:
        """Run the agent on `task` (with toolsets: inside their sessions, see `jeeves.agent.tools.Toolset`)."""
        return self._run(ctx, task) if not self.toolsets else self._run_in_toolsets(ctx, task)

    async def _run_in_toolsets(self, ctx: Context, task: str) -> Output:
        async with AsyncExitStack() as stack:
            for toolset in self.toolsets:
                await stack.enter_async_context(toolset.session())
            return await self._run(ctx, task)

    async def _kit(self, ctx: Context) -> _Kit:
        """This turn's tools: the agent's own, then each toolset's, named apart, each gated by
        the run's approval policy (`jeeves.agent.gating`)."""
        kit = self._own if not self.toolsets else await self._listed(ctx)
        tools = gated(ctx, kit.tools)
        return kit if tools is kit.tools else _Kit(tools, kit.specs)

    async def _listed(self, ctx: Context) -> _Kit:
        tools = dict(self._tools)
        for toolset in self.toolsets:
            for found in await toolset.tools(ctx, tools.keys()):
                tools[found.name] = found
        return _Kit(tools, [t.spec() for t in tools.values()])

    async def _run(self, ctx: Context, task: str) -> Output:
        messages = [Message.system(self.instructions), Message.user(task)]
        repaired = False
        last_text = ""
        for _turn_index in range(self.max_turns):
            kit = await self._kit(ctx)
            try:
                response = await ctx.call_model(self._request(messages, kit), route=self.route)
            except BudgetExceeded:
                if last_text and self._adapter is None:
                    return Output.of(last_text, stop_reason="budget")
                raise
            messages.append(
                Message(role="assistant", content=response.text or None, tool_calls=response.tool_calls)
            )
            last_text = response.text or last_text
            outcomes: list[ToolOutcome] = []
            if response.tool_calls:
                try:
                    outcomes = await _run_calls(ctx, response.tool_calls, kit.tools)
                except BudgetExceeded:  # the deadline stopped a tool: keep the text so far, as above
                    if last_text and self._adapter is None:
                        return Output.of(last_text, stop_reason="budget")
                    raise
                messages.extend(
                    Message(role="tool", content=o.text, tool_call_id=c.id, name=c.name)
                    for c, o in zip(response.tool_calls, outcomes, strict=True)
                )
            turn = _turn(ctx, _turn_index, response.text, response.tool_calls, outcomes)
            stop, added = await _between_turns(ctx, turn)
            if stop is not None:
                return Output.of(last_text, stop_reason=stop)
            if added:
                messages.extend(Message.user(m) for m in added)
                continue
            if response.tool_calls:
                continue
            if self._adapter is None:
                return Output.of(response.text)
            try:
                return Output.of(self._adapter.validate_json(extract_json(response.text)))
            except ValidationError as exc:
                if repaired:
                    raise OutputValidationError(
                        f"The reply did not match {self.output_type!r} after a repair turn: {exc}. "
                        f"Reply was {response.text[:300]!r}. Simplify the output type or use a stronger model."
                    ) from exc
                repaired = True
                await ctx.emit(OutputRetrying(session_id=ctx.session_id, error=str(exc)))
                messages.append(Message.user(self._repair_prompt(exc)))
        raise MaxTurnsExceeded(
            f"Agent in session {ctx.session_id!r} was still calling tools after max_turns={self.max_turns}; "
            f"raise max_turns or tell the agent when to stop."
        )

    def _repair_prompt(self, error: ValidationError) -> str:
        schema = json.dumps(self._schema or {})
        return (
            f"Your reply did not match the required JSON schema:\n{error}\n"
            f"Reply again with only a JSON object matching this schema, no other text:\n{schema}"
        )


@dataclass(frozen=True)
class _Kit:
    """The tools of one model turn, by the name the model calls them, and their specs in order."""

    tools: Mapping[str, Tool]
    specs: list[ToolSpec]


async def _run_calls(ctx: Context, calls: Sequence[ToolCall], tools: Mapping[str, Tool]) -> list[ToolOutcome]:
    """Run one turn's tool calls concurrently.

    Each call is prepared (`Tool.prepare`: its step indices taken) and `tool.started`
    emitted in the order the model listed the calls, before any runs; each `tool.completed`
    is released in that order too, as soon as the calls before it are done. So a session's
    events are the same live and on replay, whichever tool finishes first.
    """
    runs = [_prepare(ctx, c, tools) for c in calls]
    for c in calls:
        await ctx.emit(
            ToolStarted, session_id=ctx.session_id, tool_call_id=c.id, name=c.name, arguments=c.arguments
        )
    if len(calls) == 1:
        outcome, replayed = await runs[0]()
        await _completed(ctx, calls[0], outcome, replayed)
        return [outcome]
    released = [anyio.Event() for _ in calls]

    async def job(position: int) -> ToolOutcome:
        try:
            outcome, replayed = await runs[position]()
            if position:
                await released[position - 1].wait()
            await _completed(ctx, calls[position], outcome, replayed)
            return outcome
        finally:
            released[position].set()

    return await run_all([functools.partial(job, p) for p in range(len(calls))])


def _prepare(ctx: Context, call: ToolCall, tools: Mapping[str, Tool]) -> ToolRun:
    found = tools.get(call.name)
    if found is not None:
        return found.prepare(ctx, call)
    return functools.partial(_unknown, ctx, call, sorted(tools), next_index(ctx))


async def _unknown(ctx: Context, call: ToolCall, known: list[str], index: int) -> StepResult[ToolOutcome]:
    """A call of no tool of this turn: a journaled step whose outcome names the tools there are."""
    request = {"name": call.name, "arguments": call.arguments}

    async def live() -> ToolOutcome:
        listed = ", ".join(known) or "none"
        return ToolOutcome(text=f"Unknown tool {call.name!r}; the tools are: {listed}.", is_error=True)

    count_tool_call(ctx, call.name)
    return await ctx.step("tool", call.name, request, live, ToolOutcome, index=index)


async def _completed(ctx: Context, call: ToolCall, outcome: ToolOutcome, replayed: bool) -> None:
    await ctx.emit(
        ToolCompleted,
        session_id=ctx.session_id,
        tool_call_id=call.id,
        name=call.name,
        result=outcome.text,
        is_error=outcome.is_error,
        replayed=replayed,
    )


async def run_tool_calls(agent: Agent, ctx: Context, calls: Sequence[ToolCall]) -> list[ToolOutcome]:
    """Run `calls` with `agent`'s tools (its own and its toolsets') in session `ctx`, as one
    of its turns would: concurrently, gated by the run's policy, journaled, events in the
    order listed. For an architecture that drives an Agent's tools itself (the jeevesagent
    supervisor runs the model's calls of its own tools through this)."""
    kit = await agent._kit(ctx)
    return await _run_calls(ctx, calls, kit.tools)
