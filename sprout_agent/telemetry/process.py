"""The process's global tracer provider, which the SDKs' own spans use (the mcp SDK's: a request's, an in-process
server's). OpenTelemetry takes it once per process, but an ACP server opens a session after another (and several at
once), each with its own provider: this one, set once, hands each span to the open session whose trace its parent
is in, else to the newest session still open (none open: nowhere)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Link, Span, SpanKind
from opentelemetry.util.types import Attributes


class Sessions(trace.TracerProvider):
    def __init__(self) -> None:
        self.open: list[tuple[int, TracerProvider]] = []  # (the session's trace id, its provider), oldest first

    def provider_for(self, context: Context | None) -> TracerProvider | None:
        trace_id = trace.get_current_span(context).get_span_context().trace_id
        for session_trace, provider in reversed(self.open):
            if session_trace == trace_id:
                return provider
        return self.open[-1][1] if self.open else None

    def get_tracer(
        self,
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: Attributes | None = None,
    ) -> trace.Tracer:
        return _Newest(self, instrumenting_module_name)


def joined(provider: TracerProvider, trace_id: int) -> Callable[[], None]:
    """Makes `provider` the one the SDKs' spans in trace `trace_id` (and, newest, those of no open session's trace)
    go to until the returned function is called (at its session's end)."""
    sessions = trace.get_tracer_provider()
    if not isinstance(sessions, Sessions):
        sessions = Sessions()
        trace.set_tracer_provider(sessions)  # refused (quietly) if a host set one first: its spans stay its own
    entry = (trace_id, provider)
    sessions.open.append(entry)
    return lambda: sessions.open.remove(entry)


class _Newest(trace.Tracer):
    def __init__(self, sessions: Sessions, name: str) -> None:
        self._sessions = sessions
        self._name = name

    def _tracer(self, context: Context | None) -> trace.Tracer:
        provider = self._sessions.provider_for(context)
        return provider.get_tracer(self._name) if provider is not None else trace.NoOpTracer()

    def start_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> Span:
        tracer = self._tracer(context)
        return tracer.start_span(
            name, context, kind, attributes, links, start_time, record_exception, set_status_on_exception
        )

    def start_as_current_span(  # pyright: ignore[reportIncompatibleMethodOverride]  (the same call, not decorated)
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
        end_on_exit: bool = True,
    ) -> AbstractContextManager[Span]:
        tracer = self._tracer(context)
        return tracer.start_as_current_span(
            name, context, kind, attributes, links, start_time, record_exception, set_status_on_exception, end_on_exit
        )
