"""Tools an Agent's model can call: `@tool` turns a typed function into one.

The function's signature becomes the JSON schema the model sees, its docstring the
description. Arguments are validated with pydantic before the function runs; a
validation failure, an exception inside the function, or a return value that cannot be
turned into text (neither a str, a pydantic model, nor JSON-serialisable data) becomes an
error result that the model reads (with the message) rather than a crash. The error
result is the step's outcome, so the journal records it and a replay serves it. Sync functions run in a worker
thread so they cannot stall the event loop; async ones run in the loop.

A call runs in two phases (`Tool.prepare`): first it takes its step index, in the order
the model listed the turn's calls; then it runs, concurrently with the turn's other calls,
as a journaled step of its session (`tool_step`). A `WrapperTool` changes what a tool does
around that (`jeeves.agent.gating.Gated` puts the run's approval gate before it).
"""

from __future__ import annotations

import abc
import functools
import hashlib
import inspect
from collections.abc import Awaitable, Callable, Sequence, Set
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, get_type_hints, overload

import anyio
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, create_model

from jeeves._base.ids import validate_name
from jeeves._base.validate import check_str, short_repr
from jeeves._run.context import Context, StepResult
from jeeves._run.sessions import tool_span
from jeeves._run.state import count_tool_call
from jeeves._run.steps import next_index
from jeeves.approvals.policy import APPROVAL_MODES, ApprovalMode
from jeeves.errors import UserError, UserTypeError
from jeeves.journal.records import fingerprint
from jeeves.messages import ToolCall, ToolSpec

__all__ = [
    "APPROVAL_MODES",
    "ApprovalMode",
    "Tool",
    "ToolContext",
    "ToolOutcome",
    "ToolRun",
    "Toolset",
    "WrapperTool",
    "current_tool",
    "idempotency_key",
    "tool",
    "tool_step",
]


@dataclass(frozen=True)
class ToolContext:
    """The tool call running now: its session, its journal step and its request's fingerprint.

    `idempotency_key` is derived from these three only, so it is the same every time this
    step runs: a resume after a crash runs the one step that was in flight again (jeeves is
    at-least-once for that step) with the same key, and an external system that takes the
    key (a payment API's `Idempotency-Key`) absorbs the duplicate. The fingerprint (the
    journal's, of `request`) and the key are computed when first read: a tool that reads
    neither does not hash its request again.
    """

    session_id: str
    step: int
    request: Any = field(repr=False, hash=False)
    """What the call's journaled step records: the tool's name and its arguments."""

    @functools.cached_property
    def fingerprint(self) -> str:
        return fingerprint(self.request)  # the module's function (a method does not see the class scope)

    @functools.cached_property
    def idempotency_key(self) -> str:
        digest = hashlib.sha256(f"{self.session_id}\x00{self.step}\x00{self.fingerprint}".encode())
        return "jv-" + digest.hexdigest()[:32]


_CURRENT: ContextVar[ToolContext | None] = ContextVar("jeeves_tool", default=None)


def current_tool() -> ToolContext:
    """The tool call running now; a UserError outside a tool a jeeves Agent called."""
    found = _CURRENT.get()
    if found is None:
        raise UserError(
            "jeeves.agent.tools.current_tool() was called outside a tool call; call it inside a @tool function "
            "while an Agent runs it."
        )
    return found


def idempotency_key() -> str:
    """This tool call's idempotency key: stable across resumes (see `ToolContext`)."""
    return current_tool().idempotency_key


_ANY: TypeAdapter[Any] = TypeAdapter(Any, config=ConfigDict(defer_build=True))


class ToolOutcome(BaseModel):
    """What a tool call gave back: text for the model, and whether it is an error."""

    model_config = ConfigDict(defer_build=True)

    text: str
    is_error: bool = False


ToolRun = Callable[[], Awaitable[StepResult[ToolOutcome]]]
"""One prepared tool call (`Tool.prepare`), its step indices taken: awaiting it runs the call."""


def _describe(fn: Callable[..., Any]) -> str:
    doc = inspect.getdoc(fn) or ""
    return doc.strip()


def _arguments_model(fn: Callable[..., Any], name: str) -> type[BaseModel]:
    hints = get_type_hints(fn)
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise UserError(f"Tool {name!r} takes *{param.name}; tools need named, typed parameters.")
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hints.get(param.name, Any), default)
    return create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)


