"""Session transcripts: one append-only JSONL file per session (header, messages, resets); load for resume.

Format (version 1), one JSON object per line:
  {"type": "session", "version": 1, "session_id", "cwd", "model", "created"}   first line
  {"type": "message", "time", "message": {"role", "content": [block, …]}}      one per appended message
  {"type": "reset", "time", "reason", "history": [message, …]}                 the history was replaced
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, cast

from sprout_agent.errors import UsageError
from sprout_agent.messages import Block, Image, Message, Text, ToolResult, ToolUse

STORE_VERSION = 1
INTERRUPTED = "interrupted: the session ended before this tool call finished"
PROMPT_PREVIEW_CHARS = 80


# --- messages as JSON ---------------------------------------------------------------------------------
def encode_block(block: Block) -> dict[str, object]:
    if isinstance(block, Text):
        return {"type": "text", "text": block.text}
    if isinstance(block, Image):
        return {"type": "image", "media_type": block.media_type, "data": block.data}
    if isinstance(block, ToolUse):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    content = [encode_block(part) for part in block.content]
    return {"type": "tool_result", "tool_use_id": block.tool_use_id, "content": content, "is_error": block.is_error}


def encode_message(message: Message) -> dict[str, object]:
    return {"role": message.role, "content": [encode_block(block) for block in message.content]}


def decode_block(data: dict[str, Any]) -> Block:
    kind = data["type"]
    if kind == "text":
        return Text(str(data["text"]))
    if kind == "image":
        return Image(str(data["media_type"]), str(data["data"]))
    if kind == "tool_use":
        return ToolUse(str(data["id"]), str(data["name"]), dict(data["input"]))
    if kind == "tool_result":
        parts = tuple(decode_block(part) for part in data["content"])
        content = tuple(part for part in parts if isinstance(part, Text | Image))
        return ToolResult(str(data["tool_use_id"]), content, bool(data.get("is_error", False)))
    raise ValueError(f"unknown block type {kind!r}")


def decode_message(data: dict[str, Any]) -> Message:
    role = "assistant" if data["role"] == "assistant" else "user"
    return Message(role, tuple(decode_block(block) for block in data["content"]))


# --- writing --------------------------------------------------------------------------------------------
class SessionStore:
    """The `Recorder` for one session: appends a record per message and flushes it before returning.

    The file is created at the first record, so a session that never got a prompt leaves nothing.
    Flushed, not fsynced: a killed process (SIGKILL, crash) loses nothing; only an OS crash could.
    """

    def __init__(self, path: Path, header: dict[str, object] | None, *, skip_resume_reset: bool = False) -> None:
        self.path = path
        self._header = header  # None: the file exists already (a resumed session)
        self._skip_resume_reset = skip_resume_reset
        self._file: TextIO | None = None

    @classmethod
    def new(cls, directory: Path, session_id: str, cwd: str, model: str) -> SessionStore:
        header: dict[str, object] = {
            "type": "session",
            "version": STORE_VERSION,
            "session_id": session_id,
            "cwd": cwd,
            "model": model,
            "created": time.time(),
        }
        return cls(directory / f"{session_id}.jsonl", header)

    @classmethod
    def resuming(cls, loaded: LoadedSession) -> SessionStore:
        """Appends to a loaded session; the resume base is written only if repair changed the history."""
        return cls(loaded.path, None, skip_resume_reset=not loaded.repaired)

    def appended(self, message: Message) -> None:
        self._write({"type": "message", "time": time.time(), "message": encode_message(message)})

    def reset(self, history: Sequence[Message], reason: str) -> None:
        if reason == "resume" and self._skip_resume_reset:
            self._skip_resume_reset = False
            return  # the file already holds exactly this history
        history_data = [encode_message(message) for message in history]
        self._write({"type": "reset", "time": time.time(), "reason": reason, "history": history_data})

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _write(self, record: dict[str, object]) -> None:
        handle = self._file or self._open()
        handle.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        handle.flush()

    def _open(self) -> TextIO:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self._header is None:
            _drop_partial_line(self.path)
        handle = self.path.open("a", encoding="utf-8")
        if self._header is not None:
            handle.write(json.dumps(self._header, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._file = handle
        return handle


def _drop_partial_line(path: Path) -> None:
    """A process killed mid-write leaves a line without its newline: cut it before appending."""
    with path.open("rb+") as handle:
        data = handle.read()
        if data and not data.endswith(b"\n"):
            handle.truncate(data.rfind(b"\n") + 1)


# --- reading --------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class LoadedSession:
    path: Path
    session_id: str
    cwd: str
    history: list[Message]
    repaired: bool  # tool calls left without results were answered as interrupted


def _records(path: Path) -> Iterator[dict[str, Any]]:
    """Every complete record; a line that is not JSON (a write cut by a kill) is skipped."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                yield cast(dict[str, Any], record)


