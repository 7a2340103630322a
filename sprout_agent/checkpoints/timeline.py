"""A session's turns as its transcript records them (`turn` and `checkpoint` records, docs/rewind.md): what the
tracker writes and what a rewind reads, in a REPL or from `sessions rewind` in another process."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from sprout_agent.core.events import FileChange

PROMPT_CHARS = 200  # of each turn's prompt, kept for the list a person picks from


@dataclass
class Turn:
    number: int
    time: float
    prompt: str
    offset: int  # where the turn's record starts in the transcript: the conversation before it is what precedes
    kind: str = "turn"  # turn | rewind (a rewind is a step of its own, so it can be rewound: redo)
    before: dict[str, str] = field(default_factory=dict[str, str])  # root → checkpoint commit before the turn
    after: dict[str, str] = field(default_factory=dict[str, str])  # root → commit at the turn's end
    files: tuple[FileChange, ...] = ()
    skipped: tuple[str, ...] = ()

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed for f in self.files)

    def started(self) -> dict[str, object]:
        return {"type": "turn", "turn": self.number, "kind": self.kind, "time": self.time, "prompt": self.prompt}

    def checkpoint(self, stage: str) -> dict[str, object]:
        record: dict[str, object] = {"type": "checkpoint", "turn": self.number, "stage": stage}
        if stage == "before":
            return record | {"roots": self.before}
        files = [_file_record(change) for change in self.files]
        return record | {"roots": self.after, "files": files, "skipped": list(self.skipped)}


def _file_record(change: FileChange) -> dict[str, object]:
    return {
        "path": change.path, "status": change.status, "added": change.added, "removed": change.removed,
        "calls": list(change.calls), "tools": list(change.tools),
    }  # fmt: skip


def turns_from(records: Iterable[tuple[int, Mapping[str, Any]]]) -> list[Turn]:
    """The turns in (offset, record) pairs; records of other kinds are passed over, a malformed one is skipped."""
    turns: dict[int, Turn] = {}
    for offset, record in records:
        try:
            number = int(record["turn"])
            if record.get("type") == "turn":
                prompt, kind = str(record.get("prompt", "")), str(record.get("kind", "turn"))
                turns[number] = Turn(number, float(record.get("time", 0)), prompt, offset, kind)
            elif record.get("type") == "checkpoint" and number in turns:
                _checkpoint(turns[number], record)
        except (KeyError, TypeError, ValueError):
            continue
    return [turns[n] for n in sorted(turns)]


def _checkpoint(turn: Turn, record: Mapping[str, Any]) -> None:
    roots = {str(k): str(v) for k, v in cast(dict[str, Any], record.get("roots") or {}).items()}
    if record.get("stage") == "before":
        turn.before = roots
        return
    turn.after = roots
    files: list[FileChange] = []
    for item in cast(list[dict[str, Any]], record.get("files") or []):
        calls, tools = tuple(str(c) for c in item.get("calls", ())), tuple(str(t) for t in item.get("tools", ()))
        status, added, removed = str(item["status"]), int(item["added"]), int(item["removed"])
        files.append(FileChange(str(item["path"]), status, added, removed, calls, tools))
    turn.files = tuple(files)
    turn.skipped = tuple(str(s) for s in record.get("skipped") or ())
