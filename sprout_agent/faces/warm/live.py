"""The warm interpreters alive in the runtime directory, found by their locks: what `sprout-agent doctor` lists and
stops, and the files of dead ones (w-*.lock, w-*.log, sockets) removed, so the directory holds only the living's.

Each zygote holds `w-<fingerprint>.lock` for its whole life and writes its pid there. Files are only ever named
through a descriptor of the directory, after checking it is ours and private, never through a link, and only
names of ours (`NAME`); a group's lock taken by us is the proof that nobody serves it any more.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import signal
import stat
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

from sprout_agent.faces.warm.title import WARM_COMM

NAME = re.compile(r"w-([0-9a-f]{20})\.(lock|log|sock(?:\.[0-9]+)?)\Z")  # what place.py and zygote.py name
STARTING_S = 60.0  # a group whose log is younger may be a zygote starting (its lock is free for a moment)
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class Interpreter:
    pid: int
    fingerprint: str
    age_s: float  # since it started
    memory_bytes: int | None  # resident (shared with its runs, which it forked)
    runs: int  # in flight: its children


def claim(lock: int) -> None:
    """The zygote, holding its lock, writes its pid there for `interpreters` to find."""
    with contextlib.suppress(OSError):
        os.ftruncate(lock, 0)
        os.pwrite(lock, f"{os.getpid()}\n".encode(), 0)


def interpreters(base: Path) -> list[Interpreter]:
    """The warm interpreters serving `base`, oldest first; locks are only read, never taken."""
    found: dict[int, Interpreter] = {}
    with _directory(base) as fd:
        for print_, names in _groups(fd).items():
            pid = _holder(fd, f"w-{print_}.lock") if f"w-{print_}.lock" in names else None
            if pid is not None and pid not in found:
                found[pid] = Interpreter(pid, print_, _age(pid), _memory(pid), len(_children(pid)))
    return sorted(found.values(), key=lambda one: -one.age_s)


def stop(pid: int) -> bool:
    """Asks one to leave (SIGTERM: no new runs, it goes once those in flight end); False if it was not one."""
    try:
        handle = os.pidfd_open(pid)
    except OSError:
        return False
    try:
        if not _is_warm(pid):  # checked after the pidfd is open: the signal cannot reach a later owner of the pid
            return False
        signal.pidfd_send_signal(handle, signal.SIGTERM)
        return True
    except OSError:
        return False
    finally:
        os.close(handle)


def clear_dead(base: Path, keep: str) -> list[str]:
    """Removes the files of every fingerprint but `keep` that no zygote serves (its lock is free) and none is
    starting; returns the names removed."""
    removed: list[str] = []
    with _directory(base) as fd:
        now = time.time()
        for print_, names in _groups(fd).items():
            if print_ == keep or _young(fd, f"w-{print_}.log", now):
                continue
            removed += _remove_if_unserved(fd, print_, names)
    return removed


def forget(base: Path, print_: str) -> None:
    """A zygote leaving, while it still holds its lock: its log and lock go (its socket went as it stopped)."""
    with contextlib.suppress(OSError), _directory(base) as fd:
        for name in (f"w-{print_}.log", f"w-{print_}.lock"):
            _unlink(fd, name)


@contextlib.contextmanager
def _directory(base: Path) -> Generator[int]:
    """A descriptor of `base` if it is a real directory of ours that nobody else may enter; else OSError."""
    fd = os.open(base, _OPEN_DIR)
    try:
        info = os.fstat(fd)
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise PermissionError(f"{base} is not private")
        yield fd
    finally:
        os.close(fd)


def _groups(fd: int) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for name in os.listdir(fd):
        if match := NAME.match(name):
            groups.setdefault(match.group(1), []).append(name)
    return groups


def _remove_if_unserved(fd: int, print_: str, names: list[str]) -> list[str]:
    lock_name = f"w-{print_}.lock"
    try:
        lock = os.open(lock_name, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=fd)
    except FileNotFoundError:
        lock = None  # files without a lock: nobody serves them
    except OSError:
        return []  # a link or something else in our place: left alone
    try:
        if lock is not None:
            if not stat.S_ISREG(os.fstat(lock).st_mode):
                return []
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: alive (OSError below)
        others = sorted(name for name in names if name != lock_name)
        removed = [name for name in [*others, lock_name] if name in names and _unlink(fd, name)]
        return removed  # the lock last, while we hold it
    except OSError:
        return []
    finally:
        if lock is not None:
            os.close(lock)


def _unlink(fd: int, name: str) -> bool:
    try:
        os.unlink(name, dir_fd=fd)  # removes a link itself, never what it names
    except OSError:
        return False
    return True


def _young(fd: int, name: str, now: float) -> bool:
    try:
        return now - os.stat(name, dir_fd=fd, follow_symlinks=False).st_mtime < STARTING_S
    except OSError:
        return False


def _holder(fd: int, lock_name: str) -> int | None:
    """The pid the lock's zygote wrote, if that process is alive, ours and a warm interpreter."""
    try:
        handle = os.open(lock_name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=fd)
    except OSError:
        return None
    try:
        text = os.read(handle, 32).decode("ascii", "replace").strip()
    except OSError:
        return None
    finally:
        os.close(handle)
    pid = int(text) if text.isdigit() else 0
    return pid if pid > 0 and _is_warm(pid) else None


def _is_warm(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/comm", "rb") as comm:
            name = comm.read().decode("utf-8", "replace").strip()
        owner = os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return False
    return name == WARM_COMM and owner == os.getuid()


def _age(pid: int) -> float:
    """Seconds since the process started (/proc/PID/stat's starttime against the system's uptime)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        with open("/proc/uptime", "rb") as handle:
            uptime = float(handle.read().split()[0])
    except (OSError, IndexError, ValueError):
        return 0.0
    return max(0.0, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))


def _memory(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for row in handle:
                if row.startswith(b"VmRSS:"):
                    return int(row.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        return None
    return None


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as handle:
            return [int(child) for child in handle.read().split()]
    except (OSError, ValueError):
        return []
