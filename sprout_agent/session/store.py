"""Session transcripts: one append-only JSONL file per session (header, messages, resets); load for resume.

Format (version 1), one JSON object per line:
  {"type": "session", "version": 1, "session_id", "cwd", "model", "created"}   first line
  {"type": "message", "time", "message": {"role", "content": [block, …]}}      one per appended message
  {"type": "tool_result", "time", "result": block}                            one call's result, when known
  {"type": "reset", "time", "reason", "history": [message, …]}                 the history was replaced

A tool batch's results are recorded one by one as the calls finish (a kill loses none that finished); the
batch's user message then records only what was not yet written (the calls cut short). Load rebuilds one
user message from them, in the calls' order. Files are 0600 in a 0700 directory; a writer holds an
exclusive flock on its file, so two runs never append to one transcript.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, assert_never, cast

from sprout_agent.core.errors import StoreError, UsageError
from sprout_agent.core.images import checked
from sprout_agent.core.messages import (
    Block,
    Image,
    Message,
    RedactedThinking,
    ServerToolResult,
    ServerToolUse,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
)
from sprout_agent.trust.private_files import open_private, private_directory

STORE_VERSION = 1
INTERRUPTED = "interrupted: the session ended before this tool call finished"


# --- messages as JSON ---------------------------------------------------------------------------------
def encode_block(block: Block) -> dict[str, object]:
    match block:
        case Text():
            return {"type": "text", "text": block.text}
        case Image():
            return {"type": "image", "media_type": block.media_type, "data": block.data}
        case ToolUse():
            return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
        case Thinking():  # verbatim: a resumed session sends it back and the API checks the signature
            return {
                "type": "thinking",
                "thinking": block.thinking,
                "signature": block.signature,
                "model": block.model,
            }
        case RedactedThinking():
            return {"type": "redacted_thinking", "data": block.data, "model": block.model}
        case ServerToolUse():
            return {"type": "server_tool_use", "id": block.id, "name": block.name, "input": block.input}
        case ServerToolResult():  # the JSON text as it came: a resumed session sends it back unchanged
            return {
                "type": "server_tool_result",
                "tool_use_id": block.tool_use_id,
                "kind": block.kind,
                "raw": block.raw,
            }
        case ToolResult():
            content = [encode_block(part) for part in block.content]
            return {
                "type": "tool_result",
                "tool_use_id": block.tool_use_id,
                "content": content,
                "is_error": block.is_error,
            }
        case _:
            assert_never(block)


def encode_message(message: Message) -> dict[str, object]:
    return {"role": message.role, "content": [encode_block(block) for block in message.content]}


def decode_block(data: dict[str, Any]) -> Block:
    kind = data["type"]
    if kind == "text":
        return Text(str(data["text"]))
    if kind == "image":  # checked again: a transcript from before the check may hold one the API refuses
        return checked(Image(str(data["media_type"]), str(data["data"])), documents=True)
    if kind == "tool_use":
        return ToolUse(str(data["id"]), str(data["name"]), dict(data["input"]))
    if kind == "thinking":
        return Thinking(str(data["thinking"]), str(data["signature"]), str(data.get("model", "")))
    if kind == "redacted_thinking":
        return RedactedThinking(str(data["data"]), str(data.get("model", "")))
    if kind == "server_tool_use":
        return ServerToolUse(str(data["id"]), str(data["name"]), dict(data["input"]))
    if kind == "server_tool_result":
        return ServerToolResult(str(data["tool_use_id"]), str(data["kind"]), str(data["raw"]))
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

    A new session's file is created at the first record, so a session that never got a prompt leaves
    nothing; a resumed one is opened (and locked) at once, so a second run on it fails before it starts.
    Flushed, not fsynced: a killed process (SIGKILL, crash) loses nothing; only an OS crash could.
    A write that fails (unwritable directory, full disk) raises `StoreError`: the run ends with one line.
    """

    def __init__(
        self,
        path: Path,
        header: dict[str, object] | None,
        *,
        skip_resume_reset: bool = False,
        private_dir: bool = False,
    ) -> None:
        self.path = path
        self._header = header  # None: the file exists already (a resumed session)
        self._skip_resume_reset = skip_resume_reset
        self._private_dir = private_dir  # the parent is our sessions directory: keep it 0700
        self._file: TextIO | None = None
        self._early: set[str] = set()  # results recorded one by one; their batch message is still to come

    @classmethod
    def new(
        cls, directory: Path, session_id: str, cwd: str, model: str, about: Mapping[str, str] | None = None
    ) -> SessionStore:
        """A new transcript; `about` adds fields to its header (a subagent's type and its parent's call)."""
        header: dict[str, object] = {
            **(about or {}),
            "type": "session",
            "version": STORE_VERSION,
            "session_id": session_id,
            "cwd": cwd,
            "model": model,
            "created": time.time(),
        }
        store = cls(directory / f"{session_id}.jsonl", header, private_dir=True)
        try:
            private_directory(directory)  # an unwritable one fails the run now, before any server starts
        except OSError as error:
            raise store._unwritable(error) from None
        return store

    @classmethod
    def resuming(cls, loaded: LoadedSession) -> SessionStore:
        """Appends to a loaded session (locked now); the base is written only if repair changed the history."""
        store = cls(loaded.path, None, skip_resume_reset=not loaded.repaired, private_dir=True)
        store._open()
        return store

    @classmethod
    def existing(cls, path: Path) -> SessionStore:
        """A recorded session opened (and locked) to add records of another part (`sessions rewind`): a run that
        holds it makes this a usage error, as a second resume would."""
        store = cls(path, None, private_dir=True)
        store._open()
        return store

    def appended(self, message: Message) -> None:
        early, self._early = self._early, set()
        if early:  # what the batch's results already recorded is not written twice
            rest = tuple(b for b in message.content if not (isinstance(b, ToolResult) and b.tool_use_id in early))
            if not rest:
                return
            message = Message(message.role, rest)
        self._write({"type": "message", "time": time.time(), "message": encode_message(message)})

    def result(self, result: ToolResult) -> None:
        self._write({"type": "tool_result", "time": time.time(), "result": encode_block(result)})
        self._early.add(result.tool_use_id)

    def reset(self, history: Sequence[Message], reason: str) -> None:
        if reason == "resume" and self._skip_resume_reset:
            self._skip_resume_reset = False
            return  # the file already holds exactly this history
        history_data = [encode_message(message) for message in history]
        self._write({"type": "reset", "time": time.time(), "reason": reason, "history": history_data})

    def spent(self, total_usd: float) -> None:
        """The session's spend so far, all runs (after each turn): a resumed session's cost line goes on from it."""
        self._write({"type": "cost", "time": time.time(), "total_usd": round(total_usd, 6)})

    def mark(self, record: dict[str, object]) -> int:
        """Writes a record of another part (a turn's checkpoint: checkpoints/timeline.py) and returns the offset it
        starts at: the transcript before that offset is the conversation as it was then."""
        handle = self._file or self._open()
        handle.flush()
        offset = os.fstat(handle.fileno()).st_size  # appending: the next record starts at the end
        self._write({**record, "time": record.get("time", time.time())})
        return offset

    def close(self) -> None:
        """Closes the file, which releases the lock; a flush that fails here was reported by the write."""
        handle, self._file = self._file, None
        if handle is not None:
            with contextlib.suppress(OSError):
                handle.close()

    def _write(self, record: dict[str, object]) -> None:
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        handle = self._file or self._open()
        try:
            handle.write(line)
            handle.flush()
        except OSError as error:
            raise self._unwritable(error) from None

    def _open(self) -> TextIO:
        try:
            fd = self._open_fd()
        except OSError as error:
            raise self._unwritable(error) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise UsageError(
                f"session {self.path.stem} is in use by another sprout-agent run: wait for it to end, "
                "or start a new session"
            ) from None
        if self._header is None:
            try:
                _drop_partial_line(self.path)
            except OSError as error:
                os.close(fd)
                raise self._unwritable(error) from None
        # backslashreplace: a lone surrogate (from a tool or the model) is written as its JSON escape,
        # which reads back as the same string, instead of failing the write.
        handle = os.fdopen(fd, "a", encoding="utf-8", errors="backslashreplace")
        self._file = handle
        if self._header is not None:
            self._write(self._header)
        return handle

    def _open_fd(self) -> int:
        """The file, 0600 (transcripts hold prompts, file contents and command output), in a 0700 directory."""
        if self._private_dir:
            return open_private(self.path)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(fd, 0o600)  # an older transcript, resumed
        return fd

    def _unwritable(self, error: OSError) -> StoreError:
        return StoreError(f"cannot write the session transcript {self.path}: {error.strerror or error}")


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
    cost_usd: float = 0.0  # what the session's earlier runs spent (its last `cost` record)


