"""The agent's own files that hold what a person typed or a server printed (transcripts, the servers' log, the
prompt history): 0600 in a 0700 directory, so another local user cannot read them where a home directory is
open to others (0755 is a common default). One place, used by the session store, the logs and the history."""

from __future__ import annotations

import os
import stat
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_directory(directory: Path) -> None:
    """`directory` made 0700 (its parents as any directory), or tightened when an older version made it 0755
    (which also hides what it wrote 0644)."""
    directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    info = os.stat(directory)
    if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(directory, DIR_MODE)


def open_private(path: Path, flags: int = os.O_WRONLY | os.O_APPEND) -> int:
    """A descriptor on `path` (made 0600 if new, tightened if an older version made it 0644), in a private
    directory; a link in its place is refused (ELOOP), never followed. The caller closes it."""
    private_directory(path.parent)
    fd = os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd
