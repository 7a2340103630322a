"""Spawning MCP server processes, each in its own process group, without importing mcp.

Kept free of the mcp SDK so the agent can start its servers first and import mcp (about 1 s) while
they boot on the other core. On Linux each server gets SIGKILL when the agent dies (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import cast

import anyio
import anyio.abc
from anyio._core._eventloop import get_async_backend  # the only way to pass Popen's preexec_fn (anyio 4.16)

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
        self.failure: str | None = None  # why the transport gave up on it (beats how the process ended)
        self.notices: list[str] = []  # what the transport dropped from its answers (invalid tools)

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
    """Starts `argv` in a new session (its own process group). Call it from the event loop's thread only:
    the parent-death signal fires when the thread that forked ends, and that thread lives as long as we do."""
    process: anyio.abc.Process | None = None
    # Shielded so a cancellation cannot land between the fork and the registration that lets us kill it.
    with anyio.CancelScope(shield=True):
        process = await _open_process(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
            preexec_fn=die_with_us(),
        )
    assert process is not None
    return ServerProcess(process, on_stderr)


_PR_SET_PDEATHSIG = 1


def _open_process(argv: list[str], **options: object) -> Awaitable[anyio.abc.Process]:
    # anyio.open_process takes no preexec_fn; both of its backends (asyncio, trio) pass keywords their abstract
    # signature does not declare on to Popen, so we call the running backend itself.
    backend_open = cast("Callable[..., Awaitable[anyio.abc.Process]]", get_async_backend().open_process)
    return backend_open(argv, **options)


def die_with_us() -> Callable[[], None] | None:
    """Popen's preexec_fn asking Linux to SIGKILL the child when we die, even by SIGKILL; elsewhere nothing.
    The agent's MCP servers and the batch's tasks (and its git calls) get it; fork from a thread that outlives
    the child, since the signal fires when the forking thread ends.

    SIGKILL, not SIGTERM: it fires only when we died without our own teardown (stdin closed, SIGTERM, then
    SIGKILL), and with us gone nobody could follow a SIGTERM the server ignores or hangs in. The polite
    signal, stdin's EOF, reaches it at the same moment. Grandchildren are not covered: the setting is not
    inherited across fork; a server's own children are its to end.
    """
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # only here: the child runs this function, so its library must be loaded before the fork

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # we died between the fork and the prctl: nothing will signal it now
            os._exit(1)

    return preexec
