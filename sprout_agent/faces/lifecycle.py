"""One choreography for every face that runs sessions: SIGINT and SIGTERM as cancellation, `_SessionEnd` after
a signal, a second signal ends everything at once.

The REPL, the headless runner and the ACP server each open a `FaceLife` around their sessions and run their
turns through `turns`, so the order is the same everywhere: the first signal cancels the turns (in the REPL a
SIGINT during a turn cancels only that turn), the servers stay up while `_SessionEnd` reaches the hooks (bounded
by the hook timeout), and a second signal in that time cancels the rest.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
from anyio.abc import TaskGroup

from sprout_agent.core.errors import EXIT_SIGINT, EXIT_SIGTERM


class SignalWatch:
    """Turns SIGINT/SIGTERM into cancellation: of the running turn in the REPL, of everything otherwise."""

    def __init__(self) -> None:
        self.everything: anyio.CancelScope | None = None
        self.turn: anyio.CancelScope | None = None
        self.received: int | None = None

    async def watch(self) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for signum in signals:
                if signum == signal.SIGINT and self.turn is not None:
                    self.turn.cancel()
                    continue
                self.received = signum
                if self.everything is not None:
                    self.everything.cancel()

    @property
    def exit_code(self) -> int | None:
        if self.received is None:
            return None
        return EXIT_SIGTERM if self.received == signal.SIGTERM else EXIT_SIGINT


class FaceLife:
    """A face's sessions between `open_face` and its end: the task group their work runs in and the signal watch."""

    def __init__(self, group: TaskGroup, watch: SignalWatch) -> None:
        self.group = group
        self.watch = watch

    async def turns(self, body: Callable[[], Awaitable[None]], after_signal: Callable[[], Awaitable[None]]) -> None:
        """Runs `body` (the session's turns); after a signal, `after_signal` (the `_SessionEnd` hook calls) runs
        with the servers still up, and a second signal cancels everything."""
        with anyio.CancelScope() as turns:
            self.watch.everything = turns
            await body()
        self.watch.everything = self.group.cancel_scope
        if self.watch.received is not None:
            await after_signal()

    @property
    def signalled(self) -> bool:
        return self.watch.received is not None

    @property
    def exit_code(self) -> int | None:
        """EXIT_SIGINT or EXIT_SIGTERM once a signal ended the session; None otherwise."""
        return self.watch.exit_code


@asynccontextmanager
async def open_face(*, signals: bool = True) -> AsyncGenerator[FaceLife]:
    """The task group a face's sessions live in, with the signals watched (`signals=False`: a test that serves a
    face in-process leaves the process's signals alone). Leaving it cancels what is left of the group."""
    watch = SignalWatch()
    async with anyio.create_task_group() as group:
        watch.everything = group.cancel_scope
        if signals:
            group.start_soon(watch.watch)
        yield FaceLife(group, watch)
        group.cancel_scope.cancel()