def load(path: Path) -> LoadedSession:
    """The history to resume from: the last reset's history plus the messages recorded after it, repaired."""
    header: dict[str, Any] = {}
    history: list[Message] = []
    try:
        for record in _records(path):
            kind = record.get("type")
            if kind == "session":
                header = record
            elif kind == "reset":
                history = [decode_message(data) for data in record["history"]]
            elif kind == "message":
                history.append(decode_message(record["message"]))
    except (OSError, KeyError, TypeError, ValueError) as error:
        raise UsageError(f"cannot read session {path}: {error}") from None
    repaired = repair(history)
    session_id = str(header.get("session_id") or path.stem)
    return LoadedSession(path, session_id, str(header.get("cwd", "")), repaired, repaired != history)


def repair(history: Sequence[Message]) -> list[Message]:
    """Answers every tool_use that has no tool_result in the next message, so the API accepts the history."""
    fixed: list[Message] = []
    index = 0
    while index < len(history):
        message = history[index]
        fixed.append(message)
        index += 1
        uses = message.tool_uses if message.role == "assistant" else ()
        if not uses:
            continue
        following = history[index] if index < len(history) and history[index].role == "user" else None
        results = {b.tool_use_id: b for b in following.content if isinstance(b, ToolResult)} if following else {}
        if all(use.id in results for use in uses):
            continue
        answered = tuple(results.get(use.id) or ToolResult(use.id, (Text(INTERRUPTED),), True) for use in uses)
        rest = tuple(b for b in following.content if not isinstance(b, ToolResult)) if following else ()
        fixed.append(Message("user", answered + rest))
        if following is not None:
            index += 1  # replaced by the repaired message
    return fixed


# --- finding and listing --------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SessionInfo:
    session_id: str
    cwd: str
    first_prompt: str
    turns: int  # user prompts
    last_activity: float  # seconds since the epoch
    path: Path


def _session_files(directory: Path) -> list[Path]:
    """Newest activity first."""
    try:
        files = [path for path in directory.glob("*.jsonl") if path.is_file()]
    except OSError:
        return []
    return sorted(files, key=lambda path: path.stat().st_mtime, reverse=True)


def _header(path: Path) -> dict[str, Any]:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            record = json.loads(handle.readline() or "{}")
    except (OSError, ValueError):
        return {}
    return cast(dict[str, Any], record) if isinstance(record, dict) else {}


def find(directory: Path, id_prefix: str) -> Path:
    """The session whose id is `id_prefix` or starts with it; anything else is a usage error."""
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
        if _header(path).get("cwd") == cwd:
            return path
    raise UsageError(f"no session to continue in {cwd} (sprout-agent sessions lists them)")


def describe(path: Path) -> SessionInfo:
    """One line of `sprout-agent sessions`: counts the user prompts recorded as messages."""
    header: dict[str, Any] = {}
    first, turns = "", 0
    for record in _records(path):
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


def list_sessions(directory: Path, cwd: str | None = None) -> list[SessionInfo]:
    """Every session, newest activity first; only those started in `cwd` when it is given."""
    paths = _session_files(directory)
    if cwd is not None:
        paths = [path for path in paths if _header(path).get("cwd") == cwd]
    return [describe(path) for path in paths]


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
