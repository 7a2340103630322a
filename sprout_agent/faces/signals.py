"""SIGINT and SIGTERM as cancellation, for every face that runs the loop."""

from __future__ import annotations

import signal

import anyio

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
