"""OpenTelemetry: traces, metrics and logs of a session (docs/telemetry.md), off unless SPROUT_AGENT_TELEMETRY=1.
The only importer of the OpenTelemetry SDK and its exporters; loaded only when telemetry is on. Imports core and
config."""
