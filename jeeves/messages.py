"""The data that crosses the model seam: messages, tool calls, requests, replies, usage.

Everything here is a pydantic model so that a request can be fingerprinted and a reply
journaled as plain JSON.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic_core import SchemaSerializer

from jeeves._base.redact import mask_credentials, strip_credentials

__all__ = [
    "Message",
    "ModelRequest",
    "ModelResponse",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "UsageTally",
    "format_cost",
    "format_usd",
]

mutations = 0
"""How many times a field of a `Message` or `ToolSpec` was assigned to, process-wide. A
journaled model step stores what its request adds to the session's previous one when that
one's messages are (the same objects) at its front; an assignment since then means a message
may have been edited in place, and the request is stored and hashed whole
(`jeeves.journal.delta`). Building messages assigns nothing."""


def _count_mutation() -> None:
    global mutations
    mutations += 1


class ToolCall(BaseModel):
    """A tool call the model asked for."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    id: str
    """The provider's id for this call; tool results answer it."""
    name: str
    """The tool's name."""
    arguments: str = "{}"
    """The arguments as the model wrote them: a JSON object, as text (it may be malformed)."""


class Message(BaseModel):
    """One chat message."""

    model_config = ConfigDict(defer_build=True)

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """On an assistant message: the calls it made."""
    tool_call_id: str | None = None
    """On a tool message: the call it answers."""
    name: str | None = None
    """On a tool message: the tool's name."""

    def __setattr__(self, name: str, value: Any) -> None:
        _count_mutation()
        super().__setattr__(name, value)

    @classmethod
    def system(cls, content: str) -> Message:
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> Message:
        return cls(role="user", content=content)


@functools.cache
def messages_serializer() -> SchemaSerializer:
    """pydantic's serializer of a `list[Message]`, built at its first use: a list of messages
    dumps with it exactly as a `ModelRequest`'s `messages` field does. What a journaled model
    step hashes the JSON of (`jeeves.journal.delta`), and what the server's request log keeps
    a call's new messages as (`to_python(..., mode="json")`, `jeeves.server.requests`)."""
    return TypeAdapter(list[Message]).serializer


class ToolSpec(BaseModel):
    """A tool as the model sees it: name, description and a JSON schema of its arguments."""

    model_config = ConfigDict(defer_build=True)

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    def __setattr__(self, name: str, value: Any) -> None:
        _count_mutation()
        super().__setattr__(name, value)


class Usage(BaseModel):
    """Tokens, calls and USD spent. Adds up with `+`.

    A call litellm has no price for is *unpriced*: its cost is unknown, never 0. One call's
    Usage says so with `cost_usd=None`; a sum keeps the priced calls' USD in `cost_usd` and
    counts the rest in `unpriced_calls`, and its `cost_usd` is None only when none of its
    calls has a price. `format_cost` shows it (`$0.0123 + unpriced (1 call)`). A journal
    written before `unpriced_calls` existed reads as priced (0 unpriced).
    """

    model_config = ConfigDict(defer_build=True)

    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0
    cost_usd: float | None = 0.0
    """USD of the calls with a known price; None when no call here has one."""
    unpriced_calls: int = 0
    """Calls among `model_calls` without a known price (not counted in `cost_usd`)."""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def unpriced(self) -> int:
        """How many calls have no known price (one call's `cost_usd=None` counts as its calls)."""
        if self.cost_usd is None and not self.unpriced_calls:
            return max(self.model_calls, 1)
        return self.unpriced_calls

    @property
    def priced_usd(self) -> float:
        """USD of the priced calls (0.0 when none is priced)."""
        return self.cost_usd or 0.0

    @property
    def cost(self) -> float | None:
        """The whole cost in USD, or None when any call in it is unpriced (then it is unknown)."""
        return None if self.unpriced else self.priced_usd

    def __add__(self, other: Usage) -> Usage:
        calls, unpriced = self.model_calls + other.model_calls, self.unpriced + other.unpriced
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            model_calls=calls,
            cost_usd=_known_usd(self.priced_usd + other.priced_usd, calls, unpriced),
            unpriced_calls=unpriced,
        )


def _known_usd(usd: float, calls: int, unpriced: int) -> float | None:
    """A sum's `cost_usd`: None when every call in it is unpriced, else the priced calls' USD."""
    return None if unpriced and unpriced >= calls else usd


def format_usd(amount: float) -> str:
    """Dollars as people read them: `$0.0104`, `$1.2500`; a sum below a cent keeps two
    significant digits (`$0.000031`), so a cheap run on a small model never reads as free."""
    digits = 4
    if 0 < amount < 0.01:
        digits = min(10, max(4, 1 - math.floor(math.log10(amount))))
    return f"${amount:.{digits}f}"


