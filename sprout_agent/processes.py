"""Spawning MCP server processes, each in its own process group, without importing mcp.

Kept free of the mcp SDK so the agent can start its servers first and import mcp (about 1 s) while
they boot on the other core.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence

import anyio
import anyio.abc

STDERR_TAIL_BYTES = 64 * 1024


class ServerProcess:
    """A spawned server: its process (pid == pgid), the tail of its stderr, and whether its stdout closed."""

    def __init__(self, process: anyio.abc.Process, on_stderr: Callable[[bytes], None] | None) -> None:
        self.process = process
        self.pid = process.pid
        self.ended = anyio.Event()  # stdout closed or the leader exited, whichever is seen first
        self.stderr_closed = anyio.Event()
        self.spawned_at = time.monotonic()
        self._tail = bytearray()
        self.on_stderr = on_stderr  # set by the pool when it adopts a process spawned before it existed

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def add_stderr(self, chunk: bytes) -> None:
        self._tail += chunk
        if len(self._tail) > STDERR_TAIL_BYTES:
            del self._tail[: len(self._tail) - STDERR_TAIL_BYTES]
        if self.on_stderr is not None:
            self.on_stderr(chunk)

    def stderr_tail(self, lines: int = 20) -> str:
        text = self._tail.decode("utf-8", errors="replace")
        return "\n".join(text.rstrip("\n").splitlines()[-lines:])

    def kill_now(self) -> None:
        """SIGKILLs the whole group at once; safe from a signal handler."""
        signal_group(self.pid, signal.SIGKILL)


def signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def group_alive(pgid: int) -> bool:
    """Whether any non-zombie process is left in the group.

    killpg(pgid, 0) alone is fooled by zombies, and an init that never reaps orphans leaves them forever.
    """
    try:
        entries = os.listdir("/proc")
    except OSError:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    return any(_live_member(entry, pgid) for entry in entries if entry.isdigit())


def _live_member(pid: str, pgid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return False
    fields = data[data.rfind(b")") + 2 :].split()
    return len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X")


async def spawn(
    argv: Sequence[str], env: Mapping[str, str], cwd: str | None, on_stderr: Callable[[bytes], None] | None = None
) -> ServerProcess:
    process: anyio.abc.Process | None = None
    # Shielded so a cancellation cannot land between the fork and the registration that lets us kill it.
    with anyio.CancelScope(shield=True):
        process = await anyio.open_process(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
        )
    assert process is not None
    return ServerProcess(process, on_stderr)
