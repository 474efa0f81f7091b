"""Model calls: the one place a session's model call is routed, budgeted, journaled,
traced and turned into events.

A call is one journaled step (`jeeves._run.steps.journaled`) of kind `model`; live, it
goes to the route's client wrapped by what crosses every call: retries and fallbacks
(`jeeves.models.fallback.WithFallbacks`), then the run's tracer (`Traced`, only when the
run has one that records).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass

from jeeves._base.redact import scrub, scrub_error
from jeeves._run.sessions import started
from jeeves._run.state import Session, emit
from jeeves._run.steps import completed, journaled, next_index
from jeeves.errors import ModelError
from jeeves.events import BudgetUnpriced, Event, ModelCompleted, ModelDelta, ModelRetrying
from jeeves.messages import ModelRequest, ModelResponse
from jeeves.models.base import DeltaSink, ModelClient, Route
from jeeves.models.fallback import RetryNotice, WithFallbacks
from jeeves.telemetry.tracer import SpanHandle

__all__ = ["Traced", "call_model", "route"]


@dataclass
class _ModelStep:
    """A model call's journaled result: the reply, and whether a fallback model gave it."""

    response: ModelResponse
    fallback: bool = False


def route(session: Session) -> Route:
    """`session`'s route: the router's match for its role path (cached).

    A child run with `share_route=True` resolves its parent's role path instead.
    """
    if session._route is None:
        session._route = session._state.router.resolve(session._route_as or session.role_path)
    return session._route


async def call_model(session: Session, request: ModelRequest, given: Route | None = None) -> ModelResponse:
    """One model call of `session`: routed (by `given`, else `route(session)`), budgeted,
    journaled, traced, streamed as events."""
    index = next_index(session)
    request.session_id = session.session_id
    request.role_path = session.role_path
    emitted: list[Event] = []

    async def live() -> _ModelStep:
        routed = given or route(session)
        along = WithFallbacks(
            _client(session, routed, request), routed, on_retry=_retry_notice(session, request, emitted)
        )
        client: ModelClient = along
        if session._state.traced:
            client = Traced(client, session._state.tracer.model_call(started(session), request))
        try:
            response = await client.complete(request, on_delta=_delta_sink(session, emitted, index))
        except BaseException as exc:
            scrub_error(exc, request.params)  # a provider's message may quote the key it was sent
            raise
        if response.usage.model_calls == 0:  # clients that report tokens only: every live call counts once
            response.usage = response.usage.model_copy(update={"model_calls": 1})
        if response.usage.cost_usd is None or response.usage.unpriced_calls:
            await _unpriced(session, response, emitted)
        return _ModelStep(response=response, fallback=along.fallback)

    step, replayed = await journaled(session, "model", "", index, lambda: request, live, _ModelStep, emitted)
    response = step.response
    state = session._state
    state.add_usage(session.session_id, response.usage, live=not replayed, meter=session._meter)
    if not replayed and (state.journal is not None or state.progress_interval_s is not None):
        # after the charge: the budget left counts this call
        if (due := completed(session, index)) is not None:
            await emit(session, due)
    await emit(session, _completed, session, step, index, replayed)
    return response


def _completed(session: Session, step: _ModelStep, index: int, replayed: bool) -> ModelCompleted:
    response = step.response
    return ModelCompleted(
        session_id=session.session_id,
        text=response.text,
        tool_calls=list(response.tool_calls),
        usage=response.usage,
        model=response.model,
        fallback=step.fallback,
        step=index,
        replayed=replayed,
    )


class Traced:
    """A model client whose calls are told to a span (opened by the run's tracer)."""

    __slots__ = ("_client", "_scope")

    def __init__(self, client: ModelClient, scope: AbstractContextManager[SpanHandle]) -> None:
        self._client = client
        self._scope = scope

    async def complete(self, request: ModelRequest, *, on_delta: DeltaSink | None = None) -> ModelResponse:
        with self._scope as span:
            try:
                response = await self._client.complete(request, on_delta=on_delta)
            except BaseException as exc:
                scrub_error(exc, request.params)  # before the span records it
                span.record_error(exc)
                raise
            span.record_response(response)
            return response


async def _unpriced(session: Session, response: ModelResponse, emitted: list[Event]) -> None:
    """Emit `budget.unpriced` at the run's first call without a known price under a USD
    limit (recorded with the step, so a replay says it too)."""
    limit = session._meter.unpriced_limit(response.usage)
    if limit is not None:
        event = BudgetUnpriced(session_id=session.session_id, model=response.model, max_usd=limit)
        emitted.append(event)
        await emit(session, event)


def _client(session: Session, route: Route, request: ModelRequest) -> ModelClient:
    """The client for `route`, with `request` filled with the route's settings (in place:
    it was built for this call by its caller)."""
    client = session._state.router.client_for(route)
    request.model = route.model
    request.timeout_s = route.timeout_s
    if route.params:
        request.params = {**route.params, **request.params}
    return client


def _delta_sink(session: Session, emitted: list[Event], index: int) -> DeltaSink | None:
    """Where the provider's streamed text goes: `model.delta` events, kept in `emitted` to
    record with the step; None (the provider's non-streaming endpoint) when the run neither
    streams its events nor records them."""
    if not session._state.reads_deltas:
        return None

    async def on_delta(text: str) -> None:
        event = ModelDelta(session_id=session.session_id, text=text, step=index)
        emitted.append(event)
        await emit(session, event)

    return on_delta


def _retry_notice(session: Session, request: ModelRequest, emitted: list[Event]) -> RetryNotice:
    """The `model.retrying` events of a call, kept in `emitted` to record with the step."""

    async def on_retry(model: str, next_model: str, attempt: int, error: ModelError, delay: float) -> None:
        event = ModelRetrying(
            session_id=session.session_id,
            model=model,
            next_model=next_model,
            attempt=attempt,
            error_type=type(error).__name__,
            message=scrub(str(error), request.params),
            delay_s=delay,
        )
        emitted.append(event)
        await emit(session, event)

    return on_retry