def format_cost(usage: Usage) -> str:
    """A usage's cost as the CLI and the tree show it: `$0.0123`; with calls that have no
    known price, `$0.0123 + unpriced (1 call)`, or `unpriced (2 calls)` when none has one."""
    unpriced = usage.unpriced
    if not unpriced:
        return format_usd(usage.priced_usd)
    calls = f"unpriced ({unpriced} call{'' if unpriced == 1 else 's'})"
    if usage.cost_usd is None:
        return calls
    return f"{format_usd(usage.priced_usd)} + {calls}"


class UsageTally:
    """A mutable running total of Usage: cheaper than adding pydantic models on every call."""

    __slots__ = ("cost_usd", "input_tokens", "model_calls", "output_tokens", "unpriced_calls")

    def __init__(self) -> None:
        self.input_tokens = 0
        self.output_tokens = 0
        self.model_calls = 0
        self.cost_usd = 0.0
        """USD of the priced calls."""
        self.unpriced_calls = 0

    def add(self, usage: Usage | UsageTally) -> None:
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.model_calls += usage.model_calls
        self.cost_usd += usage.cost_usd or 0.0
        self.unpriced_calls += usage.unpriced

    @property
    def unpriced(self) -> int:
        return self.unpriced_calls

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def snapshot(self) -> Usage:
        return Usage(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            model_calls=self.model_calls,
            cost_usd=_known_usd(self.cost_usd, self.model_calls, self.unpriced_calls),
            unpriced_calls=self.unpriced_calls,
        )


class ModelRequest(BaseModel):
    """One model call: what to send, and who is asking.

    `session_id` and `role_path` say who asks (testing models route on them); they are
    not part of the request's fingerprint. `model` is filled in per attempt from the
    route, so a fallback sees its own model name, and `timeout_s` from the route too.
    """

    model_config = ConfigDict(defer_build=True)

    messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)
    output_schema: dict[str, Any] | None = None
    """A JSON schema the reply must follow (structured output), or None for free text."""
    output_name: str | None = None
    """The schema's name, as providers that take `response_format` want it."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Provider parameters that change the output: temperature, max_tokens, seed…"""
    model: str = ""
    timeout_s: float | None = None
    """Longest wait for the provider (the route's `timeout_s`): for the reply, or for each
    streamed chunk. None: the client's own default. Not part of the fingerprint."""
    session_id: str = ""
    role_path: tuple[str, ...] = ()

    def fingerprint_payload(self) -> dict[str, Any]:
        """What identifies this request for replay: everything that changes the answer.

        It is also what the journal stores, so credentials in `params` are left out
        (`jeeves._base.redact`): a key never reaches a journal, and rotating it changes nothing.
        """
        return {
            "messages": self.model_dump(mode="json", include={"messages"})["messages"],
            **self.settings_payload(),
        }

    def settings_payload(self) -> dict[str, Any]:
        """`fingerprint_payload` less the messages: the tools, output schema and params (no
        credentials), what a journaled step and the server's request log store once while
        they stay the same from call to call."""
        payload = self.model_dump(mode="json", include={"tools", "output_schema", "params"})
        payload["params"] = strip_credentials(payload["params"])
        return payload

    def __repr_args__(self) -> Any:
        for name, value in super().__repr_args__():
            yield name, mask_credentials(value) if name == "params" else value


def turn_request(
    messages: list[Message],
    tools: list[ToolSpec],
    params: dict[str, Any],
    *,
    output_schema: dict[str, Any] | None = None,
    output_name: str | None = None,
) -> ModelRequest:
    """The request of a loop's next turn (an Agent's, a Supervisor's), built from parts the
    loop already holds as their types: a conversation that grows each turn is not validated
    again each turn (pydantic checks every message of the list, so a 2,000-turn run spent
    ~20 µs a turn on it; `bench/long_requests.py`). The lists and params are copied, so the
    request never aliases the loop's own. Its fields are exactly what `ModelRequest(...)`
    would hold (`tests/test_messages.py`)."""
    return ModelRequest.model_construct(
        messages=list(messages),
        tools=list(tools),
        output_schema=output_schema,
        output_name=output_name,
        params=dict(params),
    )


class ModelResponse(BaseModel):
    """A model's reply."""

    model_config = ConfigDict(defer_build=True)

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    """The model that actually answered (a fallback's name when one was used)."""
    finish_reason: str | None = None
