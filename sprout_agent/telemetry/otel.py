"""Telemetry through the OpenTelemetry SDK (1.45) and its OTLP exporters, configured by the standard OTEL_*
variables: traces (one per session, its root the `session` span, or the caller's trace when TRACEPARENT is set),
metrics and logs. Nothing here may block or fail a run: exports happen on the SDK's background threads, a
collector that cannot be reached costs one notice at the end, and shut-down is bounded.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter, SpanExportResult
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from sprout_agent import __version__
from sprout_agent.core.tracing import CONTENT_CHARS, Attributes, TraceSpan
from sprout_agent.trust.secrets import REDACTED, secret_name

EXPORT_TIMEOUT_S = 3.0  # an export's bound unless OTEL_EXPORTER_OTLP_TIMEOUT says otherwise (exit waits no longer)
SCOPE = "sprout-agent"


@dataclass
class Failures:
    """What could not be exported, counted on the exporters' threads and said once, at the end."""

    counts: dict[str, int] = field(default_factory=dict[str, int])

    def add(self, what: str, count: int) -> None:
        self.counts[what] = self.counts.get(what, 0) + count


class CountingExporter(SpanExporter):
    """The configured exporter, with its failures counted instead of logged on stderr (a run's stderr is the
    person's or the script's, not the exporter's), and every span's texts through `redact` on the way out."""

    def __init__(self, inner: SpanExporter, failures: Failures, redact: Callable[[str], str], content: bool) -> None:
        self._inner = inner
        self._failures = failures
        self._redact = redact
        self._content = content

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self._inner.export([scrubbed(span, self._redact, self._content) for span in spans])
        except Exception:  # an exporter must never take the run down
            result = SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS:
            self._failures.add("spans", len(spans))
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


class OtelTracer:
    """`core.tracing.Tracer` over an SDK tracer; a span with no traced parent in its context is a child of the
    session's span (a face's task may have started before it)."""

    def __init__(
        self, tracer: trace.Tracer, root: otel_context.Context, content: bool, redact: Callable[[str], str]
    ) -> None:
        self._tracer = tracer
        self._root = root
        self.content = content
        self._redact = redact

    @contextmanager
    def span(self, name: str, attributes: Attributes) -> Generator[TraceSpan]:
        parent = None if trace.get_current_span().get_span_context().is_valid else self._root
        kind = SpanKind.CLIENT if name.startswith("chat ") else SpanKind.INTERNAL
        with self._tracer.start_as_current_span(
            name, context=parent, kind=kind, attributes=_plain(attributes, self._redact), record_exception=False
        ) as span:
            try:
                yield _Span(span, self._redact)
            except BaseException as error:
                _ended_by(span, error)
                raise

    def event(self, name: str, attributes: Attributes) -> None:
        trace.get_current_span().add_event(name, _plain(attributes, self._redact))


class _Span:
    def __init__(self, span: Span, redact: Callable[[str], str]) -> None:
        self._span = span
        self._redact = redact

    def set(self, attributes: Attributes) -> None:
        self._span.set_attributes(_plain(attributes, self._redact))


def _ended_by(span: Span, error: BaseException) -> None:
    """A cancelled turn or call is marked so, not as an error; any other exception is an error."""
    if type(error).__name__ in ("CancelledError", "Cancelled"):
        span.set_attribute("sprout.cancelled", True)
        return
    span.set_attribute("error.type", type(error).__qualname__)
    span.set_status(Status(StatusCode.ERROR, str(error)[:300]))


def _plain(attributes: Attributes, redact: Callable[[str], str]) -> dict[str, Any]:
    """OTel's attribute values through `redacted` (a prompt or a tool's output may quote a key), each string then cut
    at CONTENT_CHARS."""
    plain: dict[str, Any] = {}
    for key, value in attributes.items():
        kept = redacted(key, value, redact)
        if isinstance(kept, str):
            plain[key] = kept[:CONTENT_CHARS]
        elif isinstance(kept, tuple):
            plain[key] = [
                item[:CONTENT_CHARS] if isinstance(item, str) else item for item in cast("tuple[Any, ...]", kept)
            ]
        else:
            plain[key] = kept
    return plain


def redacted(key: str, value: Any, redact: Callable[[str], str]) -> Any:
    """The one rule for an attribute we export (a span's, an event's, a metric's, the resource's): a string under a
    credential's name (`api.key`, `deployment.token`) is `[redacted]` whole; any other string goes through `redact`;
    a sequence item by item (as a tuple); numbers and booleans as they are."""
    if isinstance(value, str):
        return REDACTED if secret_name(key) else redact(value)
    if isinstance(value, tuple | list):
        return tuple(redacted(key, item, redact) for item in cast("Sequence[Any]", value))
    return value


def redacted_attributes(attributes: Mapping[str, Any] | None, redact: Callable[[str], str]) -> dict[str, Any]:
    """Every attribute through `redacted`, and its key through `redact` (OTEL_RESOURCE_ATTRIBUTES=ghp_…=1)."""
    return {redact(key): redacted(key, value, redact) for key, value in (attributes or {}).items()}


