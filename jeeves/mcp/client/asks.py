"""A server's requests back to the client, answered through the run that made the call.

While a tool call is in flight, an MCP server may ask the client to sample a model
(`sampling/createMessage`) or to ask the user (`elicitation/create`). jeeves answers each in
a child session of the agent session whose call it is, so each is journaled, budgeted and
visible in the run's tree like any other session:

- sampling: `{session}__mcp_sampling_{k}`, one model call routed by the role `mcp_sampling`
  (`models={"mcp_sampling": ...}`), charged to the run's budget;
- elicitation: `{session}__mcp_elicitation_{k}`, an approval gate (durable: with no approver
  the run suspends, `jeeves approve` decides it, and resuming the run calls the tool again and
  is served the decision). Approve answers `accept`, with the decision's note as the content
  when it is a JSON object (`--note '{"name": "Ada"}'`); deny answers `decline`; an expired
  gate `cancel`.

`k` is the tool call's step index times 100 plus the request's position within that call,
so a resumed run meets the same child sessions. A server that asks while two calls of the
same connection are in flight is refused (no call to attribute it to).
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from jeeves._run.context import Output
from jeeves._run.gates import gate
from jeeves._run.steps import next_index, waiting_outside
from jeeves.approvals.policy import ApprovalMode
from jeeves.messages import Message, ModelRequest

if TYPE_CHECKING:
    from jeeves._run.context import Context
    from jeeves.mcp.client.connection import Connection

__all__ = ["InFlight", "elicitation_callback", "sampling_callback"]

_PER_CALL = 100


@dataclass
class _Ask:
    """One request of the server's, handed from the SDK's task to the tool call's."""

    job: Callable[[InFlight], Awaitable[Any]]
    done: anyio.Event = field(default_factory=anyio.Event)
    value: Any = None
    error: BaseException | None = None


@dataclass
class InFlight:
    """A tool call in flight on a connection: the session that made it and its step.

    The SDK calls the sampling and elicitation callbacks in its own task, outside the run's
    task tree; `ask` hands the work to `serve`, which runs in the tool call's task, so a gate
    that parks the run (or a cancelled run) stops it with the rest of the run."""

    ctx: Context
    step: int
    tool: str
    mode: ApprovalMode
    asked: int = 0
    _send: MemoryObjectSendStream[_Ask] = field(init=False)
    _receive: MemoryObjectReceiveStream[_Ask] = field(init=False)

    def __post_init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[_Ask](math.inf)

    def next_index(self) -> int:
        index = self.step * _PER_CALL + min(self.asked, _PER_CALL - 1)
        self.asked += 1
        return index

    async def ask(self, job: Callable[[InFlight], Awaitable[Any]]) -> Any:
        """Run `job` in the tool call's task; its result, or its exception raised here."""
        ask = _Ask(job)
        try:
            self._send.send_nowait(ask)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise RuntimeError(f"the call of {self.tool!r} has ended") from None
        await ask.done.wait()
        if ask.error is not None:
            raise ask.error
        return ask.value

    async def serve(self) -> None:
        """Answer asks until cancelled (the tool call ended)."""
        async for ask in self._receive:
            try:
                ask.value = await ask.job(self)
            except Exception as exc:
                ask.error = exc
            except BaseException:
                ask.error = RuntimeError(f"the call of {self.tool!r} was cancelled")
                raise
            finally:
                ask.done.set()

    def close(self) -> None:
        """The call ended: asks left over, and any made from now on, fail."""
        self._send.close()
        while True:
            try:
                left = self._receive.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                break
            left.error = RuntimeError(f"the call of {self.tool!r} has ended")
            left.done.set()
        self._receive.close()


def _text(content: Any) -> str:
    blocks = content if isinstance(content, list) else [content]
    return "\n".join(str(getattr(b, "text", "")) for b in blocks if getattr(b, "type", "") == "text")


class _Sampling:
    """One model call for a server's sampling request."""

    name = "mcp_sampling"

    def __init__(self, params: Any) -> None:
        self.params = params

    async def run(self, ctx: Context, task: str) -> Output:
        params = self.params
        messages = [Message.system(params.system_prompt)] if params.system_prompt else []
        for m in params.messages:
            text = _text(m.content)
            messages.append(
                Message.user(text) if m.role == "user" else Message(role="assistant", content=text)
            )
        options: dict[str, Any] = {"max_tokens": params.max_tokens}
        if params.temperature is not None:
            options["temperature"] = params.temperature
        response = await ctx.call_model(ModelRequest(messages=messages, params=options))
        return Output.of(response.text)


class _Elicitation:
    """An approval gate for a server's question to the user."""

    name = "mcp_elicitation"

    def __init__(self, server: str, call: InFlight, params: Any) -> None:
        self.server, self.call, self.params = server, call, params

    async def run(self, ctx: Context, task: str) -> Output:
        schema: Any = getattr(self.params, "requested_schema", None)
        if schema is not None and hasattr(schema, "model_dump"):
            schema = schema.model_dump(by_alias=True, exclude_none=True)
        arguments = {
            "server": self.server,
            "tool": self.call.tool,
            "message": self.params.message,
            "schema": schema,
        }
        decision = await gate(
            ctx,
            f"{self.server}.elicitation",
            f"elicit-{self.call.step}",
            arguments,
            self.call.mode,
            index=next_index(ctx),
        )
        return Output.of({"decision": decision.decision, "note": decision.note})


def _error(message: str) -> Any:
    from mcp.types import ErrorData

    return ErrorData(code=-32603, message=message)


def _bound(conn: Connection) -> InFlight | None:
    return next(iter(conn.in_flight.values())) if len(conn.in_flight) == 1 else None


def sampling_callback(conn: Connection) -> Any:
    async def sample(context: Any, params: Any) -> Any:
        from mcp.types import CreateMessageResult, TextContent

        call = _bound(conn)
        if call is None:
            return _error(
                "jeeves cannot tell which tool call this sampling request belongs to; it is refused."
            )

        async def job(call: InFlight) -> Output:
            task = _text(params.messages[-1].content)
            return await call.ctx.run(_Sampling(params), task, role="mcp_sampling", index=call.next_index())

        try:
            output = await call.ask(job)
        except Exception as exc:
            return _error(f"jeeves could not sample a model: {type(exc).__name__}: {exc}")
        text = TextContent(type="text", text=str(output.value))
        return CreateMessageResult(role="assistant", content=text, model="jeeves", stop_reason="endTurn")

    return sample


def elicitation_callback(conn: Connection, server: str) -> Any:
    async def elicit(context: Any, params: Any) -> Any:
        from mcp.types import ElicitResult

        call = _bound(conn)
        if call is None:
            return _error("jeeves cannot tell which tool call this elicitation belongs to; it is refused.")

        async def job(call: InFlight) -> Output:
            asking = _Elicitation(server, call, params)
            with waiting_outside(call.ctx):  # the tool step waits for the gate: the run may suspend
                return await call.ctx.run(
                    asking, params.message, role="mcp_elicitation", index=call.next_index()
                )

        try:
            output = await call.ask(job)
        except Exception as exc:
            return _error(f"jeeves could not ask: {type(exc).__name__}: {exc}")
        decided = output.value
        if decided["decision"] == "approve":
            return ElicitResult(action="accept", content=_content(decided["note"]))
        return ElicitResult(action="decline" if decided["decision"] == "deny" else "cancel")

    return elicit


def _content(note: str | None) -> dict[str, Any] | None:
    try:
        value = json.loads(note) if note else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
