"""A transcript as a list of entries a page shows, one per thing that happened: a prompt, an answer, thinking, a
tool call with its result and time, a hook's decision, a compaction, the cost. Read from our session store's
records, or from a batch task's stream-json lines (Claude Code's shapes)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

from sprout_agent.core.hooks.contract import HOOK_CALL_ID_PREFIX
from sprout_agent.core.messages import Image, Message, Text, Thinking, ToolResult, ToolUse, text_of
from sprout_agent.faces.terminal.prompt_attach import without_attachments
from sprout_agent.session.store import decode_message, records

RESULT_CHARS = 20_000  # of a tool's result on a page (the transcript keeps all of it)


@dataclass
class Entry:
    kind: str  # prompt | answer | thinking | tool | hook | compaction | note
    text: str = ""
    name: str = ""  # a tool's or a hook's
    arguments: dict[str, object] = field(default_factory=dict[str, object])
    result: str = ""
    is_error: bool = False
    seconds: float | None = None
    diff: str = ""  # an edit's or a write's change, as unified lines
    call_id: str = ""
    subagent: Session | None = None  # the child a `task` call ran, from its own transcript


@dataclass
class Session:
    session_id: str
    cwd: str = ""
    model: str = ""
    created: float | None = None
    cost_usd: float | None = None
    entries: list[Entry] = field(default_factory=list[Entry])
    agent_type: str = ""  # a subagent's
    parent_call_id: str = ""  # a subagent's: the call of its parent that ran it

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def from_store(path: Path) -> Session:
    """Our transcript, in the order it was written (a compaction is a marker, not a replacement of the past), with
    each subagent's own transcript (`<id>.agents/`) under the call that ran it."""
    session = _read_store(path)
    children = _children(path.with_name(f"{path.stem}.agents"))
    _nest(session.entries, children)
    return session


MAX_CHILDREN = 500  # transcripts read from a session's `.agents` directory


def _children(directory: Path) -> dict[str, Session]:
    """The subagents' transcripts by the parent's call id their header names."""
    found: dict[str, Session] = {}
    try:
        paths = sorted(directory.glob("agent-*.jsonl"))[:MAX_CHILDREN]
    except OSError:
        return found
    for path in paths:
        child = _read_store(path)
        if child.parent_call_id and child.parent_call_id not in found:
            found[child.parent_call_id] = child
    return found


MAX_NESTING = 8  # subagents under subagents shown on a page (the runtime's depth is 1 unless raised)


def _nest(entries: list[Entry], children: dict[str, Session], depth: int = 1) -> None:
    """Puts each child under its call, and its own children under theirs. A child is taken once (popped), so a
    transcript naming itself as its parent cannot make a loop, and the nesting is bounded."""
    for entry in entries:
        if entry.kind == "tool" and depth <= MAX_NESTING and (child := children.pop(entry.call_id, None)):
            entry.subagent = child
            _nest(child.entries, children, depth + 1)


def _read_store(path: Path) -> Session:
    session = Session(path.stem)
    calls: dict[str, tuple[Entry, float | None]] = {}
    for record in records(path):
        kind, when = record.get("type"), record.get("time")
        if kind == "session":
            session.cwd, session.model = str(record.get("cwd", "")), str(record.get("model", ""))
            session.created = _number(record.get("created"))
            session.agent_type = str(record.get("agent_type", ""))
            session.parent_call_id = str(record.get("parent_tool_use_id", ""))
        elif kind == "message":
            _message(session, decode_message(record["message"]), _number(when), calls)
        elif kind == "tool_result":
            message = decode_message({"role": "user", "content": [record["result"]]})
            _message(session, message, _number(when), calls)
        elif kind == "reset" and record.get("reason") in ("compaction", "prompt too long"):
            session.entries.append(Entry("compaction", text=str(record.get("reason"))))
        elif kind == "cost":
            session.cost_usd = _number(record.get("total_usd"))
    return session


