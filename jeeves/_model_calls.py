"""Model calls: the one place a session's model call is routed, budgeted, journaled,
traced and turned into events (part of `jeeves.context.Context`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from jeeves._steps import StepsCore
from jeeves._trusted import trusted
from jeeves.errors import ModelError
from jeeves.events import Event, ModelCompleted, ModelDelta, ModelRetrying
from jeeves.messages import ModelRequest, ModelResponse
from jeeves.models.base import Route
from jeeves.models.fallback import complete_with_fallbacks
from jeeves.redact import scrub, scrub_error

__all__ = ["ModelCalls"]


class _ModelStep(BaseModel):
    model_config = ConfigDict(defer_build=True)
    response: ModelResponse
    fallback: bool = False


_delta = trusted(ModelDelta)
_model_completed = trusted(ModelCompleted)


async def _unread(text: str) -> None:
    """The delta sink of a run whose events nobody reads or records: the provider still
    streams (the request is the same), and no `model.delta` event is built to be dropped."""


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
    async def call_model(self, request: ModelRequest, *, route: Route | None = None) -> ModelResponse:
        """One model call for this session: routed, budgeted, journaled, traced, streamed as events."""
        state = self._state
        index = self.next_step_index()
        request.session_id = self.session_id
        request.role_path = self.role_path
        emitted: list[Event] = []
        if state.journal is None and self._meter.unlimited:
            # Nothing to record and nothing to refuse (neither the session's meter, a slice, nor
            # any meter above it limits anything): the call itself, with no step wrapper (two
            # coroutine frames and a result object fewer per call, same events).
            suspension = state.suspension
            suspension.enter()
            try:
                response, fallback = await self._call_live(route or self.route(), request, emitted, index)
                state.completed_steps += 1
                if state.progress_interval_s is not None:
                    await self._completed(index)
            finally:
                suspension.leave()
            replayed = False
        else:

            async def live() -> _ModelStep:
                response, fallback = await self._call_live(route or self.route(), request, emitted, index)
                return _ModelStep(response=response, fallback=fallback)

            step, replayed = await self._journaled(
                "model", "", index, request.fingerprint_payload, live, _ModelStep, emitted
            )
            response, fallback = step.response, step.fallback
        state.add_usage(self.session_id, response.usage, live=not replayed, meter=self._meter)
        if state.channel.consume:  # `self.observed`: in jeeves.run nobody reads it, so it is not built
            await self.emit(
                _model_completed(
                    session_id=self.session_id,
                    text=response.text,
                    tool_calls=list(response.tool_calls),  # a copy, as validation makes
                    usage=response.usage,
                    model=response.model,
                    fallback=fallback,
                    step=index,
                    replayed=replayed,
                )
            )
        return response

    async def _call_live(
        self, route: Route, request: ModelRequest, emitted: list[Event], index: int
    ) -> tuple[ModelResponse, bool]:
        state = self._state
        client = state.router.client_for(route)
        live_request = request  # built for this call by its caller: route settings are filled in place
        live_request.model = route.model
        live_request.timeout_s = route.timeout_s  # so the first attempt needs no copy
        if route.params:
            live_request.params = {**route.params, **request.params}

        async def on_delta(text: str) -> None:
            # the text comes from the provider's client: validated unless it is a plain str
            event = (_delta if type(text) is str else ModelDelta)(
                session_id=self.session_id, text=text, step=index
            )
            emitted.append(event)
            await self.emit(event)

        if not state.channel.consume and state.journal is None:
            on_delta = _unread  # jeeves.run with no journal: no reader, no record, so no delta events

        async def on_retry(
            model: str, next_model: str, attempt: int, error: ModelError, delay: float
        ) -> None:
            event = ModelRetrying(
                session_id=self.session_id,
                model=model,
                next_model=next_model,
                attempt=attempt,
                error_type=type(error).__name__,
                message=scrub(str(error), live_request.params),
                delay_s=delay,
            )
            emitted.append(event)
            await self.emit(event)

        with state.tracer.model_call(self.started, live_request) as span:
            try:
                response, fallback = await complete_with_fallbacks(
                    client, route, live_request, on_delta=on_delta, on_retry=on_retry
                )
            except BaseException as exc:
                scrub_error(exc, live_request.params)  # a provider's message may quote the key it was sent
                span.record_error(exc)
                raise
            span.record_response(response)
        if response.usage.model_calls == 0:  # clients that report tokens only: every live call counts once
            response.usage = response.usage.model_copy(update={"model_calls": 1})
        return response, fallback
