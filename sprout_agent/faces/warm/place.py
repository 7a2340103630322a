"""Where the warm interpreter listens, which runs may use it, and which peers each side accepts.

Both sides compute the same fingerprint of everything that decides what a run imports and how Python set
itself up (the interpreter, its flags, the locale and `PYTHON*` variables, the import path, our package's
files): the socket's name carries it, so a run only ever reaches a zygote that would import what it would
itself, and an upgrade or an edit of the code simply leaves the old zygote to idle out.

Who may connect: the socket (a path, not an abstract name, which any user of the network namespace could
take first) sits in a directory only the user can enter (trust/runtime_dir.py; refused when it is not ours or
others may enter it), which bubblewrap hides from sandboxed commands. Each side checks the other through the
kernel, on the process that connected (SO_PEERCRED, then SO_PEERPIDFD against a reused pid): the same user,
credentials and confinement (inherited.MATCHED). That check is what keeps a command under Landlock out: Landlock
does not confine connecting to a Unix socket by its path, and the command could otherwise ask the unconfined
zygote for a run with a config of its choosing. A peer that fails a check gets nothing, and the run goes cold.
"""

from __future__ import annotations

import errno
import hashlib
import os
import signal
import socket
import struct
import sys
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from sprout_agent.faces.warm import inherited
from sprout_agent.trust.env_flags import env_flag
from sprout_agent.trust.runtime_dir import private, runtime_directory
from sprout_agent.trust.secrecy import environment_block

SWITCH = "SPROUT_AGENT_WARM"  # a switch, on by default (trust/env_flags.py): off means never
IDLE = "SPROUT_AGENT_WARM_IDLE_SECONDS"
IDLE_DEFAULT = 600.0
NO_WARM = "--no-warm"
# The subcommands (faces/cli/app.py) and the flags that answer at once: none of them is a session. A test holds
# the list to the Typer app.
SUBCOMMANDS = frozenset({"mcp", "hooks", "batch", "sessions", "acp", "doctor", "replay"})
_ANSWERS_AT_ONCE = frozenset({"--help", "-h", "--version"})
SO_PEERPIDFD = getattr(socket, "SO_PEERPIDFD", 77)  # Linux 6.5+; named in Python's socket module from 3.13


def wanted(args: Sequence[str], env: Mapping[str, str], stdin_is_terminal: bool) -> bool:
    """A run that goes to completion (`-p`, or a prompt on a pipe), not a subcommand, and not switched off."""
    if not env_flag(env, SWITCH, default=True) or not sys.platform.startswith("linux"):
        return False
    words = set(args)
    if NO_WARM in words or words & SUBCOMMANDS or words & _ANSWERS_AT_ONCE:
        return False
    return "-p" in words or "--print" in words or not stdin_is_terminal


def idle_seconds(env: Mapping[str, str]) -> float:
    try:
        seconds = float(env.get(IDLE, "") or IDLE_DEFAULT)
    except ValueError:
        return IDLE_DEFAULT
    return seconds if seconds > 0 else IDLE_DEFAULT


def fingerprint(import_path: Sequence[str]) -> str:
    """What must be equal for a zygote to stand in for this interpreter. `import_path` is `sys.path` without the
    entry Python put first for the way it was started (the zygote starts with -P, which puts none)."""
    import sprout_agent

    package = Path(sprout_agent.__file__).parent
    parts: list[object] = [
        os.getuid(),
        os.path.realpath(sys.executable),
        sys.version,
        (sys.flags.optimize, sys.flags.utf8_mode, sys.flags.dev_mode, sys.flags.isolated, sys.flags.no_user_site),
        sorted((k, v) for k, v in startup_environment(os.environ).items() if k.startswith("PYTHON")),
        _text_settings(),
        str(package),
        _newest(package),
        [(entry, _mtime(entry)) for entry in import_path],
    ]
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:20]


def _text_settings() -> tuple[str, ...]:
    """How Python set itself up for text: the C locale it chose (after any coercion of a C locale, which also
    adds LC_CTYPE to os.environ, so a run started by one with that in its environment ends up the same) and the
    encodings that follow from it."""
    import locale

    return (locale.setlocale(locale.LC_CTYPE), sys.getfilesystemencoding(), locale.getpreferredencoding(False))


