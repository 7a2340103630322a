"""A transcript read back for export (ATIF, Claude Code's session format): its messages in the order they were
recorded, each model reply with the usage, model and cost its `reply` record gave, and the session's totals."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from sprout_agent.session.store import records

Json = dict[str, Any]
REPLY = "reply"  # the record session/recording.py writes before each model reply's message


@dataclass(frozen=True, slots=True)
class Reply:
    """One model response's facts, as the `reply` record holds them (the usage in the Messages API's names)."""

    message_id: str
    model: str
    usage: Json
    cost_usd: float
    stop_reason: str

    @property
    def prompt_tokens(self) -> int:
        """Everything the request put in the window: fresh input plus cached reads and writes."""
        return _int(self.usage, "input_tokens") + self.cached_tokens + _int(self.usage, "cache_creation_input_tokens")

    @property
    def cached_tokens(self) -> int:
        return _int(self.usage, "cache_read_input_tokens")

    @property
    def completion_tokens(self) -> int:
        return _int(self.usage, "output_tokens")


@dataclass(frozen=True, slots=True)
class Said:
    """One recorded message: a prompt, a model reply (with its `Reply` when recorded), or tool results."""

    role: str  # user | assistant
    content: list[Json]  # blocks in the store's encoding (session/store.py)
    time: float | None
    reply: Reply | None = None


@dataclass
class Recorded:
    session_id: str
    cwd: str = ""
    model: str = ""
    created: float | None = None
    cost_usd: float | None = None  # the session's spend, compaction included (the last `cost` record)
    said: list[Said] = field(default_factory=list[Said])
    replies: list[Reply] = field(default_factory=list[Reply])  # every reply, matched to a message or not


def read(path: Path) -> Recorded:
    """The transcript at `path`; a compaction's or an edited call's `reset` replaces nothing here: an export shows
    what happened, in order, as the HTML page does."""
    found = Recorded(path.stem)
    pending: Reply | None = None
    for record in records(path):
        kind, when = record.get("type"), _number(record.get("time"))
        if kind == "session":
            found.session_id = str(record.get("session_id") or found.session_id)
            found.cwd, found.model = str(record.get("cwd", "")), str(record.get("model", ""))
            found.created = _number(record.get("created"))
        elif kind == REPLY:
            pending = _reply(record)
            found.replies.append(pending)
        elif kind == "message" and isinstance(message := record.get("message"), dict):
            said = _said(cast(Json, message), when, pending)
            pending = None
            if said.content:
                found.said.append(said)
        elif kind == "tool_result" and isinstance(result := record.get("result"), dict):
            found.said.append(Said("user", [cast(Json, result)], when))
        elif kind == "cost":
            found.cost_usd = _number(record.get("total_usd"))
    return found


def iso(when: float | None) -> str | None:
    return datetime.fromtimestamp(when, UTC).isoformat().replace("+00:00", "Z") if when is not None else None


def text_of(blocks: Iterable[Json]) -> str:
    """The text blocks' text, joined (images and the rest are left out)."""
    return "\n\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text" and b.get("text"))


def _said(message: Json, when: float | None, pending: Reply | None) -> Said:
    role = "assistant" if message.get("role") == "assistant" else "user"
    raw: object = message.get("content")
    content = [cast(Json, b) for b in cast(list[object], raw) if isinstance(b, dict)] if isinstance(raw, list) else []
    return Said(role, content, when, pending if role == "assistant" else None)


def _reply(record: Json) -> Reply:
    usage: object = record.get("usage")
    return Reply(
        str(record.get("message_id", "")),
        str(record.get("model", "")),
        cast(Json, usage) if isinstance(usage, dict) else {},
        _number(record.get("cost_usd")) or 0.0,
        str(record.get("stop_reason", "")),
    )


def _int(data: Json, key: str) -> int:
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