def scrubbed(span: ReadableSpan, redact: Callable[[str], str], content: bool) -> ReadableSpan:
    """A copy of `span` with its name, attributes, status, events and links through `redact`, whoever made it:
    ours are filtered already, but the mcp SDK's own spans take a server's error message (a tool's answer) as
    their status, which only `content` lets out at all."""
    status = span.status
    theirs = span.instrumentation_scope is None or span.instrumentation_scope.name != SCOPE
    if status.description:
        status = Status(status.status_code, redact(status.description) if content or not theirs else None)
    events = [Event(redact(e.name), redacted_attributes(e.attributes, redact), e.timestamp) for e in span.events]
    links = [Link(link.context, redacted_attributes(link.attributes, redact)) for link in span.links]
    return ReadableSpan(
        name=redact(span.name),
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=redacted_attributes(span.attributes, redact),
        events=events,
        links=links,
        kind=span.kind,
        status=status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def traceparent_of(span: Span) -> str:
    """A span's W3C trace context: what a child process joins the trace with (TRACEPARENT)."""
    context = span.get_span_context()
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def resource(environ: Mapping[str, str], redact: Callable[[str], str]) -> Resource:
    """OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win; else the service is `sprout-agent`. Every attribute, the
    SDK's detectors' and the user's, is exported with every span, metric and log record: each goes through
    `redacted` (a deployment's `api.key=…` in OTEL_RESOURCE_ATTRIBUTES is not for the collector's readers)."""
    named = environ.get("OTEL_SERVICE_NAME") or "service.name=" in environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    ours: dict[str, Any] = {"service.version": __version__}
    if not named:
        ours["service.name"] = "sprout-agent"
    created = Resource.create(ours)
    return Resource(redacted_attributes(created.attributes, redact), created.schema_url)


def parent_context(environ: Mapping[str, str]) -> otel_context.Context:
    """The caller's trace (TRACEPARENT, as a batch gives each task), or a new one."""
    carrier = {
        k: v for k, v in (("traceparent", environ.get("TRACEPARENT")), ("tracestate", environ.get("TRACESTATE"))) if v
    }
    return TraceContextTextMapPropagator().extract(carrier) if carrier else otel_context.Context()


def span_exporter(environ: Mapping[str, str], note: Callable[[str], None]) -> SpanExporter | None:
    """OTEL_TRACES_EXPORTER (otlp by default, console on stderr, none) over OTEL_EXPORTER_OTLP_PROTOCOL
    (http/protobuf by default; grpc when its exporter is installed)."""
    kind = environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",")[0].strip().lower()
    if kind in ("none", ""):
        return None
    if kind == "console":
        return ConsoleSpanExporter(out=sys.stderr)
    if kind != "otlp":
        note(f"telemetry: OTEL_TRACES_EXPORTER={kind} is not one of otlp, console, none: no traces")
        return None
    chosen, timeout = protocol(environ, "TRACES"), export_timeout(environ, "TRACES")
    if chosen == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found]
                OTLPSpanExporter as GrpcSpanExporter,  # pyright: ignore[reportUnknownVariableType]
            )
        except ImportError:
            note("telemetry: OTLP over grpc needs `pip install opentelemetry-exporter-otlp-proto-grpc`: no traces")
            return None
        return GrpcSpanExporter(timeout=timeout)  # pyright: ignore[reportUnknownVariableType]
    if chosen != "http/protobuf":
        note(f"telemetry: OTEL_EXPORTER_OTLP_PROTOCOL={chosen} is not supported (http/protobuf, grpc): no traces")
        return None
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(timeout=timeout)


def export_timeout(environ: Mapping[str, str], signal: str) -> float:
    """Seconds an export may take, as the Python SDK reads OTEL_EXPORTER_OTLP[_SIGNAL]_TIMEOUT; ours is 3 s (not
    the SDK's 10): exit waits for the last exports. A value that is no number is ours."""
    raw = environ.get(f"OTEL_EXPORTER_OTLP_{signal}_TIMEOUT") or environ.get("OTEL_EXPORTER_OTLP_TIMEOUT")
    try:
        return max(0.1, float(raw)) if raw else EXPORT_TIMEOUT_S
    except ValueError:
        return EXPORT_TIMEOUT_S


def protocol(environ: Mapping[str, str], signal: str) -> str:
    value = environ.get(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    return (value or "http/protobuf").strip().lower()


def quiet_exporters() -> None:
    """The exporters log each failed export as a warning, which Python's last-resort handler prints on stderr; and
    the header parser (opentelemetry.util.re) logs an OTEL_EXPORTER_OTLP_HEADERS entry it cannot read, credential
    and all. The whole tree, then: what OpenTelemetry says is no part of a run's stderr."""
    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)


def tracer_provider(
    environ: Mapping[str, str], processor: SpanProcessor | None, redact: Callable[[str], str]
) -> TracerProvider:
    provider = TracerProvider(resource=resource(environ, redact))
    if processor is not None:
        provider.add_span_processor(processor)
    return provider


def batch_processor(
    exporter: SpanExporter, failures: Failures, redact: Callable[[str], str], content: bool
) -> BatchSpanProcessor:
    return BatchSpanProcessor(CountingExporter(exporter, failures, redact, content))