def startup_environment(fallback: Mapping[str, str]) -> dict[str, str]:
    """The environment this process was started with (its environment block, credentials scrubbed by
    trust/secrecy.harden), before Python coerced the locale into os.environ; `fallback` where it cannot be read.
    Not /proc/self/environ: a non-dumpable process that is not root may not open its own (the kernel hands the
    file to root), and every process of ours is non-dumpable from its first instruction."""
    raw = environment_block()
    if raw is None:
        return dict(fallback)
    pairs = (entry.partition(b"=") for entry in raw.split(b"\0") if entry)
    return {os.fsdecode(name): os.fsdecode(value) for name, _, value in pairs}


def _mtime(path: str) -> int:
    try:
        return os.stat(path or ".").st_mtime_ns  # a site-packages directory changes when a package comes or goes
    except OSError:
        return 0


def _newest(package: Path) -> tuple[int, int]:
    """The newest modification time of our modules and how many there are: an edit or an upgrade shows."""
    newest, count, stack = 0, 0, [str(package)]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                    stack.append(entry.path)
                elif entry.name.endswith(".py"):
                    newest, count = max(newest, entry.stat().st_mtime_ns), count + 1
    return newest, count


def directory(env: Mapping[str, str]) -> Path | None:
    """The user's private directory for the socket (trust/runtime_dir.py: the sandbox hides the same one),
    created if missing; None when it is not safely ours."""
    base = runtime_directory(env)
    try:
        base.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    return base if private(base) else None


def socket_path(base: Path, print_: str) -> Path:
    return base / f"w-{print_}.sock"


@contextmanager
def address(path: Path) -> Generator[str]:
    """An address for the socket at `path` that fits a Unix socket's 108 bytes however deep `path` is: through
    a descriptor of its directory (/proc/self/fd/N/name), which binds and connects the same file."""
    fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def lock_path(base: Path, print_: str) -> Path:
    return base / f"w-{print_}.lock"


def peer_is_like_us(conn: socket.socket) -> bool:
    """The process at the other end runs as us, with our credentials, under no confinement we are not under
    (inherited.MATCHED), checked on that very process: never on one that took its pid since it connected."""
    try:
        raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, uid, _gid = struct.unpack("3i", raw)
    except OSError:
        return False
    if uid != os.getuid() or pid <= 0:
        return False
    ours = _own_standing()
    if ours is None or inherited.confined(ours):
        return False
    with _the_peer(conn, pid) as proc:
        if proc is None:
            return False
        theirs, their_spaces = inherited.standing(proc), inherited.namespaces(proc)
    # Namespaces only where the kernel shows them (a non-dumpable peer hides them): the child compares the ones
    # the request states, and a peer that hides and lies gains nothing the standing does not refuse already.
    spaces = zip(inherited.namespaces(None), their_spaces, strict=True)
    return theirs == ours and all(seen is None or mine == seen for mine, seen in spaces)


@contextmanager
def _the_peer(conn: socket.socket, pid: int) -> Generator[int | None]:
    """A descriptor of /proc/<pid> that is the directory of the process that made the connection, or None.

    The pid alone could name another process by now (the peer exited, a new process took its number): the
    directory is opened first, then the process the kernel keeps with the connection (SO_PEERPIDFD, Linux 6.5+)
    is found alive, so the number was still its own when the directory was opened, and reads through a /proc
    directory never reach a later process of the same number. Before Linux 6.5, the pid is all there is."""
    try:
        proc = os.open(f"/proc/{pid}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        yield None
        return
    try:
        yield proc if _still_there(conn) else None
    finally:
        os.close(proc)


def _still_there(conn: socket.socket) -> bool:
    try:
        pidfd = conn.getsockopt(socket.SOL_SOCKET, SO_PEERPIDFD)
    except OSError as error:
        return error.errno in (errno.ENOPROTOOPT, errno.EOPNOTSUPP)  # a kernel without it: the pid, unchecked
    try:
        signal.pidfd_send_signal(pidfd, 0)  # no signal: only whether the process is still there
    except OSError:
        return False
    finally:
        os.close(pidfd)
    return True


def _own_standing() -> dict[str, str] | None:
    try:
        proc = os.open("/proc/self", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None  # no /proc: nothing can be checked, so nothing is warm
    try:
        return inherited.standing(proc)
    finally:
        os.close(proc)


def no_new_privs() -> bool:
    """This process runs with no_new_privs, as every sandboxed command does (Landlock needs it, bubblewrap sets
    it), and as a container or a service started with no-new-privileges does. No warm interpreter then:
    Landlock shows nowhere in /proc, so a command confined by it would look like any other process of such a
    run and could ask the zygote, which is not confined, for a session of its choosing."""
    ours = _own_standing()
    return ours is None or inherited.confined(ours)
