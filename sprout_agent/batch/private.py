"""What a batch writes, only its user can steer or read: a directory is used only when this user owns it, nobody
else can write it or rename it away, and it is no link; every name in it is opened, made and deleted relative to
its descriptor without following a link; files are 0600 in 0700 directories, as the session store's
(trust/private_files.py's modes), written whole by the one writer (trust/opening.py) (docs/security.md, "Batch
output")."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from pathlib import Path
from types import TracebackType

from sprout_agent.trust.opening import replace_in
from sprout_agent.trust.private_files import DIR_MODE, FILE_MODE

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Unsafe(OSError):
    """A place another user could steer, or a link where a directory or file of ours belongs: refused, and nothing
    was read, written or deleted there."""


class PrivateDir:
    """An open directory of this user's that nobody else can write. Close it (or use `with`)."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd, self.path = fd, path

    @classmethod
    def open(cls, path: Path, *, create: bool = True) -> PrivateDir:
        """`path` made 0700 if missing (its parents as any directory), or checked and tightened to 0700 if it
        exists; Unsafe when it is a link, not this user's, writable by others, or inside a directory another
        user could rename it out of."""
        where = Path(os.path.abspath(path))
        if not where.name:
            raise Unsafe(f"{where} is not a directory of its own")
        parent = where.parent.resolve()  # the links above it are the user's own path: resolved once, here
        if create:
            parent.mkdir(parents=True, exist_ok=True)
        _check_ancestors(parent)
        parent_fd = os.open(parent, _DIR & ~os.O_NOFOLLOW)
        try:
            return cls(_open_dir(parent_fd, where.name, parent / where.name, create), parent / where.name)
        finally:
            os.close(parent_fd)

    def sub(self, name: str) -> PrivateDir:
        """The directory `name` in this one, made or checked as `open` does."""
        return PrivateDir(_open_dir(self.fd, _one(name), self.path / name, True), self.path / name)

    def write(self, name: str, data: str | bytes) -> None:
        """`name` replaced whole by `data`: a new 0600 file renamed over it (a link there is replaced, never
        followed; a reader sees the old file or the new one)."""
        write_at(self.fd, name, data)

    def append(self, name: str, text: str) -> None:
        """`text` appended to `name` (made 0600) and flushed to the disk."""
        fd = self._open_file(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            _write_all(fd, text.encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def lock_file(self, name: str) -> int:
        """A descriptor on `name` (made 0600, never truncated), for flock; the caller closes it."""
        return self._open_file(name, os.O_RDWR | os.O_CREAT)

    def _open_file(self, name: str, flags: int) -> int:
        """`name` opened without following a link, made 0600 if new; Unsafe unless it is a file of this user's
        (tightened to 0600: an older results.jsonl, resumed)."""
        try:
            fd = os.open(_one(name), flags | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE, dir_fd=self.fd)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise Unsafe(f"{self.path / name} is a symbolic link") from None
            raise
        try:
            _own_file(fd, self.path / name)
        except OSError:
            os.close(fd)
            raise
        return fd

    def read_text(self, name: str) -> str | None:
        """`name`'s text, None when it does not exist; a link there is refused."""
        try:
            fd = os.open(_one(name), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.fd)
        except FileNotFoundError:
            return None
        with os.fdopen(fd, "rb") as handle:
            return handle.read().decode("utf-8", errors="replace")

    def make_dir(self, name: str) -> None:
        os.mkdir(_one(name), DIR_MODE, dir_fd=self.fd)

    def remove(self, name: str) -> None:
        """`name` gone, whatever it is: a directory's tree deleted without following any link in it (a link is
        removed, not what it names)."""
        try:
            info = os.lstat(_one(name), dir_fd=self.fd)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(name, dir_fd=self.fd)
        elif not shutil.rmtree.avoids_symlink_attacks:  # pragma: no cover - Linux has openat and friends
            raise Unsafe(f"{self.path / name}: this system cannot delete a tree without following its links")
        else:
            shutil.rmtree(name, dir_fd=self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> PrivateDir:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def write_file(path: Path, data: str | bytes) -> None:
    """A file the user named (an exported page): 0600, renamed over `path` (a link there is replaced, never
    followed, and a file another user owns in a shared directory is not written into)."""
    parent_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        write_at(parent_fd, path.name, data)
    finally:
        os.close(parent_fd)


def write_at(dir_fd: int, name: str, data: str | bytes) -> None:
    """`name` in the directory replaced whole, 0600, by the one writer (trust/opening.replace_in)."""
    replace_in(dir_fd, _one(name), data.encode() if isinstance(data, str) else data, FILE_MODE)


def _one(name: str) -> str:
    """A name in the directory, never a path through others (whose links a relative open would follow)."""
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"not a name in a directory: {name!r}")
    return name


def _open_dir(dir_fd: int, name: str, shown: Path, create: bool) -> int:
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, DIR_MODE, dir_fd=dir_fd)
    try:
        fd = os.open(name, _DIR, dir_fd=dir_fd)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            link = stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
            raise Unsafe(f"{shown} is {'a symbolic link' if link else 'not a directory'}") from None
        raise
    try:
        info = os.fstat(fd)
        _refuse_others(info, shown)
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(fd, DIR_MODE)  # one an older version made 0755 (its files 0644 go dark with it)
    except OSError:
        os.close(fd)
        raise
    return fd


def _refuse_others(info: os.stat_result, shown: Path) -> None:
    if info.st_uid != os.geteuid():
        raise Unsafe(f"{shown} belongs to another user (uid {info.st_uid}): use a directory of your own")
    if info.st_mode & 0o022:
        mode = oct(stat.S_IMODE(info.st_mode))
        raise Unsafe(f"{shown} can be written by other users (mode {mode}): use a directory only you can write")


def _check_ancestors(parent: Path) -> None:
    """Whoever can rename entries of a directory above ours can swap ours for theirs between our check and a
    later use by path (git, a task's --cwd): each must be this user's or root's, and writable by nobody else
    unless sticky (/tmp)."""
    for directory in (parent, *parent.parents):
        info = os.stat(directory)
        if info.st_uid not in (0, os.geteuid()):
            raise Unsafe(f"{directory} belongs to another user (uid {info.st_uid}), who could replace what is in it")
        if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
            mode = oct(stat.S_IMODE(info.st_mode))
            raise Unsafe(f"{directory} can be written by other users (mode {mode}), who could replace what is in it")


def _own_file(fd: int, shown: Path) -> None:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise Unsafe(f"{shown} is not a regular file")
    if info.st_uid != os.geteuid():
        raise Unsafe(f"{shown} belongs to another user (uid {info.st_uid})")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.fchmod(fd, FILE_MODE)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
