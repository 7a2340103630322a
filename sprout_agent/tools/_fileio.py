"""Blocking file I/O for the dev tools, always called from a worker thread (never the agent's event loop).

Only regular files are opened (a FIFO or a device would block or never end), reads are bounded in bytes
per line and in lines, and files are replaced atomically (temp file + rename) rather than rewritten, in a
directory reached from a writable root one name at a time without following symlinks: the path the write
policy checked is the one written, even if a command swaps a directory for a symlink in between.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from contextlib import suppress
from typing import BinaryIO

from sprout_agent.tools._server import ToolError
from sprout_agent.trust.workspace import kind_of

# O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer before fstat can refuse it.
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)


def open_regular(path: str, shown: str | None = None) -> BinaryIO:
    """`path` opened for reading, or a ToolError when it is not a regular file.

    fstat on the open descriptor, not stat on the name, so a file swapped for a FIFO in between
    cannot slip through."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ToolError(f"{shown or path} is {kind_of(mode)}, not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)


def _step(fd: int, name: str, shown: str) -> int:
    """The directory `name` inside `fd` (created if missing), never through a symlink; closes `fd`."""
    try:
        try:
            return os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
        except FileNotFoundError:
            with suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=fd)
            return os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise ToolError(
                f"{shown}: {name} on the way is a symlink or not a directory (it changed since the "
                "path was checked); nothing was written"
            ) from None
        raise
    finally:
        os.close(fd)


def parent_directory(path: str, start: str) -> int:
    """A descriptor of `path`'s directory, walked down from `start` (a writable root above it), creating
    missing directories as `os.makedirs` would."""
    relative = os.path.relpath(os.path.dirname(path), start)
    fd = os.open(start, _DIR_FLAGS)
    for name in [] if relative == os.curdir else relative.split(os.sep):
        fd = _step(fd, name, path)
    return fd


def _temp_beside(directory: int, name: str, mode: int) -> tuple[str, int]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        temp = f".{name[:100]}.{secrets.token_hex(4)}.sprout-tmp"
        with suppress(FileExistsError):
            return temp, os.open(temp, flags, mode, dir_fd=directory)
    raise ToolError(f"could not create a temporary file beside {name}")


def replace_file(path: str, data: bytes, start: str) -> None:
    """Give `path` the content `data` by renaming a new file over it, keeping its mode (and owner when allowed);
    `start` is the writable root the directory is walked down from (`parent_directory`).

    A hard link to the old file (perhaps from outside the working directory) keeps the old content,
    and no reader ever sees half a file."""
    directory = parent_directory(path, start)
    name = os.path.basename(path)
    try:
        _replace_in(directory, name, data, path)
    finally:
        os.close(directory)


def _replace_in(directory: int, name: str, data: bytes, shown: str) -> None:
    try:
        old: os.stat_result | None = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        old = None
    if old is not None and not stat.S_ISREG(old.st_mode):  # a symlink now, where the checked path had none
        raise ToolError(f"{shown} is {kind_of(old.st_mode)} now, not a regular file; nothing was written")
    temp, fd = _temp_beside(directory, name, 0o666 if old is None else 0o600)  # 0o666: the umask decides
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if old is not None:
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
