"""`--output-format json|stream-json` and `--input-format stream-json`: the contract for scripts.

One JSON object per line on stdout, described in docs/stream-json.md and docs/stream-json.schema.json.
Stdlib only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO, cast

from sprout_agent import events as ev
from sprout_agent.events import Event
from sprout_agent.messages import Usage

SCHEMA_VERSION = 1
Record = dict[str, object]


@dataclass(frozen=True, slots=True)
class ServerInfo:
    name: str
    status: str  # starting | running | failed | dead
    tools: int
    hooks: int
    error: str


@dataclass(frozen=True, slots=True)
class InitInfo:
    session_id: str
    model: str
    cwd: str
    servers: Sequence[ServerInfo]
    tools: Sequence[str]  # names the model sees
    hooks: Sequence[tuple[str, str]]  # (server, hook) for allowlisted servers
    resumed: bool


@dataclass(frozen=True, slots=True)
class ResultInfo:
    text: str
    stop_reason: str
    session_id: str | None  # None: the run failed before a session existed
    turns: int
    usage: Usage
    cost_usd: float
    duration_ms: int
    exit_code: int
    errors: Sequence[str]


def usage_record(usage: Usage) -> Record:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
    }


def result_record(info: ResultInfo) -> Record:
    return {
        "type": "result",
        "schema_version": SCHEMA_VERSION,
        "session_id": info.session_id,
        "result": info.text,
        "stop_reason": info.stop_reason,
        "is_error": info.exit_code != 0,
        "exit_code": info.exit_code,
        "turns": info.turns,
        "usage": usage_record(info.usage),
        "cost_usd": round(info.cost_usd, 6),
        "duration_ms": info.duration_ms,
        "errors": list(info.errors),
    }


def report_early_error(output_format: str, message: str, exit_code: int, out: TextIO) -> None:
    """A usage or config error before any session started: json and stream-json still get a `result`."""
    if output_format in ("json", "stream-json"):
        write_record(out, result_record(ResultInfo("", "error", None, 0, Usage(), 0.0, 0, exit_code, [message])))


def write_record(out: TextIO, record: Record) -> None:
    out.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
    out.flush()


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


# Events whose content init already carries (server start-up), or that only drive a spinner.
_NOT_STREAMED = (ev.ModelWaiting, ev.TextDelta)
_FOLDED_INTO_INIT = (ev.ServerStarted, ev.ServerFailed)


class JsonlSink:
    """Event sink for scripts. stream-json: `init`, one line per event, `result` last. json: `result` only.

    Events that arrive before `init` (servers starting, config notices) wait and follow it, so a
    reader can rely on `init` being the first line whenever a session started.
    """

    def __init__(self, out: TextIO, *, stream: bool) -> None:
        self.out = out
        self.stream = stream
        self.session_id: str | None = None
        self._initialised = False
        self._pending: list[Event] = []
        self._tool_servers: dict[str, str] = {}
        self._finished = False

    def __call__(self, event: Event) -> None:
        if not self.stream or self._finished or isinstance(event, _NOT_STREAMED):
            return
        if not self._initialised:
            if not isinstance(event, _FOLDED_INTO_INIT):
                self._pending.append(event)
            return
        record = self._record(event)
        if record is not None:
            self._write(record)

    def init(self, info: InitInfo) -> None:
        self.session_id = info.session_id
        if not self.stream or self._initialised:
            return
        self._initialised = True
        self._write(
            {
                "type": "init",
                "schema_version": SCHEMA_VERSION,
                "model": info.model,
                "cwd": info.cwd,
                "resumed": info.resumed,
                "servers": [
                    {"name": s.name, "status": s.status, "tools": s.tools, "hooks": s.hooks, "error": s.error}
                    for s in info.servers
                ],
                "tools": list(info.tools),
                "hooks": [{"server": server, "hook": hook} for server, hook in info.hooks],
            }
        )
        pending, self._pending = self._pending, []
        for event in pending:
            self(event)

    def result(self, info: ResultInfo) -> None:
        """The last line; written once. A stream that never reached `init` gets only this line."""
        if self._finished:
            return
        self._finished = True
        write_record(self.out, result_record(info))

    def _write(self, record: Record) -> None:
        write_record(self.out, {"type": record.pop("type"), "session_id": self.session_id, **record})

    def _record(self, event: Event) -> Record | None:
        if isinstance(event, ev.ToolStarted):
            self._tool_servers[event.call_id] = event.server
        elif isinstance(event, ev.ToolFinished):
            server = self._tool_servers.pop(event.call_id, "")
            return {
                "type": "tool_finished",
                "id": event.call_id,
                "name": event.name,
                "server": server,
                "is_error": event.is_error,
                "duration_ms": _ms(event.seconds),
                "result": event.summary,
            }
        convert = _CONVERTERS.get(type(event))
        return convert(event) if convert is not None else None


# Each event type's line; ToolFinished needs the sink's state and is built in `_record`.
_CONVERTERS: dict[type, Callable[[Any], Record]] = {
    ev.Notice: lambda e: {"type": "notice", "level": e.level, "text": e.text},
    ev.ServerStarted: lambda e: {
        "type": "server_started",
        "server": e.server,
        "tools": e.tool_count,
        "hooks": e.hook_count,
        "duration_ms": _ms(e.seconds),
    },
    ev.ServerFailed: lambda e: {
        "type": "server_failed",
        "server": e.server,
        "reason": e.reason,
        "stderr_tail": e.stderr_tail,
    },
    ev.AssistantText: lambda e: {"type": "assistant", "text": e.text},
    ev.ModelReplied: lambda e: {
        "type": "model_response",
        "stop_reason": e.stop_reason,
        "usage": usage_record(e.usage),
        "duration_ms": _ms(e.seconds),
    },
    ev.ApiRetry: lambda e: {
        "type": "api_retry",
        "attempt": e.attempt,
        "reason": e.reason,
        "delay_ms": _ms(e.delay),
    },
    ev.ToolStarted: lambda e: {
        "type": "tool_started",
        "id": e.call_id,
        "name": e.name,
        "server": e.server,
        "tool": e.tool,
        "arguments": e.arguments,
    },
    ev.HookCalled: lambda e: {"type": "hook_called", "hook": e.hook, "servers": list(e.servers)},
    ev.HookObjected: lambda e: {"type": "hook_objected", "hook": e.hook, "server": e.server, "text": e.text},
    ev.HookInjected: lambda e: {"type": "hook_injected", "hook": e.hook, "server": e.server, "text": e.text},
    ev.HookTimedOut: lambda e: {
        "type": "hook_timed_out",
        "hook": e.hook,
        "server": e.server,
        "consecutive": e.consecutive,
    },
    ev.HookFailed: lambda e: {"type": "hook_failed", "hook": e.hook, "server": e.server, "reason": e.reason},
    ev.HookServerKilled: lambda e: {"type": "hook_server_killed", "server": e.server, "reason": e.reason},
    ev.StopBudgetSpent: lambda e: {"type": "stop_budget_spent", "rejections": e.rejections},
    ev.CompactionStarted: lambda e: {
        "type": "compaction_started",
        "reason": e.reason,
        "tokens_before": e.tokens_before,
    },
    ev.CompactionFinished: lambda e: {
        "type": "compaction_finished",
        "ok": e.ok,
        "tokens_before": e.tokens_before,
        "tokens_after": e.tokens_after,
        "detail": e.detail,
    },
    ev.TurnFinished: lambda e: {
        "type": "turn_finished",
        "stop_reason": e.stop_reason,
        "text": e.text,
        "turns": e.turns,
        "usage": usage_record(e.usage),
    },
}


# --- input ------------------------------------------------------------------------------------------------
def parse_user_line(line: str) -> str:
    """One stdin line of `--input-format stream-json` → the user's text; ValueError says what is wrong.

    Accepts Claude Code's `{"type": "user", "message": {"role": "user", "content": "…" | [text blocks]}}`
    and the shorter `{"type": "user", "text": "…"}`.
    """
    try:
        data = json.loads(line)
    except ValueError as error:
        raise ValueError(f"not JSON: {error}") from None
    if not isinstance(data, dict) or cast(dict[str, Any], data).get("type") != "user":
        raise ValueError('expected an object with "type": "user"')
    record = cast(dict[str, Any], data)
    if isinstance(record.get("text"), str):
        text: str = record["text"]
    else:
        message = record.get("message")
        if not isinstance(message, dict):
            raise ValueError('expected "text" or "message"')
        text = _content_text(cast(dict[str, Any], message).get("content"))
    if not text.strip():
        raise ValueError("the user message is empty")
    return text


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ValueError('"message.content" must be a string or a list of text blocks')
    parts: list[str] = []
    for block in cast(list[object], content):
        if not isinstance(block, dict) or cast(dict[str, Any], block).get("type") != "text":
            raise ValueError("only text blocks are supported in message.content")
        parts.append(str(cast(dict[str, Any], block).get("text", "")))
    return "\n".join(parts)
