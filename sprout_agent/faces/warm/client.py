"""The caller's side: hand the run to a warm zygote's child, relay signals, leave as the run left.

`hand_over` returns only when the run is to happen here, cold: nobody listens (then a zygote is started for
the next run), the peer fails a check, or the child did not take the request on within `READY_TIMEOUT`. Once
the client has said `go`, it never returns: it exits with the run's code or dies of the run's signal.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
from types import FrameType
from typing import NoReturn

from sprout_agent.faces.warm import inherited, place, starting
from sprout_agent.faces.warm.wire import RELAYED, Lines, line, send_go, send_request

READY_TIMEOUT = 5.0  # seconds from connecting to the child's `ready`: a fork and a few system calls


def hand_over(program: str) -> None:
    """Runs this invocation in a warm child if one can take it; returns when it must run cold here (then a zygote
    is started with `program` for the next run: starting.start)."""
    env = os.environ
    if place.no_new_privs():  # confined (a sandbox, a container's no-new-privileges): see place.py
        return
    base = place.directory(env)
    if base is None:
        return
    print_ = place.fingerprint(sys.path if sys.flags.safe_path else sys.path[1:])
    try:
        body = json.dumps(inherited.of_this_process()).encode()
    except (OSError, ValueError):  # a deleted working directory, an environment JSON cannot carry
        return
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    conn.settimeout(READY_TIMEOUT)  # a stopped zygote's full backlog must not hold connect() either
    try:
        with place.address(place.socket_path(base, print_)) as listening:
            conn.connect(listening)
    except OSError:
        conn.close()
        starting.start(base, print_, env, program)
        return
    child = _committed(conn, body)
    if child is None:
        conn.close()  # the child sees the end and runs nothing; our descriptors never left this process
        return
    _relay_until_the_end(conn, *child)


def _committed(conn: socket.socket, body: bytes) -> tuple[Lines, int] | None:
    """Sends the request and waits for the child's `ready`; with our `go` (and our descriptors), the run is the
    child's. Returns the lines to read and the child's pid."""
    try:
        if not place.peer_is_like_us(conn):
            return None
        send_request(conn, body)
        lines = Lines(conn)
        ready = lines.next()
        pid = ready.get("pid") if ready is not None else None
        if ready is None or ready.get("ready") is not True or not isinstance(pid, int) or pid <= 0:
            return None
        send_go(conn, [0, 1, 2])
        conn.settimeout(None)
    except OSError:
        return None
    return lines, pid


def _relay_until_the_end(conn: socket.socket, lines: Lines, child: int) -> NoReturn:
    def relay(signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(OSError):
            conn.sendall(line(signal=signum))

    def stop(_signum: int, _frame: FrameType | None) -> None:
        # Ctrl-Z: the child, in a session of its own, would not be stopped by the terminal; stop it, then us
        with contextlib.suppress(OSError):
            os.kill(child, signal.SIGSTOP)
        os.kill(os.getpid(), signal.SIGSTOP)

    def resume(_signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(OSError):
            os.kill(child, signal.SIGCONT)

    for signum in RELAYED:
        if signal.getsignal(signum) is not signal.SIG_IGN:  # ignored here: ignored there too (nohup)
            signal.signal(signum, relay)
    if signal.getsignal(signal.SIGTSTP) is not signal.SIG_IGN:
        signal.signal(signal.SIGTSTP, stop)
    signal.signal(signal.SIGCONT, resume)
    while (message := lines.next()) is not None:
        if isinstance(code := message.get("exit"), int):
            os._exit(code)
        if isinstance(signum := message.get("signal"), int):
            _die_of(signum)
    sys.stderr.write("sprout-agent: the warm interpreter ended without the run's exit status\n")
    os._exit(1)


def _die_of(signum: int) -> NoReturn:
    for relayed in (*RELAYED, signal.SIGTSTP, signal.SIGCONT):
        signal.signal(relayed, signal.SIG_DFL)
    signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # a signal whose default is not to end the process
