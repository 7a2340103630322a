"""Where the warm interpreter listens, which runs may use it, and which peers each side accepts.

Both sides compute the same fingerprint of everything that decides what a run imports and how Python set
itself up (the interpreter, its flags, the locale and `PYTHON*` variables, the import path, our package's
files): the socket's name carries it, so a run only ever reaches a zygote that would import what it would
itself, and an upgrade or an edit of the code simply leaves the old zygote to idle out.

Who may connect: the socket sits in a directory only the user can enter (`$XDG_RUNTIME_DIR/sprout-agent`, else
`sprout-agent-<uid>` in the temp directory; refused when it is not ours or others may enter it), and each side
checks the other through the kernel (SO_PEERCRED, and descriptors of its namespaces the peer sends): the same user,
the same namespaces and no confinement the other lacks (`NoNewPrivs`, seccomp). That last check is what keeps a
sandboxed command out: Landlock does not confine connecting to a Unix socket, and a command under it could
otherwise ask the unconfined zygote for a run with a config of its choosing. A peer that fails a check gets
nothing, and the run goes cold.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import struct
import sys
import tempfile
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from sprout_agent.trust.secrecy import environment_block

SWITCH = "SPROUT_AGENT_WARM"  # 0, off, false or no: never
IDLE = "SPROUT_AGENT_WARM_IDLE_SECONDS"
IDLE_DEFAULT = 600.0
NO_WARM = "--no-warm"
# The subcommands (faces/cli/app.py) and the flags that answer at once: none of them is a session. A test holds
# the list to the Typer app.
SUBCOMMANDS = frozenset({"mcp", "hooks", "batch", "sessions", "acp"})
_ANSWERS_AT_ONCE = frozenset({"--help", "-h", "--version"})
_OFF = frozenset({"0", "off", "false", "no"})
_NAMESPACES = ("mnt", "pid", "user", "net", "ipc", "uts", "cgroup")


def wanted(args: Sequence[str], env: Mapping[str, str], stdin_is_terminal: bool) -> bool:
    """A run that goes to completion (`-p`, or a prompt on a pipe), not a subcommand, and not switched off."""
    if env.get(SWITCH, "").strip().lower() in _OFF or not sys.platform.startswith("linux"):
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
    trust/secrecy.harden), before Python coerced the locale into os.environ; `fallback` where it cannot be read."""
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
    """The user's private directory for the socket, created if missing; None when it is not safely ours."""
    runtime = env.get("XDG_RUNTIME_DIR", "")
    base = Path(runtime) / "sprout-agent" if runtime.startswith("/") and _private(Path(runtime)) else None
    if base is None:
        base = Path(tempfile.gettempdir()) / f"sprout-agent-{os.getuid()}"
    try:
        base.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    return base if _private(base) else None


def _private(path: Path) -> bool:
    """A real directory (not a link), ours, that nobody else may enter or write."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    import stat

    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and info.st_mode & 0o077 == 0


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
    """The process at the other end runs as us, under no confinement we are not under. That it is in our
    namespaces is for its descriptors to show (`same_namespaces`): both sides are non-dumpable
    (trust/secrecy.harden), and /proc/<pid>/ns of such a process is closed to all but root."""
    try:
        raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, uid, _gid = struct.unpack("3i", raw)
    except OSError:
        return False
    if uid != os.getuid() or pid <= 0:  # 0: a pid namespace we cannot see into
        return False
    ours = confinement(os.getpid())
    return ours is not None and ours[0] == "0" and confinement(pid) == ours


def no_new_privs() -> bool:
    """This process runs with no_new_privs, as every Landlock-confined process does, and as a container or a
    service started with no-new-privileges does. No warm interpreter then: Landlock shows nowhere in /proc, so a
    command confined by it would look like any other process of such a run and could ask the zygote, which is
    not confined, for a session of its choosing."""
    status = confinement(os.getpid())
    return status is None or status[0] != "0"


def confinement(pid: int) -> tuple[str, ...] | None:
    """The confinement flags a process runs under (NoNewPrivs, Seccomp, Seccomp_filters: /proc/<pid>/status is
    open to all, non-dumpable or not); None when they cannot be read."""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as status:
            flags = tuple(
                line.split()[1] for line in status if line.startswith(("NoNewPrivs:", "Seccomp:", "Seccomp_filters:"))
            )
    except (OSError, IndexError):
        return None
    return flags or None


def namespace_proof() -> list[int]:
    """Descriptors of this process's namespaces (mount, pid, user, network, IPC, UTS, cgroup), sent to the peer
    with the request or the `ready` for `same_namespaces`; empty when one cannot be opened."""
    fds: list[int] = []
    try:
        for name in _NAMESPACES:
            fds.append(os.open(f"/proc/self/ns/{name}", os.O_RDONLY | os.O_CLOEXEC))
    except OSError:
        close_all(fds)
        return []
    return fds


def same_namespaces(fds: Sequence[int]) -> bool:
    """The peer's descriptors (`namespace_proof`) are our namespaces, one by one: the kernel gave them to a
    process that was in them, or that could read /proc/<pid>/ns of one that was (a process of ours in another
    namespace cannot: a user namespace keeps it from ptrace access to us). Closes them."""
    try:
        if len(fds) != len(_NAMESPACES):
            return False
        for name, fd in zip(_NAMESPACES, fds, strict=True):
            theirs, ours = os.fstat(fd), os.stat(f"/proc/self/ns/{name}")
            if (theirs.st_dev, theirs.st_ino) != (ours.st_dev, ours.st_ino):
                return False
        return True
    except OSError:
        return False
    finally:
        close_all(fds)


def close_all(fds: Sequence[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
