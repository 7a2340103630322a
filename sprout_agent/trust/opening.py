"""The one way the agent opens a file for the model or a repository, and the one way it writes one: the path is
resolved once, then walked one name at a time from a directory descriptor without following a link, with the deny
list applied (and, for a write, the write policy), so a link swapped in after the check is refused, never followed.

Used by the dev tools' read, write, edit and grep, the skills, commands and agent definitions (a `Fixed` directory,
pinned at load), and the rewind's put-back. scripts/check_file_access.py fails on an open anywhere else but the
modules it lists as opening only the agent's own files. Stdlib only: no openat2 in Python 3.11's os (a ctypes
syscall would cost more to import than the walk costs: one open per directory on the way).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from typing import BinaryIO, Protocol

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer before fstat can refuse it.
_FILE = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))  # fmt: skip


class Refused(Exception):
    """A rule refused the operation; the message is for the model (the tools make it an is_error result)."""


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


class Swapped(Refused):
    """A link (or not a directory) where the checked path had a directory: a swap between the check and the open."""


def swapped(shown: str) -> Swapped:
    """The one refusal for a path that changed between its check and its open."""
    return Swapped(
        f"{shown}: the path changed after it was checked (a symbolic link or another directory is on its way now); "
        "refused: nothing was read or written through it"
    )


def under(path: str, parent: str) -> bool:
    """`path` is `parent` or lies inside it (both real, absolute)."""
    return path == parent or path.startswith(parent.rstrip("/") + "/")


@dataclass(frozen=True, slots=True)
class DenyList:
    """Real paths the model may not read (credentials, the agent's own data): the sandbox's deny list, applied to
    what the agent reads for it outside the sandbox as the sandbox's mounts apply it to commands."""

    paths: tuple[str, ...] = ()

    @classmethod
    def of(cls, paths: Iterable[str], root: str) -> DenyList:
        """`paths` but one holding the working directory `root` (commands start there; so may reads)."""
        return cls(tuple(p for p in paths if not under(root, p)))

    def covering(self, real: str, base: str = os.sep) -> str | None:
        """The denied path holding `real`, unless `base` (where the read starts) lies inside it too: a directory the
        user keeps inside a denied one (skills in the agent's own config) is read, never entered from outside."""
        return next((d for d in self.paths if under(real, d) and not under(base, d)), None)

    def check(self, real: str, base: str = os.sep) -> None:
        hidden = self.covering(real, base)
        if hidden is not None:
            raise Refused(f"{real} is hidden by the sandbox's deny list ({hidden}: credentials); ask the user")

    def below(self, base: str) -> list[str]:
        """The denied paths inside directory `base`, relative to it (searches leave them out)."""
        return [os.path.relpath(d, base) for d in self.paths if d != base and under(d, base)]


NOTHING_DENIED = DenyList()  # where the sandbox is off: bash reads anything, so may the tools


def _names(relative: str) -> list[str]:
    return [part for part in relative.split(os.sep) if part and part != os.curdir]


def descend(fd: int, names: Iterable[str], shown: str, *, create: bool = False) -> int:
    """The directory `names` lead to from descriptor `fd` (which this closes), one name at a time, never through a
    link; `create`: make what is missing, as `os.makedirs` would. The caller closes the result."""
    try:
        for name in names:
            inner = _step(fd, name, shown, create)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _step(fd: int, name: str, shown: str, create: bool) -> int:
    try:
        try:
            return os.open(name, _DIR, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                raise
            with suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=fd)
            return os.open(name, _DIR, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise swapped(shown) from None
        raise


def open_directory(real: str, shown: str | None = None, *, create: bool = False) -> int:
    """A descriptor of the resolved directory `real`, walked down from `/` without following a link."""
    return descend(os.open(os.sep, _DIR), _names(real), shown or real, create=create)


def open_in(directory: int, name: str, shown: str) -> BinaryIO:
    """The regular file `name` in `directory`, opened for reading without following a link (a FIFO never waits)."""
    try:
        fd = os.open(name, _FILE, dir_fd=directory)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise swapped(shown) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise Refused(f"{shown} is {kind_of(mode)}, not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def open_at(start: int, relative: str, shown: str) -> BinaryIO:
    """`relative` (no link, no `..`) opened from descriptor `start`, which stays open."""
    *folders, name = _names(relative)
    directory = descend(os.dup(start), folders, shown)
    try:
        return open_in(directory, name, shown)
    finally:
        os.close(directory)


@dataclass(frozen=True, slots=True)
class Reader:
    """Reads a path the model or a repository names: resolved once, the deny list checked on what it resolves to,
    then opened along exactly that path, so a directory swapped for a link in between is refused."""

    deny: DenyList = NOTHING_DENIED

    def resolve(self, path: str, cwd: str) -> str:
        """Absolute, link-free; relative paths are taken from `cwd`."""
        if not path:
            raise Refused("empty path")
        if "\0" in path:
            raise Refused("path contains a NUL byte")
        return os.path.realpath(os.path.join(cwd, os.path.expanduser(path)))

    def readable(self, path: str, cwd: str) -> str:
        """`resolve`, refusing what the deny list hides."""
        real = self.resolve(path, cwd)
        self.deny.check(real)
        return real

    def open_file(self, real: str, shown: str | None = None) -> BinaryIO:
        """The resolved file `real` (from `readable`), opened along that path only."""
        self.deny.check(real)
        if real == os.sep or not os.path.isabs(real):
            raise Refused(f"{shown or real} is not a file path")
        parent, name = os.path.split(real)
        directory = open_directory(parent, shown or real)
        try:
            return open_in(directory, name, shown or real)
        finally:
            os.close(directory)

    def read(self, path: str, cwd: str, limit: int) -> bytes:
        """Up to `limit` + 1 bytes of `path` (one more than the limit: the caller sees it was cut)."""
        with self.open_file(self.readable(path, cwd), path) as f:
            return f.read(limit + 1)


def peek(path: str, limit: int) -> bytes | None:
    """The first `limit` bytes of a small file the agent only parses to decide a rule and never shows (git's pointer
    files, config and index, which git itself reads through links): opened as git would, links followed, but never
    waiting on a FIFO and only when regular; None for anything else. One open: the write policy reads these before
    every command and write, where the reader's walk (an open per directory) would cost more than it guards."""
    try:
        fd = os.open(path, _FILE & ~os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        return os.read(fd, limit) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except OSError:
        return None
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class Fixed:
    """A directory pinned when it was found (a skill's, a place of commands or definitions): its real path and
    identity, checked at each use, so a directory swapped or linked elsewhere since is refused; files inside are
    read along their own resolved path, never out of it, the deny list applied."""

    real: str
    identity: tuple[int, int]  # (st_dev, st_ino)
    deny: DenyList = NOTHING_DENIED

    @classmethod
    def pin(cls, path: str, deny: DenyList = NOTHING_DENIED) -> Fixed:
        """`path` resolved once; OSError when it is not a directory."""
        real = os.path.realpath(path)
        fd = open_directory(real)
        try:
            info = os.fstat(fd)
        finally:
            os.close(fd)
        return cls(real, (info.st_dev, info.st_ino), deny)

    def descriptor(self) -> int:
        """The directory, opened and checked to be the one pinned; Refused otherwise. The caller closes it."""
        try:
            fd = open_directory(self.real)
        except FileNotFoundError:
            raise Refused(f"{self.real} is gone since it was loaded") from None
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != self.identity:
            os.close(fd)
            raise swapped(self.real)
        return fd

    def inside(self, relative: str) -> str:
        """`relative` resolved within the directory (`..`, an absolute path or a link out of it refused)."""
        if not relative or "\0" in relative or os.path.isabs(relative) or os.pardir in relative.split(os.sep):
            raise Refused(f"{relative!r}: give a path relative to {os.path.basename(self.real)}, without '..'")
        real = os.path.realpath(os.path.join(self.real, relative))
        if real == self.real:
            raise Refused(f"{relative!r} is the directory itself, not a file in it")
        if not under(real, self.real):  # neither absolute nor `..`: a link on the way leads out
            raise Refused(f"{relative!r} is a symbolic link out of {os.path.basename(self.real)}: not read")
        self.deny.check(real, self.real)
        return os.path.relpath(real, self.real)

    def open_file(self, relative: str) -> BinaryIO:
        directory = self.descriptor()  # first: a swapped directory is named as such, not as "leads out"
        try:
            return open_at(directory, self.inside(relative), relative)
        finally:
            os.close(directory)

    def read(self, relative: str, limit: int) -> bytes:
        """Up to `limit` + 1 bytes of the file (one more than the limit: the caller sees it was cut)."""
        with self.open_file(relative) as f:
            return f.read(limit + 1)

    def files(self, limit: int) -> list[str]:
        """Relative paths of the regular files below it, never through a link; at most `limit` (in the order found)."""
        found: list[str] = []
        directory = self.descriptor()
        try:
            for folder, _dirs, names, fd in os.fwalk(".", dir_fd=directory, follow_symlinks=False):
                for name in names:
                    with suppress(OSError):
                        if stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                            found.append(os.path.normpath(os.path.join(folder, name)))
                if len(found) >= limit:
                    break
        finally:
            os.close(directory)
        return found[:limit]


def _temp_beside(directory: int, name: str, mode: int, given: str | None) -> tuple[str, int]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    if given is not None:
        return given, os.open(given, flags, mode, dir_fd=directory)
    for _ in range(100):
        temp = f".{name[:50]}.{secrets.token_hex(4)}.sprout-tmp"  # within NAME_MAX, 4-byte characters too
        with suppress(FileExistsError):
            return temp, os.open(temp, flags, mode, dir_fd=directory)
    raise Refused(f"could not create a temporary file beside {name}")


class WritePolicyLike(Protocol):
    """What the writer needs of trust/write_policy.WritePolicy (which reads files through this module)."""

    @property
    def roots(self) -> tuple[str, ...]: ...

    def refusal(self, real: str) -> str | None: ...


@dataclass(frozen=True, slots=True)
class WriteTarget:
    """A resolved path the write policy allows, and the writable root the write walks down from. Made only by
    `checked`: a write without the policy's answer cannot be expressed."""

    real: str
    start: str

    @classmethod
    def checked(cls, real: str, policy: WritePolicyLike) -> WriteTarget:
        why = policy.refusal(real)
        if why is not None:
            raise Refused(f"refusing to write {real}: {why}")
        return cls(real, next((root for root in sorted(policy.roots, key=len) if under(real, root)), os.sep))


def parent_of(target: WriteTarget) -> int:
    """A descriptor of the target's directory, reached from its writable root one name at a time without following
    a link, made where missing (as `os.makedirs` would). The caller closes it."""
    relative = os.path.relpath(os.path.dirname(target.real), target.start)
    return descend(open_directory(target.start, target.real), _names(relative), target.real, create=True)


def write_file(target: WriteTarget, data: bytes) -> None:
    """Give the file `data` by renaming a new file over it, keeping its mode (and owner when allowed), in a directory
    reached from the writable root one name at a time without following a link (made when missing).

    A hard link to the old file (perhaps from outside the working directory) keeps the old content, and no reader
    ever sees half a file."""
    shown = target.real
    directory = parent_of(target)
    try:
        name = os.path.basename(target.real)
        try:
            old: os.stat_result | None = os.stat(name, dir_fd=directory, follow_symlinks=False)
        except FileNotFoundError:
            old = None
        if old is not None and not stat.S_ISREG(old.st_mode):  # a link now, where the checked path had none
            raise Refused(f"{shown} is {kind_of(old.st_mode)} now, not a regular file; nothing was written")
        replace_in(directory, name, data, old)
    finally:
        os.close(directory)


def replace_in(
    directory: int, name: str, data: bytes, old: os.stat_result | int | None, temp: str | None = None
) -> None:
    """`name` in `directory` replaced by a new file holding `data`: `old` is the file replaced (its mode and owner
    kept), or the mode for a new one (None: 0o666; the umask decides either way); `temp`: the temporary file's name
    (one that does not exist), else a fresh one."""
    fresh = 0o666 if old is None else old if isinstance(old, int) else 0o600
    temp, fd = _temp_beside(directory, name, fresh, temp)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if isinstance(old, os.stat_result):
                with suppress(PermissionError):
                    if (old.st_uid, old.st_gid) != (os.getuid(), os.getgid()):
                        os.fchown(f.fileno(), old.st_uid, old.st_gid)
                os.fchmod(f.fileno(), stat.S_IMODE(old.st_mode) & 0o777)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp, dir_fd=directory)
        raise
