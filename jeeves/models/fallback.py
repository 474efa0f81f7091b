"""Retries and fallbacks for one model call, by route.

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

__all__ = ["RetryNotice", "after_first_attempt", "complete_with_fallbacks"]

RetryNotice = Callable[[str, str, int, ModelError, float], Awaitable[None]]
"""(failed model, next model, attempt number, error, delay in seconds)."""


def _delay(route: Route, attempt: int, error: ModelError) -> float:
    delay = route.backoff_s * (2**attempt)
    retry_after = getattr(error, "retry_after", None)
    if isinstance(retry_after, int | float) and retry_after > delay:
        delay = float(retry_after)
    return min(float(delay), 60.0)


def _attempts(route: Route) -> list[tuple[str, int]]:
    models = [route.model, *route.fallbacks]
    return [(model, attempt) for model in models for attempt in range(route.retries + 1)]


async def complete_with_fallbacks(
    client: ModelClient,
    route: Route,
    request: ModelRequest,
    *,
    on_delta: DeltaSink | None = None,
    on_retry: RetryNotice | None = None,
) -> tuple[ModelResponse, bool]:
    """Call `client` along the route; returns the reply and whether a fallback gave it."""
    return await _along(client, route, request, on_delta, on_retry, None)


async def after_first_attempt(
    client: ModelClient,
    route: Route,
    request: ModelRequest,
    error: ModelError,
    *,
    on_delta: DeltaSink | None = None,
    on_retry: RetryNotice | None = None,
) -> tuple[ModelResponse, bool]:
    """Go on along the route after its first attempt (`route.model`, with `request` as
    given) failed with `error`: the rest of `complete_with_fallbacks`.

    A caller that makes the first attempt itself (`await client.complete(request, ...)`,
    with `request.model == route.model` and `request.timeout_s == route.timeout_s`) keeps
    one coroutine frame fewer alive per call in flight; on success the reply's empty
    `model` is the route's model and no fallback gave it."""
    return await _along(client, route, request, on_delta, on_retry, error)


async def _along(
    client: ModelClient,
    route: Route,
    request: ModelRequest,
    on_delta: DeltaSink | None,
    on_retry: RetryNotice | None,
    failed: ModelError | None,
) -> tuple[ModelResponse, bool]:
    plan = _attempts(route)
    for position, (model, attempt) in enumerate(plan):
        try:
            if failed is not None:  # the caller made this attempt
                error, failed = failed, None
                raise error
            wanted = {"model": model, "timeout_s": route.timeout_s}
            same = (request.model, request.timeout_s) == (model, route.timeout_s)
            attempt_request = request if same else request.model_copy(update=wanted)
            response = await client.complete(attempt_request, on_delta=on_delta)
        except ModelError as error:
            if error.model is None:
                error.model = model
            if not error.retryable or position + 1 == len(plan):
                raise
            next_model, _ = plan[position + 1]
            delay = _delay(route, attempt, error) if next_model == model else 0.0
            if on_retry is not None:
                await on_retry(model, next_model, attempt + 1, error, delay)
            if delay:
                await anyio.sleep(delay)
            continue
        if not response.model:
            response.model = model
        return response, model != route.model
    raise AssertionError("unreachable: a route always has at least one attempt")  # pragma: no cover
