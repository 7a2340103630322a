"""Finding and listing recorded sessions (`--continue`, `--resume ID`, `sprout-agent sessions`).

Reads only headers and user prompts, never whole histories; a file it cannot read is skipped with a
warning, so one malformed transcript never hides the others.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from sprout_agent.core.errors import UsageError
from sprout_agent.session.store import records

PROMPT_PREVIEW_CHARS = 80
# What a damaged or hand-edited file can raise while it is read (deep nesting: RecursionError).
UNREADABLE = (OSError, UnicodeError, ValueError, TypeError, KeyError, AttributeError, RecursionError)


@dataclass(frozen=True, slots=True)
class SessionInfo:
    session_id: str
    cwd: str
    first_prompt: str
    turns: int  # user prompts
    last_activity: float  # seconds since the epoch
    path: Path


def _session_files(directory: Path) -> list[Path]:
    """Newest activity first; a file that vanished meanwhile is left out."""
    dated: list[tuple[float, Path]] = []
    try:
        for path in directory.glob("*.jsonl"):
            try:
                if path.is_file():
                    dated.append((path.stat().st_mtime, path))
            except OSError:
                continue
    except OSError:
        return []
    return [path for _, path in sorted(dated, key=lambda item: item[0], reverse=True)]


def header(path: Path) -> dict[str, Any]:
    """A transcript's first record (its id, directory, the session it was forked from); {} when unreadable."""
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            record = json.loads(handle.readline() or "{}")
    except UNREADABLE:
        return {}
    return cast(dict[str, Any], record) if isinstance(record, dict) else {}


def valid_id(session_id: str) -> bool:
    """A UUID in its usual form (36 characters, dashes); what `--session-id` accepts and new sessions get. Old
    sessions have 32 hex digits and stay resumable: `find` takes any id."""
    try:
        return str(uuid.UUID(session_id)) == session_id.lower() and len(session_id) == 36
    except ValueError:
        return False


def exists(directory: Path, session_id: str) -> bool:
    return (directory / f"{session_id.lower()}.jsonl").exists()


def find(directory: Path, id_prefix: str) -> Path:
    """The session whose id is `id_prefix` or starts with it; anything else is a usage error."""
    id_prefix = id_prefix.lower()  # ids are lowercase (hex, or a UUID written in capitals elsewhere)
    exact = directory / f"{id_prefix}.jsonl"
    if id_prefix and "/" not in id_prefix and exact.is_file():
        return exact
    matches = [path for path in _session_files(directory) if id_prefix and path.stem.startswith(id_prefix)]
    if not matches:
        raise UsageError(f"no session with id {id_prefix!r} (sprout-agent sessions lists them)")
    if len(matches) > 1:
        raise UsageError(f"session id {id_prefix!r} is ambiguous: {len(matches)} sessions start with it")
    return matches[0]


def latest_for(directory: Path, cwd: str) -> Path:
    """The most recently active session started in `cwd`."""
    for path in _session_files(directory):
        if header(path).get("cwd") == cwd:
            return path
    raise UsageError(f"no session to continue in {cwd} (sprout-agent sessions lists them)")


def describe(path: Path) -> SessionInfo:
    """One line of `sprout-agent sessions`: counts the user prompts recorded as messages."""
    header: dict[str, Any] = {}
    first, turns = "", 0
    for record in records(path):
        if record.get("type") == "session":
            header = record
        elif record.get("type") == "message" and _is_prompt(record.get("message")):
            turns += 1
            first = first or _prompt_text(record["message"])
    line = " ".join(first.split())
    if len(line) > PROMPT_PREVIEW_CHARS:
        line = line[: PROMPT_PREVIEW_CHARS - 1] + "…"
    session_id = str(header.get("session_id") or path.stem)
    return SessionInfo(session_id, str(header.get("cwd", "")), line, turns, path.stat().st_mtime, path)


def list_sessions(
    directory: Path, cwd: str | None = None, *, skipped: Callable[[Path, str], None] | None = None
) -> list[SessionInfo]:
    """Every readable session, newest activity first (only those started in `cwd` when it is given).

    A file that cannot be read is left out and reported to `skipped` (path, reason).
    """
    found: list[SessionInfo] = []
    for path in _session_files(directory):
        try:
            if cwd is not None and header(path).get("cwd") != cwd:
                continue
            found.append(describe(path))
        except UNREADABLE as error:
            if skipped is not None:
                skipped(path, f"{type(error).__name__}: {error}")
    return found


def _is_prompt(message: object) -> bool:
    """A user message with text and no tool results: something the user typed, not a tool's answer."""
    if not isinstance(message, dict):
        return False
    data = cast(dict[str, Any], message)
    blocks = data.get("content")
    if data.get("role") != "user" or not isinstance(blocks, list):
        return False
    kinds = {cast(dict[str, Any], b).get("type") for b in cast(list[object], blocks) if isinstance(b, dict)}
    return "text" in kinds and "tool_result" not in kinds


def _prompt_text(message: dict[str, Any]) -> str:
    return "".join(str(block.get("text", "")) for block in message["content"] if block.get("type") == "text")
