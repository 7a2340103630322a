"""Says when a request goes quiet: an `ApiWaiting` event each `every` seconds with no answer and no stream event,
so a hanging API is never a silent wait (the terminal, `-p`'s stderr, stream-json and ACP each show it).

A timer on the event loop, moved on at each event, rather than a task beside the stream: a task group would wrap
the stream's own errors in exception groups, which the retry logic classifies by type, and cancelling a read in
the middle of an SSE stream would leave it unusable."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from types import TracebackType

from sprout_agent.core.events import ApiWaiting, Event

API_WAITING_NOTICE_S = 15.0  # documented (docs/models.md): the longest a request stays quiet unannounced


class Silence:
    """`with Silence(emit):` around a request; `heard()` at each event of its reply."""

    def __init__(self, emit: Callable[[Event], None], every: float = API_WAITING_NOTICE_S) -> None:
        self._emit, self._every = emit, every
        self._loop = asyncio.get_running_loop()
        self._since, self._said = time.monotonic(), False
        self._timer: asyncio.TimerHandle | None = None

    def __enter__(self) -> Silence:
        self.heard()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def heard(self) -> None:
        """Something came: the quiet starts again from now."""
        self._since, self._said = time.monotonic(), False
        self._schedule(self._every)

    def _schedule(self, delay: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._loop.call_later(delay, self._quiet)

    def _quiet(self) -> None:
        self._emit(ApiWaiting(round(time.monotonic() - self._since), first=not self._said))
        self._said = True
        self._schedule(self._every)
