"""A session's OpenTelemetry, when switched on (docs/telemetry.md): started from the prepared settings, fed every
event the session emits, and closed within a bound at the end. The SDK itself is imported only when on
(telemetry/signals.py); a setup the SDK refuses is one notice, and the run goes on untraced."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from sprout_agent.core.events import Event, Notice
from sprout_agent.session.prepared import Prepared
from sprout_agent.telemetry.enabled import CLOSE_S, off_reason, telemetry_on

if TYPE_CHECKING:
    from sprout_agent.telemetry.signals import Telemetry


def start_telemetry(prepared: Prepared, session_id: str, emit: Callable[[Event], None]) -> Telemetry | None:
    """OpenTelemetry when SPROUT_AGENT_TELEMETRY=1 in the real environment (docs/telemetry.md); its SDK loads only
    then. It cannot fail the run: a setup that fails, or an SDK not installed, is one notice, and the run goes on
    untraced."""
    if not telemetry_on(prepared.inherited_env):
        return None
    try:
        from sprout_agent.telemetry.signals import Telemetry

        return Telemetry(
            prepared.inherited_env,
            session_id,
            lambda text: emit(Notice(text, "warning")),
            # The API key may come from `.env`, a server's credential from the config: the filter knows them too.
            secrets_in={**prepared.configured_credentials, **prepared.settings_env},
        )
    except Exception as error:  # a bad OTEL_* value the SDK refuses, or the SDK not installed (the extra)
        emit(Notice(off_reason(error), "warning"))
        return None


def observed(emit: Callable[[Event], None], telemetry: Telemetry) -> Callable[[Event], None]:
    def both(event: Event) -> None:
        emit(event)
        telemetry.observe(event)

    return both


async def close_telemetry(telemetry: Telemetry, emit: Callable[[Event], None]) -> None:
    """Flushes what is left, bounded: an unreachable collector delays exit by its export timeout and no more."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_S):
        await anyio.to_thread.run_sync(telemetry.close, abandon_on_cancel=True)
    if (notice := telemetry.notice()) is not None:
        emit(Notice(notice, "warning"))
