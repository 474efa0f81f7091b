"""The OpenTelemetry tracer: spans named and attributed by the GenAI conventions.

Session spans know their parent session through a context variable (set while the span
is open; anyio copies it into child tasks), which is how a worker's span learns that a
Supervisor started it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from contextvars import ContextVar, Token

import anyio
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from jeeves.events import SessionStarted
from jeeves.journal.records import error_type_name
from jeeves.messages import ModelRequest, ModelResponse
from jeeves.telemetry.genai import (
    CONTENT_KEYS,
    input_messages,
    output_messages,
    provider_name,
    request_attributes,
    system_instructions,
    task_messages,
)
from jeeves.telemetry.tracer import EventAttributes, NullTracer, SpanHandle

__all__ = ["DELEGATING_ARCHITECTURES", "OTelSpan", "OTelTracer"]

DELEGATING_ARCHITECTURES = frozenset({"supervisor"})
"""Architectures whose children are workers: their sessions get `jeeves.worker` (the role)."""

_SESSION: ContextVar[SessionStarted | None] = ContextVar("jeeves_telemetry_session", default=None)


class OTelSpan:
    """The SpanHandle of one OpenTelemetry span."""

    __slots__ = ("_capture", "_recording", "failed", "span")

    def __init__(self, span: Span, capture_content: bool) -> None:
        self.span = span
        self._capture = capture_content
        self._recording = span.is_recording()
        self.failed = False

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        if not self._recording or (key in CONTENT_KEYS and not self._capture):
            return
        self.span.set_attribute(key, value)
        if key == "error.type":
            self.span.set_status(Status(StatusCode.ERROR))

    def record_response(self, response: ModelResponse) -> None:
        if not self._recording:
            return
        usage = response.usage
        attributes: dict[str, AttributeValue] = {
            "gen_ai.response.model": response.model,
            "gen_ai.usage.input_tokens": usage.input_tokens,
            "gen_ai.usage.output_tokens": usage.output_tokens,
        }
        if usage.unpriced:  # no known price: the cost is unknown, not 0
            attributes["jeeves.unpriced"] = True
        else:
            attributes["jeeves.cost_usd"] = usage.priced_usd
        if response.finish_reason:
            attributes["gen_ai.response.finish_reasons"] = (response.finish_reason,)
        if self._capture:
            attributes["gen_ai.output.messages"] = output_messages(response)
        self.span.set_attributes(attributes)

    def add_event(self, name: str, attributes: EventAttributes) -> None:
        if not self._recording:
            return
        kept = {k: v for k, v in attributes.items() if self._capture or k not in CONTENT_KEYS}
        self.span.add_event(name, kept)

    def record_error(self, error: BaseException) -> None:
        self.failed = True
        if not self._recording:
            return
        kind = error_type_name(error)
        self.span.set_attribute("error.type", kind)
        if self._capture:
            self.span.record_exception(error)
            self.span.set_status(Status(StatusCode.ERROR, f"{kind}: {error}"))
        else:
            self.span.set_status(Status(StatusCode.ERROR, kind))


class _Scope:
    """Opens a span as the current one on enter; ends it on exit. Used once."""

    __slots__ = (
        "_attributes",
        "_handle",
        "_kind",
        "_name",
        "_session",
        "_session_token",
        "_token",
        "_tracer",
    )

    def __init__(
        self,
        tracer: OTelTracer,
        name: str,
        kind: SpanKind,
        attributes: dict[str, AttributeValue],
        session: SessionStarted | None = None,
    ) -> None:
        self._tracer = tracer
        self._name = name
        self._kind = kind
        self._attributes = attributes
        self._session = session

    def __enter__(self) -> SpanHandle:
        span = self._tracer.tracer.start_span(self._name, kind=self._kind, attributes=self._attributes)
        self._token = otel_context.attach(trace.set_span_in_context(span))
        self._session_token: Token[SessionStarted | None] | None = (
            _SESSION.set(self._session) if self._session is not None else None
        )
        self._handle = OTelSpan(span, self._tracer.capture_content)
        return self._handle

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        handle = self._handle
        try:
            if exc is not None and not handle.failed:
                if isinstance(exc, anyio.get_cancelled_exc_class()):
                    handle.set_attribute("jeeves.cancelled", True)
                else:
                    handle.record_error(exc)
        finally:
            if self._session_token is not None:
                _SESSION.reset(self._session_token)
            otel_context.detach(self._token)
            handle.span.end()


class OTelTracer:
    """A `jeeves.telemetry.tracer.Tracer` that opens OpenTelemetry spans named by the GenAI conventions.

    Args:
        tracer_provider: Where spans go. None: the global provider, looked up when each
            span starts (so a provider set up later is picked up; until then spans are
            non-recording). Tests pass their own SDK provider, since the global one can
            be set only once per process.
        capture_content: Put prompts, replies, the task, tool arguments and results, and
            error messages on spans. Off by default: they may hold personal data.
    """

    def __init__(
        self, tracer_provider: trace.TracerProvider | None = None, *, capture_content: bool = False
    ) -> None:
        self.provider = tracer_provider
        self.capture_content = capture_content
        self.tracer = trace.get_tracer("jeeves", tracer_provider=tracer_provider)
        self._null = NullTracer()

    def _off(self) -> bool:
        """True while spans would go nowhere: no provider given and none set globally yet."""
        return self.provider is None and isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)

    def session(self, started: SessionStarted) -> AbstractContextManager[SpanHandle]:
        if self._off():
            return self._null.session(started)
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": started.role,
            "gen_ai.conversation.id": started.session_id.split("__", 1)[0],
            "jeeves.session.id": started.session_id,
            "jeeves.session.index": started.index,
            "jeeves.role": started.role,
            "jeeves.role_path": ".".join(started.role_path),
            "jeeves.architecture": started.architecture,
        }
        if started.model:
            attributes["gen_ai.request.model"] = started.model
        parent = _SESSION.get()
        if parent is not None and parent.session_id == started.parent_id:
            attributes["jeeves.parent.architecture"] = parent.architecture
            if parent.architecture in DELEGATING_ARCHITECTURES:
                attributes["jeeves.worker"] = started.role
        if self.capture_content:
            attributes["gen_ai.input.messages"] = task_messages(started.task)
        return _Scope(self, f"invoke_agent {started.role}", SpanKind.INTERNAL, attributes, started)

    def model_call(
        self, started: SessionStarted, request: ModelRequest
    ) -> AbstractContextManager[SpanHandle]:
        if self._off():
            return self._null.model_call(started, request)
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider_name(request.model),
            "gen_ai.request.model": request.model,
            "gen_ai.output.type": "json" if request.output_schema is not None else "text",
            "jeeves.session.id": started.session_id,
            **request_attributes(request.params),
        }
        if self.capture_content:
            attributes["gen_ai.input.messages"] = input_messages(request.messages)
            instructions = system_instructions(request.messages)
            if instructions:
                attributes["gen_ai.system_instructions"] = instructions
        return _Scope(self, f"chat {request.model}", SpanKind.CLIENT, attributes)

    def tool_call(
        self, started: SessionStarted, name: str, call_id: str, arguments: str
    ) -> AbstractContextManager[SpanHandle]:
        if self._off():
            return self._null.tool_call(started, name, call_id, arguments)
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
            "jeeves.session.id": started.session_id,
        }
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = arguments
        return _Scope(self, f"execute_tool {name}", SpanKind.INTERNAL, attributes)