_MAX_DETAIL = 300


def _render(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return _ANY.dump_json(value).decode()


def _unrenderable(name: str, value: Any, exc: Exception) -> ToolOutcome:
    kind = type(value)
    detail = str(exc) if len(str(exc)) <= _MAX_DETAIL else str(exc)[:_MAX_DETAIL] + " …"
    return ToolOutcome(
        text=(
            f"Tool {name!r} returned a value of type {kind.__module__}.{kind.__qualname__} that cannot be "
            f"sent as text: {detail}. The tool must return a str, a pydantic model, or JSON-serialisable "
            f"data (dict, list, str, int, float, bool, None) instead."
        ),
        is_error=True,
    )


class Tool:
    """A function the model may call. Build one with `@tool` or `Tool(fn)`."""

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        approval: ApprovalMode | None = None,
        requires_evidence: Sequence[str] = (),
    ) -> None:
        if not callable(function) or isinstance(function, type):
            raise UserTypeError(
                f"Tool needs a typed function, got {short_repr(function)}; pass a def or async def."
            )
        if approval is not None and approval not in APPROVAL_MODES:
            raise UserError(
                f"Tool approval mode {approval!r} is not one of {', '.join(APPROVAL_MODES)}; "
                f"say how much the tool can change, e.g. approval='read_only'."
            )
        self.function = function
        self.approval = approval
        """The tool's approval mode; None when not said (plan checks read it as `local_write`)."""
        self.name = validate_name(name or getattr(function, "__name__", ""), what="tool")
        if isinstance(requires_evidence, str) or not all(
            isinstance(c, str) and c.strip() for c in requires_evidence
        ):
            raise UserError(
                f"Tool {self.name!r} requires_evidence must be a list of evidence class names, got "
                f"{requires_evidence!r}; e.g. requires_evidence=['refund_window']."
            )
        self.requires_evidence: tuple[str, ...] = tuple(dict.fromkeys(requires_evidence))
        """Evidence classes a plan step calling this tool must pin, whatever the plan says
        (`jeeves.critics.plan.verify`)."""
        if description is not None:
            check_str(description, name=f"Tool {self.name!r} description")
        self.description = description if description is not None else _describe(function)
        self._arguments = _arguments_model(function, self.name)
        self._is_async = inspect.iscoroutinefunction(function)
        schema = self._arguments.model_json_schema()
        schema.pop("title", None)
        self._spec = ToolSpec(name=self.name, description=self.description, parameters=schema)

    def spec(self) -> ToolSpec:
        """The tool as the model sees it (built once, at construction)."""
        return self._spec

    def step_request(self, arguments: str) -> dict[str, Any]:
        """The request its journaled step records and fingerprints for a call with `arguments`."""
        return {"name": self.name, "arguments": arguments}

    def prepare(self, ctx: Context, call: ToolCall) -> ToolRun:
        """Take `call`'s step index in session `ctx` now; return what runs it (`tool_step`).

        A turn prepares its calls in the order the model listed them, before any runs, then
        runs them concurrently: so each call has the same index live and on replay, whichever
        finishes first."""
        return functools.partial(tool_step, ctx, self, call, next_index(ctx))

    async def invoke(self, arguments: str, context: ToolContext | None = None) -> ToolOutcome:
        """Validate `arguments` (JSON text) and call the function; failures become error outcomes.

        `context` is what `current_tool()` / `idempotency_key()` return inside the function."""
        token = _CURRENT.set(context)
        try:
            return await self._invoke(arguments)
        finally:
            _CURRENT.reset(token)

    async def _invoke(self, arguments: str) -> ToolOutcome:
        try:
            parsed = self._arguments.model_validate_json(arguments or "{}")
        except ValidationError as exc:
            return ToolOutcome(
                text=f"Invalid arguments for tool {self.name!r}: {exc}. Fix them and call again.",
                is_error=True,
            )
        kwargs = dict(parsed)
        try:
            if self._is_async:
                value = await self.function(**kwargs)
            else:
                # A cancelled run (Ctrl-C, a stream left early) does not wait for the thread:
                # its result is dropped, nothing is journaled, and a resumed run calls it again.
                value = await anyio.to_thread.run_sync(
                    lambda: self.function(**kwargs), abandon_on_cancel=True
                )
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            return ToolOutcome(text=f"Tool {self.name!r} failed: {type(exc).__name__}: {exc}", is_error=True)
        try:
            # Serialisation runs user code too (validators, custom serialisers), so any
            # exception here is the tool's fault, not the run's.
            return ToolOutcome(text=_render(value))
        except Exception as exc:
            return _unrenderable(self.name, value, exc)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


