"""`configure`: set up the OpenTelemetry SDK (imported only here) and trace every run."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from opentelemetry import trace

from jeeves.errors import UserError
from jeeves.telemetry.otel import OTelTracer
from jeeves.telemetry.tracer import set_default_tracer

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

__all__ = ["configure"]


def configure(
    *,
    console: bool = False,
    otlp_endpoint: str | None = None,
    capture_content: bool = False,
    service_name: str = "jeeves",
    tracer_provider: trace.TracerProvider | None = None,
) -> OTelTracer:
    """Trace every run from now on; returns the tracer it installed as the default.

    Args:
        console: Print each finished span to stderr as JSON.
        otlp_endpoint: Send spans over OTLP/HTTP, e.g. "http://localhost:4318" (the
            `/v1/traces` path is added when the URL has none). Batched in a background
            thread; the SDK flushes it at exit.
        capture_content: See `OTelTracer`.
        service_name: The `service.name` resource of a provider made here.
        tracer_provider: Use this provider (exporters are added to it) instead of making
            one. With none of `console`, `otlp_endpoint` and `tracer_provider`, spans go
            to the global provider, whatever the application set up.

    A provider made here becomes the global one when none is set yet, so other
    instrumentation (HTTP clients, web frameworks) joins the same traces. Needs the
    OpenTelemetry SDK (`pip install 'jeeves[otel]'`) unless only `tracer_provider` is given.
    """
    processors = _processors(console, otlp_endpoint)
    provider = tracer_provider
    if provider is None and processors:
        provider = _sdk_provider(service_name)
        if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            trace.set_tracer_provider(provider)
    for processor in processors:
        add = getattr(provider, "add_span_processor", None)
        if add is None:
            raise UserError(
                f"configure(tracer_provider={provider!r}) cannot take exporters: it is not an OpenTelemetry "
                f"SDK TracerProvider. Pass an opentelemetry.sdk.trace.TracerProvider, or no console/otlp_endpoint."
            )
        add(processor)
    tracer = OTelTracer(provider, capture_content=capture_content)
    set_default_tracer(tracer)
    return tracer


def _missing(what: str, error: ImportError) -> UserError:
    return UserError(
        f"jeeves.telemetry.configure needs {what}, which is not installed ({error}); "
        f"install the extra: pip install 'jeeves[otel]'."
    )


def _sdk_provider(service_name: str) -> TracerProvider:
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError as exc:
        raise _missing("the OpenTelemetry SDK (opentelemetry-sdk)", exc) from exc
    return TracerProvider(resource=Resource.create({"service.name": service_name}))


def _processors(console: bool, otlp_endpoint: str | None) -> list[SpanProcessor]:
    if not console and otlp_endpoint is None:
        return []
    try:
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SimpleSpanProcessor,
        )
    except ImportError as exc:
        raise _missing("the OpenTelemetry SDK (opentelemetry-sdk)", exc) from exc
    processors: list[SpanProcessor] = []
    if console:
        processors.append(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    if otlp_endpoint is not None:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise _missing("the OTLP exporter (opentelemetry-exporter-otlp-proto-http)", exc) from exc
        processors.append(BatchSpanProcessor(OTLPSpanExporter(endpoint=_traces_url(otlp_endpoint))))
    return processors


def _traces_url(endpoint: str) -> str:
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UserError(
            f"otlp_endpoint={endpoint!r} is not an http(s) URL; write e.g. 'http://localhost:4318' "
            f"(an OTLP/HTTP collector)."
        )
    return endpoint if parts.path.strip("/") else endpoint.rstrip("/") + "/v1/traces"
