"""What one task left: the child's last `result` line read (schema 2, Claude Code's shape, and schema 1 alike)
and the record written to results.jsonl; the statuses a record can have."""

from __future__ import annotations

import json
import re
from typing import Any, cast

from sprout_agent.core.errors import EXIT_OK

# ok: exit 0. failed: any other exit. timeout: the batch ended it at its time limit. interrupted: Ctrl-C (or
# SIGTERM) ended it; an interrupted task is not finished, so the next run with the same --out runs it again.
STATUSES = ("ok", "failed", "timeout", "interrupted")
FINISHED = frozenset({"ok", "failed", "timeout"})
_SAFE_ID = re.compile(r"[0-9A-Za-z-]{1,64}")  # a session id fit to paste into a shell command as it is
USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def last_result(stream: str) -> dict[str, Any] | None:
    """The last `result` object of a stream-json (or json) output; None when the child wrote none."""
    for line in reversed(stream.splitlines()):
        try:
            obj: Any = json.loads(line)
        except ValueError:
            continue
        found = as_object(obj)
        if found is not None and found.get("type") == "result":
            return found
    return None


def checkpoints(stream: str, session_id: object) -> dict[str, Any] | None:
    """What a reviewer needs to rewind the task's tree: the turns that took a checkpoint (the `checkpoint` of each
    `result` line, docs/stream-json.md) and the command that puts the files back as they were before the first;
    None when no turn took one (nothing written, or checkpoints off)."""
    turns: list[int] = []
    for line in stream.splitlines():
        try:
            obj: Any = json.loads(line)
        except ValueError:
            continue
        found = as_object(obj) or {}
        point = as_object(found.get("checkpoint")) if found.get("type") == "result" else None
        if point is not None and isinstance(point.get("turn"), int) and point["turn"] not in turns:
            turns.append(point["turn"])
    if not turns or not isinstance(session_id, str) or not _SAFE_ID.fullmatch(session_id):
        return None
    return {"turns": turns, "rewind": f"sprout-agent sessions rewind {session_id} --to {min(turns)} --files-only"}


def as_object(value: Any) -> dict[str, Any] | None:
    """A JSON object with its type said, or None."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def read_result(obj: dict[str, Any] | None) -> dict[str, Any]:
    """The fields a record takes from a child's `result`, from schema 1 (`cost_usd`, `turns`,
    `cache_read_tokens`) or schema 2 (Claude Code's `total_cost_usd`, `num_turns`, `cache_read_input_tokens`)."""
    obj = obj or {}
    usage = as_object(obj.get("usage")) or {}
    tokens = {
        "input_tokens": usage.get("input_tokens", 0),
        "output_tokens": usage.get("output_tokens", 0),
        "cache_read_tokens": usage.get("cache_read_input_tokens", usage.get("cache_read_tokens", 0)),
        "cache_write_tokens": usage.get("cache_creation_input_tokens", usage.get("cache_write_tokens", 0)),
    }
    return {
        "stop_reason": obj.get("stop_reason") or _stop_from_subtype(obj.get("subtype")),
        "session_id": obj.get("session_id"),
        "turns": int(obj.get("num_turns", obj.get("turns", 0)) or 0),
        "usage": {key: int(value or 0) for key, value in tokens.items()},
        "cost_usd": float(obj.get("total_cost_usd", obj.get("cost_usd", 0.0)) or 0.0),
        "result": obj.get("result") if isinstance(obj.get("result"), str) else "",
        "errors": _strings(obj.get("errors")),
    }


def _strings(value: Any) -> list[str]:
    items: list[Any] = value if isinstance(value, list) else []  # pyright: ignore[reportUnknownVariableType]
    return [str(item) for item in items]


def _stop_from_subtype(subtype: Any) -> str | None:
    names = {"success": "end_turn", "error_max_turns": "max_turns", "error_max_budget_usd": "budget"}
    return names.get(subtype, "error") if isinstance(subtype, str) else None


def status_of(exit_code: int | None, timed_out: bool, interrupted: bool) -> str:
    if timed_out:
        return "timeout"
    if interrupted:
        return "interrupted"
    return "ok" if exit_code == EXIT_OK else "failed"


def interrupted_record(task_id: str, name: str, reason: str) -> dict[str, Any]:
    """A task the engine cancelled before it could report (Ray), or that never got to start its process."""
    return {
        "id": task_id,
        "status": "interrupted",
        "exit_code": None,
        "duration_ms": 0,
        "transcript": f"transcripts/{name}.jsonl",
        **read_result(None),
        "errors": [reason],
        "diff": None,
        "checkpoints": None,
    }
