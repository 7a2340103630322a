"""OpenTelemetry: traces, metrics and logs of a session (docs/telemetry.md), off unless SPROUT_AGENT_TELEMETRY=1.
The only importer of the OpenTelemetry SDK and its exporters; loaded only when telemetry is on.

`enabled.py` (whether it is on, from the real environment only: stdlib), `signals.py` (a session's tracer, metrics
and logs read off the loop's events), `otel.py` (the SDK and its exporters), `process.py` (the process's tracer
provider), `batch.py` (a batch as one trace).

Imports: trust, core.
"""
