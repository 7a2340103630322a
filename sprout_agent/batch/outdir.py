"""The `--out` directory: results.jsonl (one record per line, appended as each task ends; the last line of an id
wins), transcripts/, logs/, work/ (the tasks' own trees), batch.json (the task ids of this run or shard) and
summary.json. One batch at a time per directory (a lock)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from sprout_agent.batch.outcome import FINISHED, as_object
from sprout_agent.batch.tasks import Task, file_name
from sprout_agent.core.errors import UsageError

RESULTS = "results.jsonl"


class OutDir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock: IO[str] | None = None

    def open(self) -> None:
        """Creates the directory and takes its lock; a second batch on it is a usage error, not a mixed file."""
        try:
            for sub in ("transcripts", "logs", "work"):
                (self.path / sub).mkdir(parents=True, exist_ok=True)
            lock = open(self.path / ".lock", "w")  # noqa: SIM115 - held until close()
        except OSError as error:
            raise UsageError(f"--out {self.path}: {error}") from None
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            raise UsageError(f"--out {self.path} is in use by another sprout-agent batch") from None
        self._lock = lock

    def close(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def records(self) -> dict[str, dict[str, Any]]:
        return read_records(self.path)

    def append(self, record: dict[str, Any], stream: str, stderr: str) -> None:
        name = file_name(str(record["id"]))
        (self.path / "transcripts" / f"{name}.jsonl").write_text(stream, encoding="utf-8")
        if stderr:
            (self.path / "logs" / f"{name}.stderr").write_text(stderr, encoding="utf-8")
        with open(self.path / RESULTS, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def write_json(self, name: str, obj: Any) -> None:
        temporary = self.path / f".{name}.tmp"
        temporary.write_text(json.dumps(obj, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(temporary, self.path / name)


def read_records(path: Path) -> dict[str, dict[str, Any]]:
    """Each id's last record; a torn last line (a batch killed mid-write) is skipped."""
    records: dict[str, dict[str, Any]] = {}
    with contextlib.suppress(FileNotFoundError):
        for line in (path / RESULTS).read_text(encoding="utf-8").splitlines():
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
