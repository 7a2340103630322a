"""What a bash call leaves behind: its process group ends with the call, or with the agent if the agent dies first.

Three nets, each for what the one before misses:
- the group (bash runs as a session leader): killed when the shell exits, so `cmd &` and `nohup` end too;
- a guard process holding the read end of a pipe whose write end only we hold: when we exit, even by
  SIGKILL, the kernel closes it and the guard kills the group (PR_SET_PDEATHSIG would reach bash alone,
  not its children, and fires when the forking *thread* ends);
- a marker in the call's environment: at the end of the call every process of ours that still carries
  it (`setsid` and double-fork escapees, which leave the group) is killed. Linux only (/proc).
Not covered: an escapee that also clears its environment, and escapees still running when the agent is
SIGKILLed mid-call (the guard ends the group only). Nothing here touches process-wide settings.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager, suppress

import anyio
import anyio.to_thread
from anyio.abc import Process

CALL_ENV = "SPROUT_DEV_CALL"
TERM_GRACE_SECONDS = 1.0
GUARD_EXIT_SECONDS = 2.0
# `read` returns only at end of file: when the write end closes (the call ended, or the agent died).
_GUARD = 'read -r _; kill -KILL -- -"$1" 2>/dev/null'


def signal_group(pgid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def kill_group(proc: Process) -> None:
    """SIGTERM the whole group, give it a moment, then SIGKILL whatever is left (grandchildren too)."""
    with anyio.CancelScope(shield=True):
        signal_group(proc.pid, signal.SIGTERM)
        with anyio.move_on_after(TERM_GRACE_SECONDS):
            await proc.wait()
        signal_group(proc.pid, signal.SIGKILL)
        with anyio.move_on_after(TERM_GRACE_SECONDS):
            await proc.wait()


def _carries(pid: str, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return marker in f.read().split(b"\0")
    except OSError:  # gone, or another user's
        return False


def kill_marked(token: str) -> int:
    """SIGKILL every process whose environment holds CALL_ENV=token; how many there were."""
    marker = f"{CALL_ENV}={token}".encode()
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return 0
    killed = 0
    for pid in pids:
        if int(pid) != os.getpid() and _carries(pid, marker):
            with suppress(ProcessLookupError, PermissionError):
                os.kill(int(pid), signal.SIGKILL)
                killed += 1
    return killed


async def _start_guard(pgid: int, env: dict[str, str]) -> tuple[Process | None, int | None]:
    read_end, write_end = os.pipe()  # not inheritable (PEP 446): no other child keeps the write end open
    try:
        guard = await anyio.open_process(
            ["bash", "-c", _GUARD, "sprout-dev-guard", str(pgid)],
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # a Ctrl-C to the agent's group must not end the guard first
        )
    except OSError:
        os.close(write_end)
        return None, None
    finally:
        os.close(read_end)
    return guard, write_end


@asynccontextmanager
async def call_scope(proc: Process, token: str, env: dict[str, str]) -> AsyncGenerator[None]:
    """Around one bash call: on the way out (normally, on timeout or cancelled), nothing it started survives."""
    guard, write_end = await _start_guard(proc.pid, env)
    try:
        yield
    finally:
        with anyio.CancelScope(shield=True):
            if proc.returncode is None:
                await kill_group(proc)
            signal_group(proc.pid, signal.SIGKILL)  # background jobs: they do not outlive the call
            if write_end is not None:
                os.close(write_end)
            if guard is not None:
                with anyio.move_on_after(GUARD_EXIT_SECONDS):
                    await guard.wait()
                if guard.returncode is None:
                    guard.kill()
                await guard.aclose()
            await anyio.to_thread.run_sync(kill_marked, token)
