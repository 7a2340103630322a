"""The submodule paths a repository's index records (its gitlinks), read from the index file itself.

Why not `.gitmodules` or git: `.gitmodules` is a work-tree file any command may rewrite, and git would read the
repository's config to answer. The index lives in the git directory, which the write policy keeps read-only, and
`git status` in the superproject visits exactly these paths. Formats 2, 3 and 4 (git's
Documentation/gitformat-index); parsed once per index version (its stat), since this runs before every command.
Stdlib only.
"""

from __future__ import annotations

import functools
import os
import stat
import struct

from sprout_agent.trust.opening import peek

_GITLINK = 0o160000
_MAX_INDEX_BYTES = 256 * 1024 * 1024  # larger than any real index: refused rather than read


def gitlinks(index: str) -> tuple[str, ...]:
    """The gitlink paths (relative, '/'-separated) in the index file at `index`; () when there is none."""
    try:
        st = os.stat(index)
    except OSError:
        return ()
    if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_INDEX_BYTES:
        return ()
    return _parse(index, st.st_mtime_ns, st.st_size, st.st_ino)


@functools.lru_cache(maxsize=16)
def _parse(index: str, mtime_ns: int, size: int, inode: int) -> tuple[str, ...]:
    data = peek(index, size)  # a FIFO swapped in since the stat never blocks
    try:
        return tuple(os.fsdecode(name) for name in _entries(data or b""))
    except (ValueError, struct.error):  # a torn or foreign file: no gitlinks rather than a failed command
        return ()


def _entries(data: bytes) -> list[bytes]:
    if data[:4] != b"DIRC":
        return []
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3, 4):
        return []
    found: list[bytes] = []
    position, previous = 12, b""
    for _ in range(count):
        mode = struct.unpack(">I", data[position + 24 : position + 28])[0]
        flags = struct.unpack(">H", data[position + 60 : position + 62])[0]
        head = 64 if version >= 3 and flags & 0x4000 else 62  # the extended flags word
        if version == 4:  # the name is the previous one minus `strip` bytes, plus what follows
            strip, start = _varint(data, position + head)
            end = data.index(b"\0", start)
            name = previous[: len(previous) - strip] + data[start:end]
            position = end + 1
        else:
            end = data.index(b"\0", position + head)
            name = data[position + head : end]
            position += (head + len(name) + 8) & ~7  # NUL-padded to a multiple of 8
        previous = name
        if mode & 0o170000 == _GITLINK:
            found.append(name)
    return found


def _varint(data: bytes, position: int) -> tuple[int, int]:
    """git's offset varint (each continuation adds one before shifting); the value and the next position."""
    byte = data[position]
    value = byte & 0x7F
    while byte & 0x80:
        position += 1
        byte = data[position]
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, position + 1
