"""An OTLP/HTTP receiver for tests: decodes the real protobuf requests (traces, metrics, logs) the exporters send,
and keeps what they carry."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


@dataclass(frozen=True)
class Received:
    service: str
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    status: str = ""  # the status's description (an error's message)


@dataclass
class Receiver:
    spans: list[Received] = field(default_factory=list[Received])
    metrics: list[str] = field(default_factory=list[str])
    logs: list[str] = field(default_factory=list[str])
    bodies: list[bytes] = field(default_factory=list[bytes])  # every request as sent: what a collector's readers get
    resources: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])  # each signal's resource attributes
    _server: ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver.take(self.path, body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                del format, args

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def take(self, path: str, body: bytes) -> None:
        self.bodies.append(body)
        if path.endswith("/v1/traces"):
            self._spans(body)
        elif path.endswith("/v1/metrics"):
            request = ExportMetricsServiceRequest.FromString(body)
            self.resources += [_attributes(r.resource.attributes) for r in request.resource_metrics]
            self.metrics += [m.name for r in request.resource_metrics for s in r.scope_metrics for m in s.metrics]
        elif path.endswith("/v1/logs"):
            request = ExportLogsServiceRequest.FromString(body)
            self.resources += [_attributes(r.resource.attributes) for r in request.resource_logs]
            self.logs += [
                rec.body.string_value for r in request.resource_logs for s in r.scope_logs for rec in s.log_records
            ]

    def _spans(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            self.resources.append(_attributes(resource_spans.resource.attributes))
            service = next(
                (a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"), ""
            )
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    attributes = {a.key: _value(a.value) for a in span.attributes}
                    self.spans.append(
                        Received(
                            service,
                            span.name,
                            span.trace_id.hex(),
                            span.span_id.hex(),
                            span.parent_span_id.hex(),
                            attributes,
                            span.status.message,
                        )
                    )


def _attributes(attributes: Any) -> dict[str, Any]:
    return {a.key: _value(a.value) for a in attributes}


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None
