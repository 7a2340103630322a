"""Putting one file back (or deleting it) for a rewind, without writing outside its root or over the user's work.

Every step is taken from a directory descriptor opened without following links, so a symbolic link on the way
(`dir -> /etc`, planted by the model, or swapped in by a process it left running) is never written through, and
a name from a snapshot that could leave the root (`..`, an absolute name, `.git`) is refused. A file is only
replaced when it is still what the rewind planned against (or already what it puts back): the user may have
saved it since the preview, or since a rewind that a kill cut short.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Mapping

from sprout_agent.checkpoints.git_store import EXECUTABLE, FILE, LINK, CheckpointError, Entry
from sprout_agent.trust.opening import Refused, descend, open_directory, open_in, replace_in

UNCHECKED: Entry = ("?", "?")  # a restore's `expected` when whatever is there may be replaced (the caller said so)
_NAME_MAX = 255


def put_back(root: str, path: str, entry: Entry | None, expected: Entry | None, blobs: Mapping[str, bytes]) -> None:
    """`entry`: what to put back (None: delete). `expected`: what the plan saw there (None: nothing)."""
    parts = path.split("/")
    if any(p in ("", ".", "..") or p.lower() == ".git" for p in parts) or os.path.isabs(path):
        raise CheckpointError("not a path inside the root: refused")
    directory = _open_parent(root, parts[:-1], create=entry is not None)
    if directory is None:
        return  # deleting a file whose directory is gone already: nothing to do
    try:
        name = parts[-1]
        current = _current(directory, name, (entry or expected or (FILE, "0" * 40))[1])
        if current == entry:
            return  # already put back (a rewind finished after a kill does it twice)
        if expected != UNCHECKED and current != expected:
            raise CheckpointError("changed since the rewind was planned: left alone")
        if entry is None:
            if current is not None:
                os.unlink(name, dir_fd=directory)
            return
        _replace(directory, name, entry[0], blobs[entry[1]])
    finally:
        os.close(directory)


def _open_parent(root: str, parts: list[str], *, create: bool) -> int | None:
    """The directory the file is in, by the one walk that never follows a link (trust/opening.py)."""
    try:
        return descend(open_directory(os.path.realpath(root)), parts, "/".join(parts) or ".", create=create)
    except FileNotFoundError:
        if create:
            raise
        return None
    except Refused:
        raise CheckpointError(
            "a directory on its way is not one now, or is a symbolic link: not written through"
        ) from None


def _current(directory: int, name: str, like: str) -> Entry | None:
    """What is at `name` now, as a snapshot would record it (`like`: an id of the repository's hash)."""
    try:
        info = os.lstat(name, dir_fd=directory)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return LINK, _blob_id(os.fsencode(os.readlink(name, dir_fd=directory)), like)
    if not stat.S_ISREG(info.st_mode):
        raise CheckpointError("a directory or a special file is there now: left alone")
    try:
        with open_in(directory, name, name) as handle:
            data = handle.read()
    except Refused as refusal:
        raise CheckpointError(str(refusal)) from None
    return EXECUTABLE if info.st_mode & 0o100 else FILE, _blob_id(data, like)


def _blob_id(data: bytes, like: str) -> str:
    """Git's id of a blob, with the hash of the repository whose id `like` is (SHA-1 or SHA-256)."""
    digest = hashlib.sha256() if len(like) == 64 else hashlib.sha1(usedforsecurity=False)
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def _replace(directory: int, name: str, mode: str, data: bytes) -> None:
    """A new file beside the old one, renamed over it: all or nothing for this file. Its temporary name is always the
    same, so the one a kill left behind is replaced, not left."""
    temporary = f".{name}.sprout-rewind"
    if len(os.fsencode(temporary)) > _NAME_MAX:  # a long name's temporary would not fit
        temporary = f".sprout-rewind-{hashlib.sha256(os.fsencode(name)).hexdigest()[:16]}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary, dir_fd=directory)
    if mode != LINK:  # by the one writer; the kernel applies the umask (no os.umask: threads)
        replace_in(directory, name, data, 0o777 if mode == EXECUTABLE else 0o666, temporary)
        return
    os.symlink(os.fsdecode(data), temporary, dir_fd=directory)
    os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