def records(path: Path) -> Iterator[dict[str, Any]]:
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
    """The history to resume from: the last reset's history plus what was recorded after it, repaired."""
    header: dict[str, Any] = {}
    history = _History()
    spent = 0.0
    try:
        for record in records(path):
            kind = record.get("type")
            if kind == "session":
                header = record
            elif kind == "reset":
                history.reset([decode_message(data) for data in record["history"]])
            elif kind == "message":
                history.message(decode_message(record["message"]))
            elif kind == "tool_result" and isinstance(result := decode_block(record["result"]), ToolResult):
                history.result(result)
            elif kind == "cost" and isinstance(total := record.get("total_usd"), int | float):
                spent = float(total)
    except (OSError, KeyError, TypeError, ValueError, AttributeError, RecursionError) as error:
        raise UsageError(f"cannot read session {path}: {error}") from None
    loaded = history.done()
    repaired = repair(loaded)
    session_id = str(header.get("session_id") or path.stem)
    return LoadedSession(path, session_id, str(header.get("cwd", "")), repaired, repaired != loaded, spent)


class _History:
    """Rebuilds the history from records: results recorded one by one become one user message, in call order."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._results: list[ToolResult] | None = None  # the batch being recorded result by result

    def reset(self, history: list[Message]) -> None:
        self._results = None
        self.messages = history

    def result(self, result: ToolResult) -> None:
        self._results = [*(self._results or []), result]

    def message(self, message: Message) -> None:
        if self._results is not None and message.role == "user":  # the batch's rest: the calls cut short
            blocks, self._results = [*self._results, *message.content], None
            self.messages.append(self._in_call_order(blocks))
            return
        self._close()
        self.messages.append(message)

    def done(self) -> list[Message]:
        self._close()
        return self.messages

    def _close(self) -> None:
        if self._results is not None:
            blocks, self._results = list[Block](self._results), None
            self.messages.append(self._in_call_order(blocks))

    def _in_call_order(self, blocks: list[Block]) -> Message:
        calls = self.messages[-1].tool_uses if self.messages and self.messages[-1].role == "assistant" else ()
        order = {use.id: index for index, use in enumerate(calls)}
        results = sorted(
            (b for b in blocks if isinstance(b, ToolResult)), key=lambda b: order.get(b.tool_use_id, len(order))
        )
        return Message("user", (*results, *(b for b in blocks if not isinstance(b, ToolResult))))


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
