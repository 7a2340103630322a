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
import secrets
import signal
import subprocess
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass

import anyio
import anyio.to_thread
from anyio.abc import Process

CALL_ENV = "_SPROUT_DEV_CALL"  # leading `_`: a marker we set, not a setting anyone reads
TERM_GRACE_SECONDS = 1.0
# The guard reads the group id, then waits for end of file: the write end closed because the agent died
# (at a normal end of the call we kill the guard first). It then kills the group and every process still
# carrying the call's marker; until the group id arrives, the marker alone still finds the command.
_GUARD = """read -r g; read -r _; [ -n "$g" ] && kill -9 -"$g" 2>/dev/null
for f in $(grep -lzx "$0=$1" /proc/[0-9]*/environ 2>/dev/null); do p=${f#/proc/}; kill -9 "${p%/environ}"; done"""


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


async def _start_guard(token: str, env: dict[str, str]) -> tuple[Process | None, int | None]:
    read_end, write_end = os.pipe()  # not inheritable (PEP 446): no other child keeps the write end open
    try:
        guard = await anyio.open_process(
            ["sh", "-c", _GUARD, CALL_ENV, token],
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,  # without the marker: the guard must not find itself
            start_new_session=True,  # a Ctrl-C to the agent's group must not end the guard first
        )
    except OSError:
        os.close(write_end)
        return None, None
    finally:
        os.close(read_end)
    return guard, write_end


@dataclass
class Call:
    """One bash call's processes; `arm` it with the shell as soon as that is started."""

    token: str
    guard: Process | None
    write_end: int | None
    proc: Process | None = None
    ended: bool = False

    def arm(self, proc: Process) -> None:
        self.proc = proc
        if self.write_end is not None:
            with suppress(OSError):
                os.write(self.write_end, f"{proc.pid}\n".encode())

    async def end(self) -> None:
        """Nothing the call started survives: the group, the guard, marked escapees. Idempotent."""
        if self.ended:
            return
        self.ended = True
        with anyio.CancelScope(shield=True):
            if self.proc is not None:
                if self.proc.returncode is None:
                    await kill_group(self.proc)
                signal_group(self.proc.pid, signal.SIGKILL)  # background jobs do not outlive the call
            if self.guard is not None:
                self.guard.kill()  # before closing the pipe, which would make it scan for nothing
                await self.guard.aclose()
            if self.write_end is not None:
                os.close(self.write_end)
            await anyio.to_thread.run_sync(kill_marked, self.token)


@asynccontextmanager
async def call_scope(env: dict[str, str]) -> AsyncGenerator[Call]:
    """Around one bash call, guard first: on the way out (normally, on timeout or cancelled) the call ends."""
    token = secrets.token_hex(8)
    call = Call(token, *await _start_guard(token, env))
    try:
        yield call
    finally:
        await call.end()
