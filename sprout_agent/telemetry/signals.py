"""A session's telemetry, owned by the runtime: the tracer the loop uses, metrics and logs read off the loop's
events, the session's root span, and a bounded close that says what could not be exported.

Metrics: tokens by kind, cost, model requests, tool calls and their durations, hook objections and timeouts,
compactions, sandbox denials. Logs: our notices and warnings. Both go through OTEL_METRICS_EXPORTER and
OTEL_LOGS_EXPORTER (otlp by default, console on stderr, none), over http/protobuf.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, ConsoleLogRecordExporter, LogRecordExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, MetricExporter, PeriodicExportingMetricReader

from sprout_agent.core import events as ev
from sprout_agent.telemetry import otel, process
from sprout_agent.telemetry.enabled import content_on
from sprout_agent.trust.secrets import redactor

_SEVERITY = {"info": SeverityNumber.INFO, "warning": SeverityNumber.WARN, "error": SeverityNumber.ERROR}


class Telemetry:
    """Started by `start`; `observe` is an event sink; `close` ends the session span and flushes (bounded)."""

    def __init__(
        self,
        environ: Mapping[str, str],
        session_id: str,
        note: Callable[[str], None],
        secrets_in: Mapping[str, str] | None = None,
    ) -> None:
        """`environ` (the real environment) configures it; the filter also takes out the credentials of
        `secrets_in` (the settings' environment: the API key may come from a project's `.env`)."""
        otel.quiet_exporters()
        self.failures = otel.Failures()
        exporter = otel.span_exporter(environ, note)
        redact = redactor({**environ, **(secrets_in or {})})
        processor = (
            otel.batch_processor(exporter, self.failures, redact, content_on(environ)) if exporter is not None else None
        )
        self._traces = otel.tracer_provider(environ, processor, redact)
        sdk_tracer = self._traces.get_tracer(otel.SCOPE)
        self._session = sdk_tracer.start_span(
            "session", context=otel.parent_context(environ), attributes={"gen_ai.conversation.id": session_id}
        )
        self._root = trace.set_span_in_context(self._session, otel_context.Context())
        self.tracer = otel.OtelTracer(sdk_tracer, self._root, content_on(environ), redact)
        self._redact = redact  # a notice may quote a server: the log records go through the spans' filter too
        self._metrics = _meter_provider(environ, redact)
        self._logs = _logger_provider(environ, redact)
        self._instruments = _Instruments(self._metrics.get_meter(otel.SCOPE), redact) if self._metrics else None
        self._logger = self._logs.get_logger(otel.SCOPE) if self._logs else None
        # The MCP SDK creates its own spans (a request's, an in-process server's) through the global provider. Last:
        # a setting refused above leaves no trace behind (no span, no TRACEPARENT for a command).
        self._leave_process = process.joined(self._traces, self._session.get_span_context().trace_id)

    def activate(self) -> Callable[[], None]:
        """Makes the session span current in the caller's context (what starts from here is in its trace: the
        servers' handshakes, the MCP SDK's and the anthropic SDK's own spans); returns what undoes it."""
        token = otel_context.attach(self._root)
        return lambda: otel_context.detach(token)

    def observe(self, event: ev.Event) -> None:
        if self._instruments is not None:
            self._instruments.count(event)
        if self._logger is not None and isinstance(event, ev.Notice | ev.HookObjected | ev.HookServerKilled):
            self._log(event)

    def _log(self, event: ev.Notice | ev.HookObjected | ev.HookServerKilled) -> None:
        assert self._logger is not None
        if isinstance(event, ev.Notice):
            severity, body = _SEVERITY.get(event.level, SeverityNumber.INFO), event.text
        elif isinstance(event, ev.HookObjected):
            severity, body = SeverityNumber.INFO, f"hook {event.hook} from {event.server} objected"
        else:
            severity, body = SeverityNumber.WARN, f"server {event.server} killed: {event.reason}"
        self._logger.emit(severity_number=severity, severity_text=severity.name, body=self._redact(body))

    def close(self, timeout_s: float = otel.EXPORT_TIMEOUT_S) -> None:
        """Ends the session span and flushes the spans first, then the metrics and logs, in what is left of
        `timeout_s` (an exporter's own retries may overrun it: the caller bounds the wait, see `notice`)."""
        self._session.end()
        self._leave_process()
        deadline = time.monotonic() + timeout_s

        def left() -> int:
            return int(max(0.1, deadline - time.monotonic()) * 1000)

        self._traces.force_flush(left())
        if self.failures.counts:  # the collector is not there: the metrics and logs would only wait for it too
            deadline = time.monotonic()
        if self._metrics is not None:
            self._metrics.shutdown(timeout_millis=left())
        if self._logs is not None:
            self._logs.force_flush(left())
            self._logs.shutdown()
        self._traces.shutdown()

    def notice(self) -> str | None:
        """What could not be exported so far, as one line (None: nothing was lost)."""
        lost = ", ".join(f"{count} {what}" for what, count in self.failures.counts.items())
        where = "is the collector at OTEL_EXPORTER_OTLP_ENDPOINT up?"
        return f"telemetry: could not export {lost} ({where})" if lost else None


