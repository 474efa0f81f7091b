"""Retries and fallbacks for one model call, by route: a `ModelClient` that wraps another.

Each model in `[route.model, *route.fallbacks]` gets `1 + route.retries` attempts. A
retryable failure (rate limit, timeout, 5xx, dropped connection) waits and tries again,
then moves to the next model; `on_retry` is told each time so the run can emit
`model.retrying`. A non-retryable failure (a 400) is raised at once: another model would
not fix the request; a refused key is not a `ModelError` and passes straight through.
When every model is exhausted the last error is raised. Each attempt carries the route's
`timeout_s` (`request.timeout_s`), which the client enforces; past it, the attempt is a
retryable `ModelTimeout`. Text streamed by a failed attempt has already been shown; a UI that cares resets
the node's text on `model.retrying`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

from jeeves.errors import ModelError
from jeeves.messages import ModelRequest, ModelResponse
from jeeves.models.base import DeltaSink, ModelClient, Route

__all__ = ["RetryNotice", "WithFallbacks", "complete_with_fallbacks"]

RetryNotice = Callable[[str, str, int, ModelError, float], Awaitable[None]]
"""(failed model, next model, attempt number, error, delay in seconds)."""


def _delay(route: Route, attempt: int, error: ModelError) -> float:
    delay = route.backoff_s * (2**attempt)
    retry_after = getattr(error, "retry_after", None)
    if isinstance(retry_after, int | float) and retry_after > delay:
        delay = float(retry_after)
    return min(float(delay), 60.0)


async def complete_with_fallbacks(
    client: ModelClient,
    route: Route,
    request: ModelRequest,
    *,
    on_delta: DeltaSink | None = None,
    on_retry: RetryNotice | None = None,
) -> tuple[ModelResponse, bool]:
    """Call `client` along the route; returns the reply and whether a fallback gave it."""
    along = WithFallbacks(client, route, on_retry=on_retry)
    response = await along.complete(request, on_delta=on_delta)
    return response, along.fallback


class WithFallbacks:
    """`client` called along `route`: its model, then its fallbacks, each retried.

    After `complete`, `fallback` says whether a fallback model gave the reply. A reply
    whose `model` is empty names the model that gave it."""

    __slots__ = ("_client", "_on_retry", "_route", "fallback")

    def __init__(self, client: ModelClient, route: Route, *, on_retry: RetryNotice | None = None) -> None:
        self._client = client
        self._route = route
        self._on_retry = on_retry
        self.fallback = False

    async def complete(self, request: ModelRequest, *, on_delta: DeltaSink | None = None) -> ModelResponse:
        route = self._route
        models = (route.model, *route.fallbacks)
        tries = route.retries + 1
        for m, model in enumerate(models):
            for attempt in range(tries):
                try:
                    response = await self._client.complete(self._for(request, model), on_delta=on_delta)
                except ModelError as error:
                    if error.model is None:
                        error.model = model
                    last = m + 1 == len(models)
                    if not error.retryable or (last and attempt + 1 == tries):
                        raise
                    next_model = model if attempt + 1 < tries else models[m + 1]
                    delay = _delay(route, attempt, error) if next_model == model else 0.0
                    if self._on_retry is not None:
                        await self._on_retry(model, next_model, attempt + 1, error, delay)
                    if delay:
                        await anyio.sleep(delay)
                    continue
                if not response.model:
                    response.model = model
                self.fallback = model != route.model
                return response
        raise AssertionError("unreachable: a route always has at least one attempt")  # pragma: no cover

    def _for(self, request: ModelRequest, model: str) -> ModelRequest:
        """`request` as sent to `model` (a copy, unless it already names it and the route's timeout)."""
        timeout_s = self._route.timeout_s
        if request.model == model and request.timeout_s == timeout_s:
            return request
        return request.model_copy(update={"model": model, "timeout_s": timeout_s})
