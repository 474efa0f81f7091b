"""The model seam: one protocol with one method, and the route that says which model to call."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Protocol, runtime_checkable

from pydantic import ConfigDict, Field, SkipValidation

from jeeves._base.redact import mask_credentials
from jeeves._base.validate import ConfigModel
from jeeves.errors import UserError
from jeeves.messages import ModelRequest, ModelResponse

__all__ = ["DEFAULT_TIMEOUT_S", "DeltaSink", "ModelClient", "Route", "client_name"]

DEFAULT_TIMEOUT_S = 120.0
"""A route's `timeout_s` unless it says otherwise (litellm's own default is 6,000 s)."""

DeltaSink = Callable[[str], Awaitable[None]]
"""Receives each piece of streamed text as it arrives."""


@runtime_checkable
class ModelClient(Protocol):
    """Anything that answers a model request: the litellm adapter, a scripted model, your own.

    `request.model` names the model to use (the route's primary or a fallback). When
    `on_delta` is given, the client streams: it awaits `on_delta(text)` for each piece of
    text as it arrives, then returns the whole reply. Failures are raised as
    `jeeves.ModelError` subclasses, so the retry and fallback logic can tell a 429 from a
    malformed body.
    """

    async def complete(
        self, request: ModelRequest, *, on_delta: DeltaSink | None = None
    ) -> ModelResponse: ...


def client_name(client: object) -> str:
    """The name a client goes by when it is a route's model itself (scripted models, say)."""
    name = getattr(client, "model_name", None)
    return name if isinstance(name, str) and name else type(client).__name__


class Route(ConfigModel):
    """Where one role's model calls go.

    `model` is a litellm model string ("openai/gpt-4o-mini") unless `client` is set, in
    which case it is only the display name. Each model in `[model, *fallbacks]` gets
    `1 + retries` attempts on a retryable error (rate limit, timeout, 5xx) before the next
    one is tried; a non-retryable error (bad request, refused key) stops at once.
    A bad argument (`retries=-1`, `backoff_s="1"`, a misspelt keyword) is a UserError.
    """

    model_config = ConfigDict(defer_build=True, arbitrary_types_allowed=True, frozen=True)

    model: str = Field(min_length=1)
    """The litellm model string, e.g. 'openai/gpt-4o-mini' (a display name when `client` is set)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Provider parameters for every call on this route (temperature, max_tokens, api_key…).
    Credentials among them reach the provider and nothing else (`jeeves._base.redact`)."""
    fallbacks: tuple[str, ...] = ()
    """Models to try, in order, when the primary keeps failing with retryable errors."""
    retries: int = Field(default=2, ge=0, strict=True)
    """Extra attempts per model on retryable errors."""
    backoff_s: float = Field(default=0.5, ge=0, allow_inf_nan=False, strict=True)
    """First retry delay; doubles per attempt. A provider's Retry-After wins when larger."""
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, allow_inf_nan=False, strict=True)
    """Longest wait for the provider per attempt: for a whole reply, or, streamed, for the
    first chunk and then between chunks (a long answer that keeps coming is not cut). Past
    it the attempt fails as a retryable `ModelTimeout`."""
    client: Annotated[ModelClient | None, SkipValidation] = Field(default=None, exclude=True)
    """Serves this route instead of the router's client (litellm by default)."""

    def __repr_args__(self) -> Any:
        """The fields as `repr` shows them: credentials in `params` read as `<redacted>`."""
        for name, value in super().__repr_args__():
            yield name, mask_credentials(value) if name == "params" else value

    @classmethod
    def coerce(cls, value: object, *, key: str) -> Route:
        """A Route from what users write: a model string, a Route, or a ModelClient."""
        if isinstance(value, Route):
            return value
        if isinstance(value, str):
            if not value.strip():
                raise UserError(f"Route {key!r} has an empty model string; write e.g. 'openai/gpt-4o-mini'.")
            return cls(model=value)
        if callable(
            getattr(value, "complete", None)
        ):  # a ModelClient (duck-typed: isinstance on a Protocol is slow)
            return cls(model=client_name(value), client=value)
        raise UserError(
            f"Route {key!r} is {value!r}; give a model string ('openai/gpt-4o-mini'), "
            f"a jeeves.Route, or a ModelClient such as jeeves.testing.ScriptedModel."
        )
