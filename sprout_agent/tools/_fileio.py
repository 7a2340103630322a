"""Blocking file I/O for the dev tools, always called from a worker thread (never the agent's event loop).

Only regular files are opened (a FIFO or a device would block or never end), reads are bounded in bytes
per line and in lines, and files are replaced atomically (temp file + rename) rather than rewritten.
"""

from __future__ import annotations

import os
import secrets
import stat
from contextlib import suppress
from typing import BinaryIO

from sprout_agent.tools._server import ToolError

CHUNK = 1024 * 1024
# O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer before fstat can refuse it.
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))  # fmt: skip


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


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


def read_line(f: BinaryIO, cap: int) -> tuple[bytes, int] | None:
    """The next line without its newline, cut at `cap` bytes, and its full length; None at the end.

    The part past `cap` is read in chunks and dropped, so one huge line never sits in memory."""
    head = f.readline(cap)
    if not head:
        return None
    if head.endswith(b"\n"):
        return head[:-1], len(head) - 1
    total = len(head)
    while len(head) == cap:
        chunk = f.readline(CHUNK)
        if not chunk:
            break
        if chunk.endswith(b"\n"):
            total += len(chunk) - 1
            break
        total += len(chunk)
    return head, total


def count_lines(f: BinaryIO) -> int:
    """Lines from the current position to the end (a last line without newline counts)."""
    count = 0
    last = b"\n"
    while chunk := f.read(CHUNK):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (last != b"\n")


def _temp_beside(path: str, mode: int) -> tuple[str, int]:
    directory, name = os.path.split(path)
    for _ in range(100):
        temp = os.path.join(directory, f".{name[:100]}.{secrets.token_hex(4)}.sprout-tmp")
        with suppress(FileExistsError):
            return temp, os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), mode)
    raise ToolError(f"could not create a temporary file beside {path}")


def replace_file(path: str, data: bytes) -> None:
    """Give `path` the content `data` by renaming a new file over it, keeping its mode (and owner when allowed).

    A hard link to the old file (perhaps from outside the working directory) keeps the old content,
    and no reader ever sees half a file."""
    try:
        old: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        old = None
    temp, fd = _temp_beside(path, 0o666 if old is None else 0o600)  # 0o666: the umask decides, as for open()
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
        os.replace(temp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp)
        raise
