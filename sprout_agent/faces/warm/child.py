"""A forked child of the zygote becoming one run: the caller's descriptors, directory, umask, environment and
argv, then the run it was given (the command line's `run_here.run`, as a cold `launch.main` would call it).

Until the client says `go`, nothing of the run has happened (stdin unread, nothing written), so a child that
cannot take the request on simply exits and the client runs cold. After `go`, a thread relays the client's
signals (each raised on this process, so the run's own handlers see it as they would from a terminal), and
the end of the client's connection without a signal (it was killed) kills the run as it would have killed a
cold one: a run is never left behind without the process that stands for it.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from typing import NoReturn

from sprout_agent.faces.warm import inherited, title
from sprout_agent.faces.warm.wire import RELAYED, Lines, line, receive_go, receive_request
from sprout_agent.trust.secrecy import harden

REQUEST_TIMEOUT = 10.0  # seconds for the client to send its request and its `go`: it does so at once


def become_the_run(conn: socket.socket, run: Callable[[], None]) -> NoReturn:
    harden()  # before the request brings the run's key: a no-op in a hardened zygote's fork, and cheap
    code = 70  # EX_SOFTWARE: something below failed before the run could say anything
    try:
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.set_wakeup_fd(-1)
        os.setsid()  # a session of its own: the zygote's group is not this run's
        conn.settimeout(REQUEST_TIMEOUT)
        lines = _take_on(conn)
        if lines is None:
            os._exit(0)
        # A run, no longer the zygote's copy, in ps and top; the session names itself once it has an id
        title.name_run(None)
        conn.settimeout(None)
        threading.Thread(target=_relay, args=(lines,), daemon=True, name="warm-signals").start()
        code = _run(run)
    except BaseException:  # the child must never return into the zygote's loop
        with contextlib.suppress(BaseException):
            import traceback

            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        os._exit(code)


def _take_on(conn: socket.socket) -> Lines | None:
    """Reads the request and makes this process the caller's (inherited.take_on); None when the run must not
    happen here."""
    try:
        request = receive_request(conn)
    except OSError:
        return None
    if request is None or not inherited.take_on(request):
        return None
    try:
        conn.sendall(line(ready=True, pid=os.getpid()))
        went = receive_go(conn)
    except OSError:
        return None
    if went is None:
        return None
    fds, rest = went
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    _standard_streams()
    return Lines(conn, rest)


def _standard_streams() -> None:
    """sys.stdin, stdout and stderr over the caller's descriptors, made as Python makes them at start-up: the
    zygote's were over /dev/null, and whether stdout is line-buffered depends on what it is now."""
    made: list[io.TextIOWrapper] = []
    for fd, old in ((0, sys.stdin), (1, sys.stdout), (2, sys.stderr)):
        raw = io.FileIO(fd, "rb" if fd == 0 else "wb", closefd=False)
        buffered = io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
        interactive = fd == 2 or (fd == 1 and os.isatty(fd))
        made.append(
            io.TextIOWrapper(
                buffered,  # pyright: ignore[reportArgumentType]
                encoding=old.encoding,
                errors=old.errors,
                newline="\n",
                line_buffering=interactive,
            )
        )
    sys.stdin = sys.__stdin__ = made[0]
    sys.stdout = sys.__stdout__ = made[1]
    sys.stderr = sys.__stderr__ = made[2]


def _relay(lines: Lines) -> None:
    while (message := lines.next()) is not None:
        signum = message.get("signal")
        if isinstance(signum, int) and signum in RELAYED:
            os.kill(os.getpid(), signum)
    # The client is gone without relaying a signal: it was killed (SIGKILL) or crashed. A cold run would be gone
    # with it, at once: so is this one (a script that kills and then resumes the session must not race it).
    os.kill(os.getpid(), signal.SIGKILL)


def _run(run: Callable[[], None]) -> int:
    """The run (the command line's, which leaves through `exit_now` (os._exit) or SystemExit); returns the exit code."""
    try:
        run()
    except SystemExit as leaving:
        status = leaving.code
        if status is None or isinstance(status, int):
            return status or 0
        sys.stderr.write(f"{status}\n")
        return 1
    return 0
