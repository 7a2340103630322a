"""The batch's shared rate-limit gate: a file, named by SPROUT_AGENT_RATE_GATE, holding the wall-clock time
(seconds since the epoch) before which no request should be sent. Every `sprout-agent -p` of a batch waits on it
before each request, and a 429 moves it to now + the API's retry-after, so a rate limit slows every worker at
once instead of each finding out by its own 429. Stdlib only; a missing or unreadable file means no wait."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

MAX_WAIT_SECONDS = 60.0  # a gate far in the future (a clock jump, a hostile file) never stalls a run longer


class RateGate:
    def __init__(self, path: Path) -> None:
        self.path = path

    def wait_seconds(self) -> float:
        """How long to wait before the next request (0 when the gate is open)."""
        try:
            until = float(self.path.read_text(encoding="ascii").strip() or 0)
        except (OSError, ValueError):
            return 0.0
        return min(MAX_WAIT_SECONDS, max(0.0, until - time.time()))

    def close_for(self, seconds: float) -> None:
        """After a 429: no worker sends before now + `seconds` (a later time already there is kept)."""
        until = time.time() + min(MAX_WAIT_SECONDS, max(0.0, seconds))
        with contextlib.suppress(OSError):
            # Never through a link: the gate is a batch's --out file, and a link there must not truncate its target.
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)  # read, compare and write as one step among the workers
                current = os.read(fd, 64).decode("ascii", "replace").strip()
                with contextlib.suppress(ValueError):
                    until = max(until, float(current or 0))
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{until:.3f}\n".encode(), 0)
            finally:
                os.close(fd)
