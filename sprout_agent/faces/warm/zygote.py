"""The warm interpreter's own process: import what a run needs, then fork a child per connection.

Started by `starting.start` from a cold run (its own session, a minimal environment, `/` as its directory, no terminal,
`python -P` so no directory of the caller's lands on the import path). It holds a lock for its whole life (one
per fingerprint: a second one started meanwhile leaves at once), binds its socket only once the imports are
done (a run that comes earlier goes cold rather than wait), and leaves after the idle time with no child
running, or at SIGTERM once its children have ended. It never reads a request: the child does, after the fork
(`child.py`), so nothing a run sends (its key, its environment) is ever in the memory later children copy.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import os
import selectors
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from sprout_agent import __version__
from sprout_agent.faces.warm import live, place, title
from sprout_agent.faces.warm.wire import line
from sprout_agent.trust.secrecy import harden


def main(preload: Sequence[str], run: Callable[[], None]) -> None:
    """The zygote's life: `preload` imported once, then a child per connection that becomes `run`."""
    harden()  # its environment holds no credential, but every child it forks will: they inherit the mark
    base, print_, idle = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    lock = os.open(place.lock_path(base, print_), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another zygote got there first
    _serve(base, print_, idle, lock, preload, run)
    # Still holding the lock: nobody serves these files any more. Not after an exception: its traceback goes to
    # the log, which stays for the user (the next zygote to start clears it a minute later).
    live.forget(base, print_)


def _serve(base: Path, print_: str, idle: float, lock: int, preload: Sequence[str], run: Callable[[], None]) -> None:
    if place.no_new_privs():
        return  # it would serve commands confined by Landlock as readily as their runs: place.no_new_privs
    if place.fingerprint(sys.path) != print_:
        return  # started by an interpreter unlike this one: it would never be asked
    live.claim(lock)
    title.name_warm(__version__)
    for name in preload:
        importlib.import_module(name)
    if threading.active_count() != 1:
        return  # an import started a thread: forking would copy it half-way through
    zygote = _Zygote(place.socket_path(base, print_), print_, idle, lock, run)
    with contextlib.suppress(OSError):
        live.clear_dead(base, keep=print_)  # older code's files, and those of zygotes that died
    try:
        zygote.run()
    finally:
        zygote.stop_listening()


def _ignore(_signum: int, _frame: object) -> None:
    return None


def _bind(path: Path) -> socket.socket:
    """Listens at `path`, replacing a stale socket atomically (bound under another name, then renamed)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    fresh = path.with_name(f"{path.name}.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(fresh)
    with place.address(fresh) as bound:
        listener.bind(bound)
    os.rename(fresh, path)
    listener.listen(64)
    return listener


# How often an idle zygote checks that the code it imported is still what is installed (an edit or an upgrade
# changes the fingerprint, and runs then look for another socket): a stale one leaves instead of idling out. It
# also checks as its last run in flight ends (about 6 ms, after the run's status went out).
STALE_CHECK_SECONDS = 10.0


class _Zygote:
    def __init__(self, path: Path, print_: str, idle: float, lock: int, run: Callable[[], None]) -> None:
        self.run_one = run
        self.path = path
        self.print_ = print_
        self.lock = lock  # a child closes it: a run in flight must not keep the next zygote from starting
        self.listener: socket.socket | None = _bind(path)
        self.bound = os.stat(path).st_ino  # to remove our socket only, not one a newer zygote put there
        self.idle = idle
        self.children: dict[int, socket.socket] = {}
        self.last = time.monotonic()
        self.stopping = False
        self.wake_read, self.wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.selector = selectors.DefaultSelector()

    def run(self) -> None:
        signal.set_wakeup_fd(self.wake_write)
        signal.signal(signal.SIGCHLD, _ignore)  # its byte on the wakeup pipe is the news
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        assert self.listener is not None
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.selector.register(self.wake_read, selectors.EVENT_READ)
        while self.children or not self.stopping:
            left = max(0.0, self.last + self.idle - time.monotonic())
            ready = self.selector.select(None if self.children else min(left, STALE_CHECK_SECONDS))
            for key, _events in ready:
                if key.fileobj is self.listener:
                    self._accept()
                else:
                    with contextlib.suppress(OSError):
                        os.read(self.wake_read, 4096)
            ended = self._reap()
            if not ready and not self.children and time.monotonic() - self.last >= self.idle:
                break
            if not self.children and (ended or not ready) and place.fingerprint(sys.path) != self.print_:
                self.stopping = True  # the code changed under it: no run will ask for it again
            if self.stopping:
                self.stop_listening()

    def _stop(self, _signum: int, _frame: object) -> None:
        self.stopping = True

    def stop_listening(self) -> None:
        """No new runs: the socket goes (if it is still ours), the children in flight go on."""
        if self.listener is None:
            return
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(self.listener)
        self.listener.close()
        self.listener = None
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self.bound:
                os.unlink(self.path)

    def _accept(self) -> None:
        assert self.listener is not None
        try:
            conn, _address = self.listener.accept()
        except OSError:
            return
        if not place.peer_is_like_us(conn):
            conn.close()
            return
        self.last = time.monotonic()
        pid = os.fork()
        if pid == 0:
            from sprout_agent.faces.warm.child import become_the_run

            self.selector.close()
            self.listener.close()
            os.close(self.wake_read)
            os.close(self.wake_write)
            os.close(self.lock)
            for other in self.children.values():  # the other runs' status channels are not this run's
                other.close()
            become_the_run(conn, self.run_one)
        self.children[pid] = conn

    def _reap(self) -> int:
        """Tells each ended run's caller how it ended; returns how many ended."""
        ended = 0
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return ended
            if pid == 0:
                return ended
            conn = self.children.pop(pid, None)
            if conn is None:
                continue
            if os.WIFSIGNALED(status):
                how = line(signal=os.WTERMSIG(status))
            else:
                how = line(exit=os.waitstatus_to_exitcode(status))
            with contextlib.suppress(OSError):
                conn.sendall(how)
            conn.close()
            self.last = time.monotonic()
            ended += 1
        return ended
