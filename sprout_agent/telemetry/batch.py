"""A batch as one trace: the `batch` span, a span per task (its status, turns, cost), and each task's process in
it through TRACEPARENT (its session span a child of its task's). Spans only: each task exports its own metrics.
The tasks run on threads (or Ray), so the spans are started and ended by hand, not as the current span."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import Span

from sprout_agent.telemetry import otel
from sprout_agent.telemetry.enabled import CLOSE_S
from sprout_agent.trust.secrets import redactor


class BatchTelemetry:
    """`batch.runner.TaskTracing` over the OpenTelemetry SDK; `close` ends the batch span and flushes (bounded)."""

    def __init__(self, environ: Mapping[str, str], tasks_file: str, note: Callable[[str], None]) -> None:
        otel.quiet_exporters()
        self.failures = otel.Failures()
        exporter = otel.span_exporter(environ, note)
        redact = redactor(environ)
        processor = (
            otel.batch_processor(exporter, self.failures, redact, content=False) if exporter is not None else None
        )
        self._provider = otel.tracer_provider(environ, processor, redact)
        self._tracer = self._provider.get_tracer(otel.SCOPE)
        self._batch = self._tracer.start_span(
            "batch", context=otel.parent_context(environ), attributes={"sprout.batch.tasks_file": tasks_file}
        )
        self._root = trace.set_span_in_context(self._batch)
        self._tasks: dict[str, Span] = {}
        self._lock = threading.Lock()

    def started(self, task_id: str) -> dict[str, str]:
        span = self._tracer.start_span(
            f"batch task {task_id}", context=self._root, attributes={"sprout.task.id": task_id}
        )
        with self._lock:
            self._tasks[task_id] = span  # pyright: ignore[reportArgumentType]  (the SDK's tracer makes SDK spans)
        return {"TRACEPARENT": otel.traceparent_of(span), "SPROUT_AGENT_TELEMETRY": "1"}

    def finished(self, task_id: str, record: Mapping[str, Any]) -> None:
        with self._lock:
            span = self._tasks.pop(task_id, None)
        if span is None:
            return
        fields = {"status": str, "stop_reason": str, "turns": int, "cost_usd": float, "duration_ms": int}
        span.set_attributes(
            {f"sprout.task.{name}": kind(record[name]) for name, kind in fields.items() if record.get(name) is not None}
        )
        if record.get("status") != "ok":
            span.set_status(trace.Status(trace.StatusCode.ERROR, str(record.get("status"))))
        span.end()

    def close(self) -> str | None:
        """Ends the spans left open (tasks a signal stopped) and the batch's, then flushes within the export bound."""
        with self._lock:
            left, self._tasks = list(self._tasks.values()), {}
        for span in left:
            span.set_attribute("sprout.cancelled", True)
            span.end()
        self._batch.end()
        # The SDK's flush exports what is queued batch after batch, each up to its own timeout (a thousand tasks'
        # spans and a collector that never answers: 9 s), and its shutdown waits for them: they run on a thread
        # of their own, which exit leaves behind after the bound.
        flushing = threading.Thread(target=self._flush, name="sprout-telemetry-close", daemon=True)
        flushing.start()
        flushing.join(CLOSE_S)
        lost = self.failures.counts.get("spans", 0)
        if flushing.is_alive():
            return f"telemetry: could not export the batch's spans within {CLOSE_S:g} s ({lost} failed)"
        return f"telemetry: could not export {lost} spans of the batch" if lost else None

    def _flush(self) -> None:
        self._provider.force_flush(int(otel.EXPORT_TIMEOUT_S * 1000))
        self._provider.shutdown()
