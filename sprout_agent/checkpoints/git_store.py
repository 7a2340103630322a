"""One root's snapshots: every non-ignored file's exact bytes as a git tree, committed under
`refs/sprout-agent/<session>` in the repository's own object store, or in a shadow repository for a directory
outside git. The user's index, HEAD, stash and branches are never written: the tree is built in a private index.

Why our own change detection rather than `git add -A`: `add` runs clean filters and end-of-line conversion from
`.gitattributes` (a file the model may write), and what it stores is then not the bytes a rewind must put back.
Files are listed by git (its ignore rules), compared by stat with a cache of ours, and only the changed ones are
hashed, raw (`hash-object --no-filters`). Checked with git 2.39.

What git may run or write here: git_run.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from sprout_agent.checkpoints.blobs import LINK, write_blobs
from sprout_agent.checkpoints.git_run import CheckpointError, TimedOut, run_git

# Bounds (docs/rewind.md): past them a path is skipped, and the checkpoint lists what it skipped.
MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_DIRECTORY_FILES = 5_000  # new (untracked) files under one directory: a dependency tree nobody ignored
MAX_ROOT_FILES = 200_000  # files in one root: past this the root is not checkpointed at all
RACY_NS = 2_000_000_000  # a file's stat is trusted once its mtime is this old (git's racy-clean problem)
FILE, EXECUTABLE = "100644", "100755"
_IDENTITY = {"GIT_AUTHOR_NAME": "sprout-agent", "GIT_AUTHOR_EMAIL": "checkpoints@sprout-agent.invalid"}
__all__ = ["LINK", "CheckpointError", "Entry", "RootStore", "Snapshot"]

Entry = tuple[str, str]  # (mode, object id)


@dataclass(frozen=True, slots=True)
class Snapshot:
    commit: str
    entries: Mapping[str, Entry]  # relative path → (mode, object id)
    skipped: tuple[str, ...] = ()  # "path: reason", past the bounds or unreadable


@dataclass
class RootStore:
    """The snapshots of one root (a real, absolute directory) for one session."""

    root: str
    git_dir: str  # the repository whose objects hold the snapshots (the user's, or a shadow one)
    work_dir: Path  # ours: the private index and the stat cache
    ref: str
    shadow: bool
    exclude: tuple[str, ...] = ()  # relative directories never recorded: our own store, when it lies in the root
    untrusted: tuple[str, ...] = ()  # the writable roots: git is never taken from a PATH entry in them
    last: Snapshot | None = None
    broken: str | None = None  # why this root is no longer checkpointed in this session (git timed out)
    _index_dirty: bool = False  # a snapshot failed after writing the private index: rebuild it from `last`
    _stats_dirty: bool = False  # the stat cache gained entries since it was saved
    _trees: dict[str, dict[str, Entry]] = field(default_factory=dict[str, dict[str, Entry]])  # commit → entries
    _stats: dict[str, list[object]] = field(default_factory=dict[str, list[object]])  # path → [stat key, id]

    @classmethod
    def open(
        cls,
        root: str,
        store_dir: Path,
        session_id: str,
        *,
        repository: str | None,
        private: Iterable[Path] = (),
        untrusted: tuple[str, ...] = (),
    ) -> RootStore:
        """`repository`: the root's git directory when it is a git work tree; else a shadow one is made in
        `store_dir`, keyed by the root's path. `private`: our own directories, never recorded if in the root.
        `untrusted`: where sandboxed commands may write (a `git` planted in an activated venv must not run)."""
        key = hashlib.sha256(root.encode()).hexdigest()[:20]
        work_dir = store_dir / key
        try:
            work_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as error:
            raise CheckpointError(f"cannot make {work_dir}: {error.strerror}") from None
        shadow = repository is None
        git_dir = str(work_dir / "shadow.git") if repository is None else repository
        if shadow and not os.path.isdir(git_dir):
            run_git(["init", "--quiet", "--bare", git_dir], untrusted=untrusted)
        mine = (os.path.relpath(os.path.realpath(p), root) for p in (store_dir, *private))
        exclude = tuple(p for p in mine if p != ".." and not p.startswith("../"))
        store = cls(root, git_dir, work_dir, f"refs/sprout-agent/{session_id}", shadow, exclude, untrusted)
        store._stats = _load_stats(store.stats_file)
        # A run killed mid-write leaves git's lock on our private index; the session's transcript lock says that
        # no other run holds this session, so the lock is stale.
        Path(f"{store.index}.lock").unlink(missing_ok=True)
        return store

    @property
    def stats_file(self) -> Path:
        """Shared by the root's sessions; keyed by the repository too, since its ids name objects stored there."""
        return self.work_dir / f"stats-{hashlib.sha256(self.git_dir.encode()).hexdigest()[:8]}.json"

    @property
    def index(self) -> Path:
        return self.work_dir / f"{self.ref.rsplit('/', 1)[-1]}.index"

    def resume(self, commit: str) -> None:
        """Continue from a snapshot recorded by an earlier run of this session (`-c`, `-r`)."""
        self.last = Snapshot(commit, self.tree(commit))
        self._git(["read-tree", commit])

    def snapshot(self, label: str) -> Snapshot:
        """The root as it is now; the last snapshot again (no new commit) when nothing changed."""
        if self.broken is not None:
            raise CheckpointError(self.broken)
        if self.last is None or self._index_dirty:
            # What an earlier, unrecorded run or a failed snapshot left in the index is not a checkpoint's.
            self._git(["read-tree", "--empty"] if self.last is None else ["read-tree", self.last.commit])
            self._index_dirty = False
        listed = self._listed()
        if len(listed) > MAX_ROOT_FILES:
            raise CheckpointError(f"{self.root} has over {MAX_ROOT_FILES} files: not checkpointed")
        entries, skipped = self._entries(listed)
        if self.last is not None and entries == self.last.entries:
            return Snapshot(self.last.commit, self.last.entries, tuple(skipped))
        self._index_dirty = True
        self._update_index(entries)
        try:
            tree = self._git(["write-tree"]).strip()
        except CheckpointError:  # an object the cache names was pruned (git gc): hash everything once more
            self._stats.clear()
            self._trees.clear()
            entries, skipped = self._entries(listed)
            self._git(["read-tree", "--empty"])
            self.last = None if self.last is None else Snapshot(self.last.commit, {}, self.last.skipped)
            self._update_index(entries)
            tree = self._git(["write-tree"]).strip()
        parent = ["-p", self.last.commit] if self.last is not None else []
        commit = self._git(["commit-tree", tree, *parent, "-m", f"sprout-agent checkpoint: {label}"]).strip()
        self._git(["update-ref", "-m", "sprout-agent checkpoint", self.ref, commit])
        self.last = Snapshot(commit, entries, tuple(skipped))
        self._index_dirty = False
        self._remember(commit, entries)
        if self._stats_dirty:  # (a 10,000-file cache costs ~25 ms to write: only when it changed)
            _save_stats(self.stats_file, self._stats)
            self._stats_dirty = False
        return self.last

    def tree(self, commit: str) -> Mapping[str, Entry]:
        """The snapshot's entries; the last few snapshots' are known without asking git (a turn's changes, a plan)."""
        if (known := self._trees.get(commit)) is not None:
            return known
        out = self._git(["ls-tree", "-r", "-z", "--full-tree", commit])
        entries: dict[str, Entry] = {}
        for item in out.split("\0"):
            if item:
                meta, path = item.split("\t", 1)
                mode, _kind, object_id = meta.split(" ")
                entries[path] = (mode, object_id)
        self._remember(commit, entries)
        return entries

    def _remember(self, commit: str, entries: dict[str, Entry]) -> None:
        self._trees[commit] = entries
        while len(self._trees) > 6:  # the oldest goes: a 100,000-file tree's entries are ~20 MB
            del self._trees[next(iter(self._trees))]

    def contents(self, object_ids: Iterable[str]) -> dict[str, bytes]:
        """The blobs' bytes, by id (`cat-file --batch`: one process for all of them)."""
        wanted = list(dict.fromkeys(object_ids))
        if not wanted:
            return {}
        stdin = "".join(f"{object_id}\n" for object_id in wanted).encode()
        out = run_git(
            [f"--git-dir={self.git_dir}", "cat-file", "--batch"], env=self._env(), stdin=stdin, untrusted=self.untrusted
        )
        found: dict[str, bytes] = {}
        position = 0
        for object_id in wanted:
            end = out.index(b"\n", position)
            header = out[position:end].split(b" ")
            if len(header) != 3:
                raise CheckpointError(f"object {object_id} is missing from {self.git_dir}")
            size = int(header[2])
            found[object_id] = out[end + 1 : end + 1 + size]
            position = end + 1 + size + 1
        return found

    def numstat(self, old: str, new: str) -> dict[str, tuple[int, int]]:
        """Lines added and removed per path between two snapshots (binary files count 0/0)."""
        out = self._git(["diff-tree", "-r", "-z", "--numstat", "--no-renames", old, new])
        counts: dict[str, tuple[int, int]] = {}
        for item in out.split("\0"):
            parts = item.split("\t")
            if len(parts) == 3:
                added, removed, path = parts
                counts[path] = (int(added) if added.isdigit() else 0, int(removed) if removed.isdigit() else 0)
        return counts

    def patch(self, old: str, new: str, paths: Iterable[str]) -> str:
        """The unified diff from `old` to `new`, limited to `paths` (a rewind's preview)."""
        chosen = list(paths)
        if not chosen:
            return ""
        flags = ["--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "--binary"]
        return self._git(["diff-tree", "-r", "-p", *flags, old, new, "--", *(f":(literal){p}" for p in chosen)])

    # --- building a snapshot ------------------------------------------------------------------------------
    def _listed(self) -> dict[str, bool]:
        """Every path git would consider, tracked or not (ignored ones left out the way git leaves them out):
        path → untracked. A shadow repository has no index of the user's: everything there is untracked."""
        flags = ["ls-files", "-z", "-t", "--others", "--exclude-standard", *([] if self.shadow else ["--cached"])]
        # No index at all: a missing file is an empty index to git (`/dev/null` is "smaller than expected").
        env = {"GIT_INDEX_FILE": str(self.work_dir / "no-such.index")} if self.shadow else {}
        out = self._git(flags, user_index=not self.shadow, extra=env)
        listed: dict[str, bool] = {}
        for item in out.split("\0"):
            if len(item) > 2:
                listed.setdefault(item[2:], item[0] == "?")
        return listed

    def _entries(self, listed: dict[str, bool]) -> tuple[dict[str, Entry], list[str]]:
        skipped: list[str] = []
        crowded = _crowded_directories(p for p, untracked in listed.items() if untracked)
        skipped += [f"{directory}/: over {MAX_DIRECTORY_FILES} new files" for directory in sorted(crowded)]
        try:
            root = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as error:
            raise CheckpointError(f"cannot open {self.root}: {error.strerror}") from None
        try:
            entries, to_hash = self._compare(listed, tuple(f"{d}/" for d in (*crowded, *self.exclude)), skipped, root)
        finally:
            os.close(root)
        recent = time.time_ns() - RACY_NS
        for path, object_id in self._hash(to_hash, skipped).items():
            key = to_hash[path]
            entries[path] = (str(key[0]), object_id)
            if isinstance(key[2], int) and key[2] < recent:  # a file written in the last moments is hashed again
                self._stats[path] = [key, object_id]
                self._stats_dirty = True
        return entries, skipped

    def _compare(
        self, listed: Iterable[str], left_out: tuple[str, ...], skipped: list[str], root: int
    ) -> tuple[dict[str, Entry], dict[str, list[object]]]:
        """The entries the stat cache vouches for, and the paths to hash with their stat keys (the hot loop: one
        `startswith` for what is left out, an lstat relative to the root's descriptor)."""
        entries: dict[str, Entry] = {}
        to_hash: dict[str, list[object]] = {}
        stats = self._stats
        for path in listed:
            if path.endswith("/"):
                skipped.append(f"{path}: a repository of its own")
            elif left_out and path.startswith(left_out):
                continue
            elif (key := self._stat_key(path, skipped, root)) is not None:
                cached = stats.get(path)
                if cached is not None and cached[0] == key:
                    entries[path] = (str(key[0]), str(cached[1]))
                else:
                    to_hash[path] = key
        return entries, to_hash

    def _stat_key(self, path: str, skipped: list[str], root: int) -> list[object] | None:
        try:
            info = os.lstat(path, dir_fd=root)
        except OSError:
            return None  # gone (a tracked file deleted): absent from the snapshot
        if stat.S_ISLNK(info.st_mode):
            mode = LINK
        elif stat.S_ISREG(info.st_mode):
            if info.st_size > MAX_FILE_BYTES:
                skipped.append(f"{path}: over {MAX_FILE_BYTES // (1024 * 1024)} MB")
                return None
            mode = EXECUTABLE if info.st_mode & 0o100 else FILE
        else:
            return None  # a submodule's directory, a FIFO, a socket: not file contents
        return [mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]

    def _hash(self, to_hash: Mapping[str, list[object]], skipped: list[str]) -> dict[str, str]:
        return write_blobs(self.root, self.work_dir, to_hash, skipped, self._git)

    def _update_index(self, entries: Mapping[str, Entry]) -> None:
        previous: Mapping[str, Entry] = self.last.entries if self.last is not None else {}
        lines = [f"{mode} {oid}\t{path}" for path, (mode, oid) in entries.items() if previous.get(path) != (mode, oid)]
        # The null id as long as the repository's ids (a SHA-256 repository refuses 40 zeros).
        lines += [f"0 {'0' * len(previous[path][1])}\t{path}" for path in previous if path not in entries]
        if lines:
            self._git(["update-index", "-z", "--index-info"], stdin="\0".join(lines) + "\0")

    # --- running git ----------------------------------------------------------------------------------------
    def _env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The git variables of ours (the runner gives git nothing else of GIT_*): our index, our identity."""
        env = {"GIT_INDEX_FILE": str(self.index), **_IDENTITY, "GIT_COMMITTER_NAME": _IDENTITY["GIT_AUTHOR_NAME"]}
        env["GIT_COMMITTER_EMAIL"] = _IDENTITY["GIT_AUTHOR_EMAIL"]
        return env | dict(extra or {})

    def _git(
        self,
        args: list[str],
        *,
        stdin: str | None = None,
        user_index: bool = False,
        extra: Mapping[str, str] = {},
        pass_fds: tuple[int, ...] = (),
    ) -> str:
        env = self._env(extra)
        if user_index:
            del env["GIT_INDEX_FILE"]  # git's default: the repository's own index, read and never written here
        where = [f"--git-dir={self.git_dir}", f"--work-tree={self.root}"]
        try:
            out = run_git(
                [*where, *args], cwd=self.root, env=env, stdin=stdin, untrusted=self.untrusted, pass_fds=pass_fds
            )
        except TimedOut as error:  # (a FIFO named .gitignore blocks git's listing): not 2 minutes every round
            self.broken = f"{self.root}: no more checkpoints in this session: {error}"
            raise CheckpointError(self.broken) from None
        return os.fsdecode(out)


def _crowded_directories(untracked: Iterable[str]) -> set[str]:
    """The top-most directories holding more than MAX_DIRECTORY_FILES untracked files."""
    counts: dict[str, int] = {}
    for path in untracked:
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            prefix = "/".join(parts[:depth])
            counts[prefix] = counts.get(prefix, 0) + 1
    crowded = {d for d, n in counts.items() if n > MAX_DIRECTORY_FILES}
    return {d for d in crowded if not any(_inside(d, other) for other in crowded if other != d)}


def _inside(path: str, directories: Iterable[str]) -> bool:
    return any(path.startswith(d + "/") for d in directories)


def _load_stats(path: Path) -> dict[str, list[object]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return cast(dict[str, list[object]], data) if isinstance(data, dict) else {}


def _save_stats(path: Path, stats: Mapping[str, list[object]]) -> None:
    """Atomically, so two sessions in one root (or a kill) never leave a torn cache; a lost one costs a rehash."""
    try:
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as handle:
            json.dump(stats, handle, separators=(",", ":"))
        os.replace(handle.name, path)
    except OSError:
        pass
