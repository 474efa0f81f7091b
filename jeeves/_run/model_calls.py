"""Model calls: the one place a session's model call is routed, budgeted, journaled,
traced and turned into events (part of `jeeves._run.context.Context`)."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from pydantic import BaseModel, ConfigDict

from jeeves._base.redact import scrub, scrub_error
from jeeves._base.trusted import trusted
from jeeves._run.steps import StepsCore
from jeeves.errors import ModelError
from jeeves.events import BudgetUnpriced, Event, ModelCompleted, ModelDelta, ModelRetrying
from jeeves.journal.delta import RequestChain, StepKey
from jeeves.messages import ModelRequest, ModelResponse
from jeeves.models.base import DeltaSink, ModelClient, Route
from jeeves.models.fallback import RetryNotice, after_first_attempt, complete_with_fallbacks
from jeeves.telemetry.tracer import NULL_SCOPE, is_null

__all__ = ["ModelCalls"]


class _ModelStep(BaseModel):
    model_config = ConfigDict(defer_build=True)
    response: ModelResponse
    fallback: bool = False


_delta = trusted(ModelDelta)
_model_completed = trusted(ModelCompleted)


class ModelCalls(StepsCore):
    """A session's model calls (a part of Context)."""

    __slots__ = ()

    # -- routing -----------------------------------------------------------------------
    def route(self) -> Route:
        """This session's route: the router's match for its role path (cached).

        A child run with `share_route=True` resolves its parent's role path instead.
        """
        if self._route is None:
            self._route = self._state.router.resolve(self._route_as or self.role_path)
        return self._route

    # -- model calls -------------------------------------------------------------------
    def call_model(
        self, request: ModelRequest, *, route: Route | None = None
    ) -> Coroutine[Any, Any, ModelResponse]:
        """One model call for this session: routed, budgeted, journaled, traced, streamed as events.

        Await it as any coroutine. With nothing to record and nothing to refuse (no journal;
        neither the session's meter, a slice, nor any meter above it limits anything) it is
        the call itself: one coroutine frame per call in flight, the provider's reply awaited
        directly (retries and fallbacks only after a first attempt fails).
        """
        if self._state.journal is None and self._meter.unlimited:
            return self._call_unrecorded(request, route)
        return self._call_recorded(request, route)

    async def _call_unrecorded(self, request: ModelRequest, route: Route | None) -> ModelResponse:
        state = self._state
        index = self.next_step_index()
        request.session_id = self.session_id
        request.role_path = self.role_path
        suspension = state.suspension
        suspension.enter()
        try:
            route = route or self.route()
            client = self._client(route, request)
            on_delta = self._delta_sink(None, index)
            tracer = state.tracer
            with NULL_SCOPE if is_null(tracer) else tracer.model_call(self.started, request) as span:
                try:
                    try:  # the route's first attempt, made here: see `after_first_attempt`
                        response = await client.complete(request, on_delta=on_delta)
                    except ModelError as error:
                        response, fallback = await after_first_attempt(
                            client,
                            route,
                            request,
                            error,
                            on_delta=on_delta,
                            on_retry=self._retry_notice(request, None),  # built only when needed
                        )
                    else:
                        if not response.model:
                            response.model = route.model
                        fallback = False
                except BaseException as exc:
                    scrub_error(exc, request.params)  # a provider's message may quote the key it was sent
                    span.record_error(exc)
                    raise
                span.record_response(response)
            _count_call(response)
            state.completed_steps += 1
        finally:
            suspension.leave()
        completed = self._answered(response, fallback, index, False)
        if state.progress_interval_s is not None:  # after the charge: the budget left counts this call
            await self._completed(index)
        if completed is not None:
            await self.emit(completed)
        return response

    async def _call_recorded(self, request: ModelRequest, route: Route | None) -> ModelResponse:
        index = self.next_step_index()
        request.session_id = self.session_id
        request.role_path = self.role_path
        emitted: list[Event] = []

        async def live() -> _ModelStep:
            response, fallback = await self._call_live(route or self.route(), request, emitted, index)
            if response.usage.cost_usd is None or response.usage.unpriced_calls:
                await self._unpriced(response, emitted)
            return _ModelStep(response=response, fallback=fallback)

        step, replayed = await self._journaled(
            "model", "", index, lambda: self._request_key(request, index), live, _ModelStep, emitted
        )
        completed = self._answered(step.response, step.fallback, index, replayed)
        state = self._state
        if not replayed and (state.journal is not None or state.progress_interval_s is not None):
            await self._completed(index)  # after the charge: the budget left counts this call
        if completed is not None:
            await self.emit(completed)
        return step.response

    def _request_key(self, request: ModelRequest, index: int) -> StepKey:
        """What model step `index` stores and fingerprints: what `request` adds to this session's
        previous model request, chained to it (`jeeves.journal.delta`), so a step's cost does
        not grow with the conversation."""
        if self._requests is None:
            self._requests = RequestChain()
        return self._requests.key(request, index)

    async def _unpriced(self, response: ModelResponse, emitted: list[Event]) -> None:
        """Emit `budget.unpriced` at the run's first call without a known price under a USD
        limit (recorded with the step, so a replay says it too)."""
        limit = self._meter.unpriced_limit(response.usage)
        if limit is not None:
            event = BudgetUnpriced(session_id=self.session_id, model=response.model, max_usd=limit)
            emitted.append(event)
            await self.emit(event)

    def _answered(self, response: ModelResponse, fallback: bool, index: int, replayed: bool) -> Event | None:
        """Book a reply's usage; its `model.completed` event, to emit, when anyone reads it."""
        state = self._state
        state.add_usage(self.session_id, response.usage, live=not replayed, meter=self._meter)
        if not state.channel.consume:  # `self.observed`: in jeeves.run nobody reads it, so it is not built
            return None
        return _model_completed(
            session_id=self.session_id,
            text=response.text,
            tool_calls=list(response.tool_calls),  # a copy, as validation makes
            usage=response.usage,
            model=response.model,
            fallback=fallback,
            step=index,
            replayed=replayed,
        )

    def _client(self, route: Route, request: ModelRequest) -> ModelClient:
        """The client for `route`, with `request` filled with the route's settings (in place:
        it was built for this call by its caller)."""
        client = self._state.router.client_for(route)
        request.model = route.model
        request.timeout_s = route.timeout_s  # so the first attempt needs no copy
        if route.params:
            request.params = {**route.params, **request.params}
        return client

    def _delta_sink(self, emitted: list[Event] | None, index: int) -> DeltaSink | None:
        """Where the provider's streamed text goes: `model.delta` events (kept in `emitted` for
        a step that records them), or None, not streamed, in a run nobody reads or records."""
        state = self._state
        if not state.channel.consume and state.journal is None:
            return None  # jeeves.run with no journal: the provider's non-streaming endpoint

        async def on_delta(text: str) -> None:
            # the text comes from the provider's client: validated unless it is a plain str
            event = (_delta if type(text) is str else ModelDelta)(
                session_id=self.session_id, text=text, step=index
            )
            if emitted is not None:
                emitted.append(event)
            await self.emit(event)

        return on_delta

    def _retry_notice(self, request: ModelRequest, emitted: list[Event] | None) -> RetryNotice:
        """The `model.retrying` events of a call (kept in `emitted` for a step that records them)."""

        async def on_retry(
            model: str, next_model: str, attempt: int, error: ModelError, delay: float
        ) -> None:
            event = ModelRetrying(
                session_id=self.session_id,
                model=model,
                next_model=next_model,
                attempt=attempt,
                error_type=type(error).__name__,
                message=scrub(str(error), request.params),
                delay_s=delay,
            )
            if emitted is not None:
                emitted.append(event)
            await self.emit(event)

        return on_retry

    async def _call_live(
        self, route: Route, request: ModelRequest, emitted: list[Event], index: int
    ) -> tuple[ModelResponse, bool]:
        client = self._client(route, request)
        on_delta, on_retry = self._delta_sink(emitted, index), self._retry_notice(request, emitted)
        tracer = self._state.tracer
        with NULL_SCOPE if is_null(tracer) else tracer.model_call(self.started, request) as span:
            try:
                response, fallback = await complete_with_fallbacks(
                    client, route, request, on_delta=on_delta, on_retry=on_retry
                )
            except BaseException as exc:
                scrub_error(exc, request.params)  # a provider's message may quote the key it was sent
                span.record_error(exc)
                raise
            span.record_response(response)
        _count_call(response)
        return response, fallback


def _count_call(response: ModelResponse) -> None:
    """Clients that report tokens only: every live call counts once."""
    if response.usage.model_calls == 0:
        response.usage = response.usage.model_copy(update={"model_calls": 1})
