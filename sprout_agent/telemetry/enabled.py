"""Whether telemetry is on, read from the real environment only (a project's `.env` may not turn it on, nor point
it anywhere: config/guarded_env.py). Stdlib only: the runtime asks before anything of OpenTelemetry loads."""

from __future__ import annotations

from collections.abc import Mapping

from sprout_agent.trust.env_flags import env_flag

SWITCH = "SPROUT_AGENT_TELEMETRY"  # 1: export traces, metrics and logs as the OTEL_* variables say
CONTENT = "SPROUT_AGENT_TELEMETRY_CONTENT"  # 1: prompts, answers, tool inputs and results in spans too
CLOSE_S = 3.5  # what exit may wait for the last exports, a session's or a batch's (docs/telemetry.md)
# The SDK and its exporters are an extra (pyproject, `telemetry`): switched on without them, this is what to run.
INSTALL = "pip install 'sprout-agent[telemetry]'"


def telemetry_on(environ: Mapping[str, str]) -> bool:
    return env_flag(environ, SWITCH)


def content_on(environ: Mapping[str, str]) -> bool:
    return env_flag(environ, CONTENT)


def off_reason(error: Exception) -> str:
    """The one line said when telemetry is on but cannot start: the extra's install command when OpenTelemetry's SDK
    or an exporter is missing (the API alone comes with the mcp SDK), else the error the SDK raised."""
    if isinstance(error, ModuleNotFoundError) and (error.name or "").partition(".")[0] == "opentelemetry":
        return f"telemetry is off: the OpenTelemetry SDK is not installed ({error.name}): {INSTALL}"
    return f"telemetry is off: {type(error).__name__}: {error}"
