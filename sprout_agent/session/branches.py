"""A transcript read with each record's offset (a turn's start is where its conversation ends), and a fork of it
at such an offset: the conversation side of /rewind and `sessions rewind` (docs/rewind.md)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast


def records_at(path: Path, end: int | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every complete record with the offset it starts at, up to `end` (exclusive) if given."""
    with path.open("rb") as handle:
        offset = 0
        for line in handle:
            if end is not None and offset >= end:
                return
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            if isinstance(record, dict):
                yield offset, cast(dict[str, Any], record)
            offset += len(line)


def fork(path: Path, offset: int, session_id: str) -> Path:
    """A new session holding the conversation of `path` up to `offset` (a turn's start: /rewind), beside it; the
    old session is left as it is, resumable by its id. Its turn records come along: its checkpoints too."""
    with path.open("rb") as handle:
        header = json.loads(handle.readline())
        body = handle.read(max(0, offset - handle.tell()))
    header |= {"session_id": session_id, "created": time.time(), "forked_from": header.get("session_id")}
    target = path.with_name(f"{session_id}.jsonl")
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" + body)
    return target