async def tool_step(ctx: Context, tool: Tool, call: ToolCall, index: int) -> StepResult[ToolOutcome]:
    """`call` of `tool` as journaled step `index` of session `ctx`: served when the journal
    has it, else invoked live (in an `execute_tool` span)."""
    request = tool.step_request(call.arguments)

    async def live() -> ToolOutcome:  # a served step runs none of this
        context = ToolContext(ctx.session_id, index, request)
        with tool_span(ctx, call.name, call.id, call.arguments) as span:
            outcome = await tool.invoke(call.arguments, context)
            span.set_attribute("gen_ai.tool.call.result", outcome.text)
            if outcome.is_error:
                span.set_attribute("error.type", "tool_error")
            return outcome

    count_tool_call(ctx, call.name)
    return await ctx.step("tool", call.name, request, live, ToolOutcome, index=index)


class WrapperTool(Tool):
    """A tool around another one, `wrapped`: the same name, spec, mode and calls, nothing built
    again. A subclass overrides what it changes: `invoke` (what runs inside the call's
    journaled step) or `prepare` (the whole call, as `jeeves.agent.gating.Gated` puts a gate
    before it). A wrapper that keeps `Tool.prepare` runs its own `invoke` in the step, so it
    cannot wrap a tool whose `prepare` does more (a `Gated` one): wrap the tool, then gate it.
    """

    def __init__(self, wrapped: Tool) -> None:  # not Tool.__init__: the wrapped tool is built
        if type(self).prepare is Tool.prepare and type(wrapped).prepare is not Tool.prepare:
            raise UserError(
                f"{type(self).__name__} cannot wrap {wrapped!r}: its calls would pass by that tool's own "
                f"prepare(); wrap the tool inside it instead (an Agent gates its tools itself, outermost)."
            )
        self.wrapped = wrapped

    def __getattr__(self, name: str) -> Any:
        """The wrapped tool's attributes (`name`, `approval`, `description`...)."""
        if name == "wrapped":  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.wrapped, name)

    def spec(self) -> ToolSpec:
        return self.wrapped.spec()

    def step_request(self, arguments: str) -> dict[str, Any]:
        return self.wrapped.step_request(arguments)

    async def invoke(self, arguments: str, context: ToolContext | None = None) -> ToolOutcome:
        return await self.wrapped.invoke(arguments, context)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.wrapped!r})"


class Toolset(abc.ABC):
    """Tools an Agent gets at run time from outside its code (an MCP server's), not at construction.

    An Agent holding toolsets enters each one's `session()` around its run (the toolset may
    open a connection there, lazily, and must close it on exit, cancelled or not) and asks
    `tools(ctx, taken)` before each model turn. `taken` holds the names already in use (the
    agent's own tools, earlier toolsets'); a toolset renames its tools that collide. Whatever
    it learns from outside, it journals through `ctx`, so a replay or a resume asks no one.
    """

    name: str
    """Names the toolset in errors and namespaces its tools on a collision."""

    @abc.abstractmethod
    def session(self) -> AbstractAsyncContextManager[object]:
        """What the agent holds open while it runs."""

    @abc.abstractmethod
    async def tools(self, ctx: Context, taken: Set[str]) -> Sequence[Tool]:
        """The tools the model is offered at this turn, named apart from `taken`."""


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    approval: ApprovalMode | None = None,
    requires_evidence: Sequence[str] = (),
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    approval: ApprovalMode | None = None,
    requires_evidence: Sequence[str] = (),
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a Tool of a typed function: `@tool`, `@tool(name="search")`, `@tool(approval="destructive")`,
    `@tool(requires_evidence=["refund_window"])` (a plan step calling it must pin that evidence)."""
    if function is not None:
        return Tool(function)

    def decorate(fn: Callable[..., Any]) -> Tool:
        return Tool(
            fn, name=name, description=description, approval=approval, requires_evidence=requires_evidence
        )

    return decorate
