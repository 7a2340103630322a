"""The `--out` directory: results.jsonl (one record per line, appended as each task ends; the last line of an id
wins), transcripts/, logs/, work/ (the tasks' own trees), git/ (clones' git directories), patches/ (checkouts'
patches), batch.json (the task ids of this run or shard) and summary.json. One batch at a time per directory (a
lock). Only its user can steer or read it: every name goes through private.py (0600 files, 0700 directories)."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sprout_agent.batch.outcome import FINISHED, as_object
from sprout_agent.batch.private import PrivateDir
from sprout_agent.batch.tasks import Task, file_name
from sprout_agent.core.errors import UsageError
from sprout_agent.trust.opening import Refused, descend, open_at, open_directory

RESULTS = "results.jsonl"
SUBDIRECTORIES = ("transcripts", "logs", "work", "git", "patches")


class OutDir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._dirs: dict[str, PrivateDir] = {}
        self._lock: int | None = None

    def open(self) -> None:
        """Makes (or checks) the directory and takes its lock; a directory another user could steer is refused,
        and a second batch on it is a usage error, not a mixed file. Nothing is written before either check."""
        try:
            self._dirs[""] = top = PrivateDir.open(self.path)
            self.path = top.path  # absolute, the links above it resolved: what the tasks' trees are made under
            self._dirs |= {name: top.sub(name) for name in SUBDIRECTORIES}
            lock = top.lock_file(".lock")
        except OSError as error:
            self.close()
            raise UsageError(f"--out {self.path}: {error.strerror or error}") from None
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(lock)
            self.close()
            raise UsageError(f"--out {self.path} is in use by another sprout-agent batch") from None
        self._lock = lock

    def close(self) -> None:
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None
        for directory in self._dirs.values():
            directory.close()
        self._dirs.clear()

    def records(self) -> dict[str, dict[str, Any]]:
        return _parse_records(self._dirs[""].read_text(RESULTS) or "")

    def append(self, record: dict[str, Any], stream: str, stderr: str, patch: bytes | None = None) -> None:
        """The task's files, then its record: a record read later always has its transcript and patch."""
        name = file_name(str(record["id"]))
        self._dirs["transcripts"].write(f"{name}.jsonl", stream)
        if stderr:
            self._dirs["logs"].write(f"{name}.stderr", stderr)
        if patch is not None:  # an earlier run's patch is replaced, also by an empty one
            self._dirs["patches"].write(f"{name}.diff", patch)
        self._dirs[""].append(RESULTS, json.dumps(record, ensure_ascii=False) + "\n")

    def write_json(self, name: str, obj: Any) -> None:
        self._dirs[""].write(name, json.dumps(obj, indent=1, ensure_ascii=False) + "\n")

    def read(self, subdirectory: str, name: str) -> str | None:
        """A file of one of the directories, as text (a byte that is not UTF-8 replaced); None when missing."""
        return self._dirs[subdirectory].read_text(name)

    def write(self, subdirectory: str, name: str, data: str | bytes) -> None:
        """A whole file in one of the directories (`""`: the top), as `append`'s transcripts are written."""
        self._dirs[subdirectory].write(name, data)


def read_records(path: Path) -> dict[str, dict[str, Any]]:
    """Each id's last record in another batch directory (a shard being merged)."""
    data = read_shard(path, RESULTS)
    return _parse_records("" if data is None else data.decode("utf-8", errors="replace"))


def read_shard(directory: Path, relative: str) -> bytes | None:
    """A file of another batch's directory (a shard being merged, perhaps written by another user): opened by the
    one reader (trust/opening.py), never through a link nor waiting on a FIFO; None when it does not exist."""
    try:
        top = open_directory(os.path.realpath(directory))
        try:
            with open_at(top, relative, str(directory / relative)) as handle:
                return handle.read()
        finally:
            os.close(top)
    except FileNotFoundError:
        return None
    except (OSError, Refused) as error:
        raise UsageError(f"{directory / relative}: not read ({error})") from None


def shard_transcripts(directory: Path) -> list[str]:
    """The names of the transcripts in another batch's directory, its `transcripts` never entered through a link."""
    try:
        fd = descend(open_directory(os.path.realpath(directory)), ["transcripts"], str(directory / "transcripts"))
    except FileNotFoundError:
        return []
    except (OSError, Refused) as error:
        raise UsageError(f"{directory / 'transcripts'}: not read ({error})") from None
    try:
        return sorted(name for name in os.listdir(fd) if name.endswith(".jsonl"))
    finally:
        os.close(fd)


def _parse_records(text: str) -> dict[str, dict[str, Any]]:
    """Each id's last record; a torn last line (a batch killed mid-write) is skipped."""
    records: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        try:
            record: Any = json.loads(line)
        except ValueError:
            continue
        found = as_object(record)
        if found is not None and isinstance(found.get("id"), str):
            records[found["id"]] = found
    return records


def to_run(tasks: Iterable[Task], records: dict[str, dict[str, Any]], retry_failed: bool) -> list[Task]:
    """What this run still has to do: tasks without a record or interrupted, and failed ones with --retry-failed."""
    chosen: list[Task] = []
    for task in tasks:
        record: dict[str, Any] = records.get(task.id) or {}
        status = record.get("status")
        if status not in FINISHED or (retry_failed and status != "ok"):
            chosen.append(task)
    return chosen
