"""The caller's side: hand the run to a warm zygote's child, relay signals, leave as the run left.

`hand_over` returns only when the run is to happen here, cold: nobody listens (then a zygote is started for
the next run), the peer fails a check, or the child did not take the request on within `READY_TIMEOUT`. Once
the client has said `go`, it never returns: it exits with the run's code or dies of the run's signal.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from types import FrameType
from typing import NoReturn

from sprout_agent.faces.cli.warm import place, starting
from sprout_agent.faces.cli.warm.wire import RELAYED, Lines, line, send_request

READY_TIMEOUT = 5.0  # seconds from connecting to the child's `ready`: a fork and a few system calls


def hand_over() -> None:
    """Runs this invocation in a warm child if one can take it; returns when it must run cold here."""
    env = os.environ
    base = place.directory(env)
    if base is None:
        return
    print_ = place.fingerprint(sys.path if sys.flags.safe_path else sys.path[1:])
    try:
        umask = os.umask(0o077)
        os.umask(umask)
        body = json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "env": dict(env), "umask": umask}).encode()
    except (OSError, ValueError):  # a deleted working directory, an environment JSON cannot carry
        return
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        with place.address(place.socket_path(base, print_)) as listening:
            conn.connect(listening)
    except OSError:
        conn.close()
        starting.start(base, print_, env)
        return
    lines = _committed(conn, body)
    if lines is None:
        conn.close()  # the child sees the end and runs nothing
        return
    _relay_until_the_end(conn, lines)


def _committed(conn: socket.socket, body: bytes) -> Lines | None:
    """Sends the request and waits for the child's `ready`; after our `go`, the run is the child's."""
    try:
        conn.settimeout(READY_TIMEOUT)
        if not place.peer_is_like_us(conn):
            return None
        send_request(conn, body, [0, 1, 2])
        lines = Lines(conn)
        ready = lines.next()
        if ready is None or ready.get("ready") is not True:
            return None
        conn.sendall(line(go=True))
        conn.settimeout(None)
    except OSError:
        return None
    return lines


def _relay_until_the_end(conn: socket.socket, lines: Lines) -> NoReturn:
    def relay(signum: int, _frame: FrameType | None) -> None:
        try:
            conn.sendall(line(signal=signum))
        except OSError:
            return
        if signum == signal.SIGTSTP:  # stop with the run, as the shell expects of its job
            os.kill(os.getpid(), signal.SIGSTOP)

    for signum in RELAYED:
        signal.signal(signum, relay)
    while (message := lines.next()) is not None:
        if isinstance(code := message.get("exit"), int):
            os._exit(code)
        if isinstance(signum := message.get("signal"), int):
            _die_of(signum)
    sys.stderr.write("sprout-agent: the warm interpreter ended without the run's exit status\n")
    os._exit(1)


def _die_of(signum: int) -> NoReturn:
    for relayed in RELAYED:
        signal.signal(relayed, signal.SIG_DFL)
    signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # a signal whose default is not to end the process