def from_stream(path: Path) -> Session:
    """A batch task's stream-json lines: its messages, and its result's cost."""
    session = Session(path.stem)
    calls: dict[str, tuple[Entry, float | None]] = {}
    for line in _json_lines(path):
        kind = line.get("type")
        if kind == "system" and line.get("subtype") == "init":
            session.session_id = str(line.get("session_id", session.session_id))
            session.cwd, session.model = str(line.get("cwd", "")), str(line.get("model", ""))
        elif kind in ("assistant", "user") and isinstance(message := line.get("message"), dict):
            _message(session, decode_message(_ours(cast(dict[str, Any], message))), None, calls)
        elif kind == "result":
            session.cost_usd = _number(line.get("total_cost_usd"))
    return session


def _message(
    session: Session, message: Message, when: float | None, calls: dict[str, tuple[Entry, float | None]]
) -> None:
    for block in message.content:
        match block:
            case Text() if block.text.strip():
                said = without_attachments(block.text) if message.role == "user" else block.text
                session.entries.append(Entry("prompt" if message.role == "user" else "answer", text=said))
            case Thinking():
                session.entries.append(Entry("thinking", text=block.thinking))
            case ToolUse() if block.id.startswith(HOOK_CALL_ID_PREFIX):
                calls[block.id] = (Entry("hook", name=block.name.split("__", 1)[-1], call_id=block.id), when)
            case ToolUse():
                entry = Entry("tool", name=block.name, arguments=dict(block.input), call_id=block.id)
                entry.diff = _diff(block.name, block.input)
                calls[block.id] = (entry, when)
                session.entries.append(entry)
            case ToolResult():
                _result(session, block, when, calls)
            case Image():
                session.entries.append(Entry("note", text=f"[an image, {block.media_type}]"))
            case _:
                pass


def _result(
    session: Session, result: ToolResult, when: float | None, calls: dict[str, tuple[Entry, float | None]]
) -> None:
    found = calls.pop(result.tool_use_id, None)
    if found is None:
        return
    entry, started = found
    text = text_of(result.content)
    if entry.kind == "hook":
        entry.text = _hook_text(text)
        session.entries.append(entry)
        return
    entry.result = (
        text if len(text) <= RESULT_CHARS else text[:RESULT_CHARS] + f"\n… [{len(text) - RESULT_CHARS} more characters]"
    )
    entry.is_error = result.is_error
    entry.seconds = when - started if when is not None and started is not None else None


def _hook_text(text: str) -> str:
    try:
        data: object = json.loads(text)
    except ValueError:
        return text
    if not isinstance(data, dict):
        return text
    said = cast(dict[str, object], data)
    return f"{said.get('server', '?')}: {said.get('text', '')}"


def _diff(name: str, arguments: Mapping[str, object]) -> str:
    """An edit's or a write's change from its arguments (the transcript does not keep the tool's own diff)."""
    path = str(arguments.get("file_path", ""))
    if name.endswith("__edit") and isinstance(old := arguments.get("old_string"), str):
        new = arguments.get("new_string")
        lines = [f"--- {path}", f"+++ {path}", *(f"-{line}" for line in old.splitlines())]
        return "\n".join([*lines, *(f"+{line}" for line in str(new or "").splitlines())])
    if name.endswith("__write") and isinstance(content := arguments.get("content"), str):
        return "\n".join([f"+++ {path}", *(f"+{line}" for line in content.splitlines()[:400])])
    return ""


def _ours(message: dict[str, Any]) -> dict[str, Any]:
    """An API-shaped message (stream-json) in our transcript's encoding, which decode_message reads."""
    content: object = message.get("content")
    blocks = (
        cast(list[object], content) if isinstance(content, list) else [{"type": "text", "text": str(content or "")}]
    )
    return {"role": message.get("role", "user"), "content": [b for b in blocks if isinstance(b, dict)]}


def _json_lines(path: Path) -> Iterator[dict[str, Any]]:
    try:
        lines: Iterable[str] = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return
    for line in lines:
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            yield data


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
