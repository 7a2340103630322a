"""The sandbox where bubblewrap cannot run (not installed, no user namespaces: a fresh Debian, a container):
Landlock, which an unprivileged process applies to itself (Linux 5.13+, ABI 1; TCP rules from ABI 4, signal
and abstract-socket scoping from ABI 6).

A command starts as `python -I -S -c <this file> SPEC -- bash -c …`: the launcher restricts itself and execs
the command, which inherits the domain (~10 ms, against bwrap's 8; anyio cannot run a preexec function).
The interpreter is the agent's own, resolved, and never one inside a writable root; the code is passed
inline, so nothing a command can write decides how the next one is confined.

What it enforces: writes only in the writable roots, the temp directory and a few devices (/dev/null, …); no
device nodes made, no ioctl on devices (ABI 5+: TIOCSTI); with the network off, no TCP connect or bind (ABI
4+); no signals to, or abstract sockets of, processes outside (ABI 6+). What it cannot (docs/security.md):
Landlock only adds rights, so a git directory inside a root stays writable; the read deny list is not
enforced for commands; unix sockets with a path (an ssh agent, a session bus, docker) stay reachable; UDP
stays open; no private /tmp or pid namespace; root keeps its capabilities. Stdlib only: this file also runs
as a bare script.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import struct
import sys

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same number on every architecture
_VERSION = 1  # LANDLOCK_CREATE_RULESET_VERSION
_PATH_BENEATH, _NET_PORT = 1, 2
_PR_SET_NO_NEW_PRIVS = 38
# Filesystem rights by ABI; reading and executing are never handled (commands may read and run anything).
_WRITE_FILE, _TRUNCATE, _IOCTL_DEV = 1 << 1, 1 << 14, 1 << 15
_MAKE_DEVICES = (1 << 6) | (1 << 11)  # make_char, make_block: handled, granted nowhere (root could mknod a disk)
# ABI 1: write, remove and make-*; 2: refer; 3: truncate; 5: ioctl on devices (handled, granted nowhere: TIOCSTI
# into another terminal, as root, would type commands there).
_FS_BY_ABI = {1: 0b1_1111_1111_0010, 2: 1 << 13, 3: _TRUNCATE, 5: _IOCTL_DEV}
_NET_TCP = 0b11  # bind, connect
_SCOPE = 0b11  # abstract unix sockets, signals
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
DEVICE_DIRS = ("/dev/shm",)  # not /dev/pts or /dev/tty: another terminal is not the command's to write


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


@functools.cache
def abi() -> int:
    """The kernel's Landlock ABI version; 0 when it has none (or it is disabled)."""
    if not sys.platform.startswith("linux"):
        return 0
    version = _libc().syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_VERSION))
    return max(version, 0)


def _check(result: int, what: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"landlock {what}: {os.strerror(errno)}")
    return result


def restrict(writable: list[str], network: bool, version: int) -> None:
    """Confine this process (and what it execs) to writing `writable` and the devices, from now on."""
    libc = _libc()
    fs = sum(bits for level, bits in _FS_BY_ABI.items() if level <= version)
    net = 0 if network or version < 4 else _NET_TCP
    scoped = _SCOPE if version >= 6 else 0
    attr = struct.pack("=QQQ", fs, net, scoped)[: 8 if version < 4 else 16 if version < 6 else 24]
    buffer = ctypes.create_string_buffer(attr, len(attr))
    ruleset = _check(libc.syscall(_CREATE_RULESET, buffer, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)), "ruleset")
    try:
        directory = fs & ~(_MAKE_DEVICES | _IOCTL_DEV)
        rules = [(p, directory) for p in (*writable, *DEVICE_DIRS)]
        rules += [(p, (_WRITE_FILE | _TRUNCATE) & fs) for p in DEVICES]
        for path, access in rules:
            _allow(libc, ruleset, path, access)
        _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        _check(libc.syscall(_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)), "restrict_self")
    finally:
        os.close(ruleset)


def _allow(libc: ctypes.CDLL, ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:  # absent here (no /dev/tty in a container): nothing to allow
        return
    try:
        rule = ctypes.create_string_buffer(struct.pack("=Qi", access, fd), 12)
        _check(libc.syscall(_ADD_RULE, ruleset, ctypes.c_uint(_PATH_BENEATH), rule, ctypes.c_uint32(0)), path)
    finally:
        os.close(fd)


def launcher(writable: tuple[str, ...], network: bool) -> list[str]:
    """The program and options that run a command confined: the command follows after `--`
    (child_argv.with_operands), where `_main` finds it."""
    spec = json.dumps({"writable": list(writable), "network": network, "abi": abi()})
    return [interpreter(), "-I", "-S", "-c", _source(), spec]


def interpreter() -> str:
    return os.path.realpath(sys.executable)


@functools.cache
def _source() -> str:
    with open(__file__, encoding="utf-8") as f:  # read once, before any command could write anything
        return f.read()


def _main(argv: list[str]) -> None:
    spec = json.loads(argv[1])
    command = argv[3:]  # after "--"
    try:
        restrict(spec["writable"], spec["network"], spec["abi"])
    except OSError as exc:
        print(f"sandbox (landlock): {exc}; the command did not run", file=sys.stderr)
        os._exit(126)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"sandbox (landlock): cannot run {command[0]}: {exc}", file=sys.stderr)
        os._exit(127)


if __name__ == "__main__":
    _main(sys.argv)
