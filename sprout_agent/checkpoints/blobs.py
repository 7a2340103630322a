"""A checkpoint's blobs: the changed files' bytes written to the object store, unfiltered, each read by git through
a descriptor opened here (trust/opening.py: from the root, no link on the way), never by its path a second time."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import BinaryIO

from sprout_agent.checkpoints.git_run import CheckpointError, c_quoted
from sprout_agent.trust.opening import Refused, descend, open_at, open_directory

LINK = "120000"
# Files hashed by one hash-object, each through a descriptor of ours: well under the usual 1024 descriptors.
FILES_PER_HASH = 256

Git = Callable[..., str]  # RootStore._git: (args, *, stdin, pass_fds) -> stdout


def write_blobs(
    root_path: str, scratch_in: Path, to_hash: Mapping[str, list[object]], skipped: list[str], git: Git
) -> dict[str, str]:
    """path → blob id for each of `to_hash` (path → stat key, its mode first); a symlink's blob is its target, never
    followed. A file that cannot be read is skipped: one such file must not cost the whole checkpoint."""
    try:
        root = open_directory(os.path.realpath(root_path))
    except (OSError, Refused) as error:
        raise CheckpointError(f"cannot open {root_path}: {error}") from None
    ids: dict[str, str] = {}
    paths = list(to_hash)
    try:
        with tempfile.TemporaryDirectory(dir=scratch_in) as scratch:
            for first in range(0, len(paths), FILES_PER_HASH):
                some = {p: to_hash[p] for p in paths[first : first + FILES_PER_HASH]}
                ids |= _hash_some(some, root, scratch, skipped, git)
    finally:
        os.close(root)
    return ids


def _hash_some(
    to_hash: Mapping[str, list[object]], root: int, scratch: str, skipped: list[str], git: Git
) -> dict[str, str]:
    """hash-object reads each file as `/proc/self/fd/N`, the file opened here: a directory on the way swapped for
    a link to `~/.ssh` after the open cannot put a key in a blob (a sandboxed command could read it from our refs,
    or a rewind write it back), nor a file renamed away fail the whole checkpoint."""
    names: dict[str, str] = {}  # path → what hash-object reads
    opened: list[BinaryIO] = []
    try:
        for number, (path, key) in enumerate(to_hash.items()):
            try:
                if key[0] == LINK:
                    names[path] = os.path.join(scratch, str(number))
                    Path(names[path]).write_bytes(_link_target(root, path))
                else:
                    opened.append(open_at(root, path, path))
                    names[path] = f"/proc/self/fd/{opened[-1].fileno()}"
            except (OSError, Refused):
                names.pop(path, None)
                skipped.append(f"{path}: unreadable")
        if not names:
            return {}
        lines = "".join(f"{c_quoted(name)}\n" for name in names.values())
        fds = tuple(f.fileno() for f in opened)
        out = git(["hash-object", "-w", "--no-filters", "--stdin-paths"], stdin=lines, pass_fds=fds)
    finally:
        for handle in opened:
            handle.close()
    ids = out.split()
    if len(ids) != len(names):
        raise CheckpointError(f"git hash-object answered {len(ids)} ids for {len(names)} files")
    return dict(zip(names, ids, strict=True))


def _link_target(root: int, path: str) -> bytes:
    """The target of the link `path`, read in its own directory, reached from `root` without following a link."""
    *folders, name = path.split("/")
    directory = descend(os.dup(root), folders, path)
    try:
        return os.fsencode(os.readlink(name, dir_fd=directory))
    finally:
        os.close(directory)