class _Point:
    """An instrument whose data points' attributes pass the one rule (otel.redacted): a tool's or a hook's name, and
    a server's, come from a server."""

    def __init__(self, instrument: Any, redact: Callable[[str], str]) -> None:
        self._instrument = instrument
        self._redact = redact

    def add(self, amount: float, attributes: Mapping[str, Any] | None = None) -> None:
        self._instrument.add(amount, otel.redacted_attributes(attributes, self._redact))

    def record(self, amount: float, attributes: Mapping[str, Any] | None = None) -> None:
        self._instrument.record(amount, otel.redacted_attributes(attributes, self._redact))


class _Instruments:
    def __init__(self, meter: Any, redact: Callable[[str], str]) -> None:
        def counter(name: str, unit: str, description: str = "") -> _Point:
            return _Point(meter.create_counter(name, unit=unit, description=description), redact)

        self.tokens = counter("sprout.tokens", "{token}", "tokens by kind")
        self.cost = counter("sprout.cost", "USD", "what the model requests cost")
        self.requests = counter("sprout.model.requests", "{request}")
        self.tools = counter("sprout.tool.calls", "{call}")
        self.tool_time = _Point(meter.create_histogram("sprout.tool.duration", unit="s"), redact)
        self.hooks = counter("sprout.hook.decisions", "{decision}")
        self.compactions = counter("sprout.compactions", "{compaction}")
        self.denials = counter("sprout.sandbox.denials", "{denial}")

    def count(self, event: ev.Event) -> None:
        match event:
            case ev.ModelReplied():
                usage = event.usage
                kinds = {"input": usage.input_tokens, "output": usage.output_tokens}
                kinds |= {"cache_read": usage.cache_read_tokens, "cache_write": usage.cache_write_tokens}
                for kind, count in kinds.items():
                    self.tokens.add(count, {"kind": kind})
                self.cost.add(event.cost_usd)
                self.requests.add(1, {"stop_reason": event.stop_reason})
            case ev.ToolFinished():
                outcome = "denied" if event.denied else "error" if event.is_error else "ok"
                self.tools.add(1, {"tool": event.name, "outcome": outcome})
                self.tool_time.record(event.seconds, {"tool": event.name})
                if event.sandbox_denied:
                    self.denials.add(1, {"tool": event.name})
            case ev.HookObjected() | ev.HookTimedOut():
                decision = "objection" if isinstance(event, ev.HookObjected) else "timeout"
                self.hooks.add(1, {"hook": event.hook, "server": event.server, "decision": decision})
            case ev.CompactionFinished():
                self.compactions.add(1, {"ok": event.ok})
            case ev.SubagentEvent():
                self.count(event.event)
            case _:
                pass


def _meter_provider(environ: Mapping[str, str], redact: Callable[[str], str]) -> MeterProvider | None:
    exporter = _metric_exporter(environ)
    if exporter is None:
        return None
    interval = int(environ.get("OTEL_METRIC_EXPORT_INTERVAL") or 60000)
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=interval)
    return MeterProvider(resource=otel.resource(environ, redact), metric_readers=[reader])


def _metric_exporter(environ: Mapping[str, str]) -> MetricExporter | None:
    kind = environ.get("OTEL_METRICS_EXPORTER", "otlp").strip().lower()
    if kind == "console":
        return ConsoleMetricExporter(out=sys.stderr)
    if kind != "otlp" or otel.protocol(environ, "METRICS") != "http/protobuf":
        return None
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    return OTLPMetricExporter(timeout=otel.export_timeout(environ, "METRICS"))


def _logger_provider(environ: Mapping[str, str], redact: Callable[[str], str]) -> LoggerProvider | None:
    kind = environ.get("OTEL_LOGS_EXPORTER", "otlp").strip().lower()
    exporter: LogRecordExporter
    if kind == "console":
        exporter = ConsoleLogRecordExporter(out=sys.stderr)
    elif kind == "otlp" and otel.protocol(environ, "LOGS") == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

        exporter = OTLPLogExporter(timeout=otel.export_timeout(environ, "LOGS"))
    else:
        return None
    provider = LoggerProvider(resource=otel.resource(environ, redact))
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
    return provider
