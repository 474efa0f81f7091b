"""Hook points for tracing: the context opens a span around each session, model call and tool.

`NullTracer` is the default and costs a method call per hook. `jeeves.telemetry` provides
the OpenTelemetry implementation. Spans nest through context variables, which anyio copies
into every task it starts, so parallel workers' spans hang under the span of the session
that started them.

The context opens a model-call span only around a call that runs live, and the agent a
tool span only around a tool that runs live: a step served from a journal opens none.
Besides what the hook arguments carry, the kernel sets these on open spans:

- session: `jeeves.stop_reason`; `jeeves.critic.score` and `jeeves.round` (the session's
  index) when the output has a numeric `score`; `jeeves.audit.invalid_citations`,
  `jeeves.audit.uncited_claims` and `jeeves.audit.duration_ms` when it is a grounded
  audit's verdict; `jeeves.replayed_steps` when steps were served from a journal;
- tool: `gen_ai.tool.call.result` (the tool's output, which is content: a tracer that
  does not capture content drops it) and `error.type` when the tool reported an error.

And these span events (`SpanHandle.add_event`), on the watched agent's session span:
`jeeves.watchdog.verdict` and `jeeves.steering.injected` (attributes: `jeeves._run.steering.span_event`).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from jeeves.events import SessionStarted
    from jeeves.messages import ModelRequest, ModelResponse

__all__ = [
    "NULL_SCOPE",
    "NULL_SPAN",
    "NullSpan",
    "NullTracer",
    "SpanHandle",
    "Tracer",
    "default_tracer",
    "is_null",
    "set_default_tracer",
]

AttributeValue = str | bool | int | float
EventAttributes = Mapping[str, AttributeValue | tuple[str, ...]]


class SpanHandle(Protocol):
    """What the context tells a span while it is open."""

    def set_attribute(self, key: str, value: AttributeValue) -> None: ...

    def record_response(self, response: ModelResponse) -> None: ...

    def record_error(self, error: BaseException) -> None: ...

    def add_event(self, name: str, attributes: EventAttributes) -> None: ...


class Tracer(Protocol):
    """Opens spans. Each method returns a context manager yielding a SpanHandle."""

    def session(self, started: SessionStarted) -> AbstractContextManager[SpanHandle]: ...

    def model_call(
        self, started: SessionStarted, request: ModelRequest
    ) -> AbstractContextManager[SpanHandle]: ...

    def tool_call(
        self, started: SessionStarted, name: str, call_id: str, arguments: str
    ) -> AbstractContextManager[SpanHandle]: ...


class NullSpan:
    """A span that records nothing."""

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        pass

    def record_response(self, response: ModelResponse) -> None:
        pass

    def record_error(self, error: BaseException) -> None:
        pass

    def add_event(self, name: str, attributes: EventAttributes) -> None:
        pass


NULL_SPAN = NullSpan()
"""The one span the default tracer hands out (callers may skip work meant only for spans)."""


class _NullScope:
    """A reusable context manager yielding the null span (no generator per call)."""

    def __enter__(self) -> SpanHandle:
        return NULL_SPAN

    def __exit__(self, *exc: object) -> None:
        return None


_NULL_SCOPE = _NullScope()
NULL_SCOPE: AbstractContextManager[SpanHandle] = _NULL_SCOPE
"""The scope the default tracer opens for every hook (yields `NULL_SPAN`)."""


def _null() -> AbstractContextManager[SpanHandle]:
    return _NULL_SCOPE


class NullTracer:
    """The default tracer: no spans."""

    def session(self, started: SessionStarted) -> AbstractContextManager[SpanHandle]:
        return _null()

    def model_call(
        self, started: SessionStarted, request: ModelRequest
    ) -> AbstractContextManager[SpanHandle]:
        return _null()

    def tool_call(
        self, started: SessionStarted, name: str, call_id: str, arguments: str
    ) -> AbstractContextManager[SpanHandle]:
        return _null()


_default_tracer: Tracer = NullTracer()


def is_null(tracer: Tracer) -> bool:
    """Whether `tracer` is the default one, which records nothing: a caller may then skip
    building what only its hooks read (a session's `session.started`) and use `NULL_SCOPE`."""
    return type(tracer) is NullTracer


def set_default_tracer(tracer: Tracer | None) -> None:
    """Make `tracer` the one runs use when they are not given one (None: no tracing)."""
    global _default_tracer
    _default_tracer = tracer if tracer is not None else NullTracer()


def default_tracer() -> Tracer:
    """The tracer runs use when they are not given one."""
    return _default_tracer
