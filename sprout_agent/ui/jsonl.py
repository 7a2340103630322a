"""`--output-format json|stream-json` and `--input-format stream-json`: the contract for scripts.

One JSON object per line on stdout, described in docs/stream-json.md and docs/stream-json.schema.json.
Stdlib only.
"""

from __future__ import annotations

import binascii
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO, assert_never, cast

from sprout_agent import events as ev
from sprout_agent.events import Event
from sprout_agent.images import MAX_PDF_BASE64_BYTES, attachment
from sprout_agent.messages import Image, Usage
from sprout_agent.sandboxing import SandboxPlan

SCHEMA_VERSION = 1
INTERRUPTED = "interrupted: the run ended before this tool call finished"
Record = dict[str, object]


@dataclass(frozen=True, slots=True)
class ServerInfo:
    name: str
    status: str  # starting | running | failed | dead
    tools: int
    hooks: int
    error: str
    transport: str = "stdio"  # stdio | http | sse


@dataclass(frozen=True, slots=True)
class InitInfo:
    session_id: str
    model: str
    cwd: str
    servers: Sequence[ServerInfo]
    tools: Sequence[str]  # names the model sees
    hooks: Sequence[tuple[str, str]]  # (server, hook) for allowlisted servers
    resumed: bool
    sandbox: Mapping[str, object] = field(default_factory=lambda: SandboxPlan.off().record())
    context_window: int = 0  # tokens, from the Models API (or the table/default when it cannot say)


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


# Events whose content init already carries (server start-up).
_FOLDED_INTO_INIT = (ev.ServerStarted, ev.ServerFailed)


class JsonlSink:
    """Event sink for scripts. stream-json: `init`, one line per event, `result` last. json: `result` only.

    Events that arrive before `init` (servers starting, config notices) wait and follow it, so a
    reader can rely on `init` being the first line whenever a session started.
    """

    def __init__(self, out: TextIO, *, stream: bool, progress: bool = False) -> None:
        self.out = out
        self.stream = stream
        self.progress = progress  # `tool_progress` lines (--verbose): a live view wants them, a script does not
        self.session_id: str | None = None
        self._initialised = False
        self._pending: list[Event] = []
        self._open_calls: dict[str, tuple[str, str, float]] = {}  # call id → (name, server, started), until finished
        self._finished = False
        self._thought: list[str] = []  # thinking deltas, written as one `thinking` line when the block ends

    def __call__(self, event: Event) -> None:
        if not self.stream or self._finished:
            return
        if not self._initialised:
            if not isinstance(event, _FOLDED_INTO_INIT):
                self._pending.append(event)
            return
        if isinstance(event, ev.ThinkingDelta):
            self._thought.append(event.text)
            return
        self._flush_thought()
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
                    {
                        "name": s.name,
                        "status": s.status,
                        "transport": s.transport,
                        "tools": s.tools,
                        "hooks": s.hooks,
                        "error": s.error,
                    }
                    for s in info.servers
                ],
                "tools": list(info.tools),
                "hooks": [{"server": server, "hook": hook} for server, hook in info.hooks],
                "sandbox": dict(info.sandbox),
                "context_window": info.context_window,
            }
        )
        pending, self._pending = self._pending, []
        for event in pending:
            self(event)

    def result(self, info: ResultInfo) -> None:
        """The last line; written once. A stream that never reached `init` gets only this line."""
        if self._finished:
            return
        # A call cut short by a signal or an error never finished on its own: every tool_started gets its end.
        for call_id, (name, server, started) in list(self._open_calls.items()):
            self._write(_tool_finished(call_id, name, server, True, time.monotonic() - started, INTERRUPTED))
        self._open_calls.clear()
        self._finished = True
        write_record(self.out, result_record(info))

    def _flush_thought(self) -> None:
        if self._thought:
            self._write({"type": "thinking", "text": "".join(self._thought)})
            self._thought = []

    def _write(self, record: Record) -> None:
        write_record(self.out, {"type": record.pop("type"), "session_id": self.session_id, **record})

    def _record(self, event: Event) -> Record | None:  # noqa: C901 - one arm per event type, checked exhaustive
        match event:
            case ev.ModelWaiting() | ev.TextDelta() | ev.ToolRunning() | ev.ThinkingDelta():
                return None  # they drive a spinner; `assistant` and `tool_finished` carry the content
            case ev.Notice():
                return {"type": "notice", "level": event.level, "text": event.text}
            case ev.ServerStarted():
                return {
                    "type": "server_started",
                    "server": event.server,
                    "tools": event.tool_count,
                    "hooks": event.hook_count,
                    "duration_ms": _ms(event.seconds),
                }
            case ev.ServerFailed():
                return {
                    "type": "server_failed",
                    "server": event.server,
                    "reason": event.reason,
                    "stderr_tail": event.stderr_tail,
                }
            case ev.ListChanged():
                return {
                    "type": "list_changed",
                    "server": event.server,
                    "kind": event.kind,
                    "count": event.count,
                    "added": list(event.added),
                    "removed": list(event.removed),
                }
            case ev.ServerLog():
                return {"type": "server_log", "server": event.server, "level": event.level, "text": event.text}
            case ev.AssistantText():
                return {"type": "assistant", "text": event.text}
            case ev.ModelReplied():
                return {
                    "type": "model_response",
                    "stop_reason": event.stop_reason,
                    "usage": usage_record(event.usage),
                    "duration_ms": _ms(event.seconds),
                }
            case ev.ApiRetry():
                return {
                    "type": "api_retry",
                    "attempt": event.attempt,
                    "reason": event.reason,
                    "delay_ms": _ms(event.delay),
                }
            case ev.ToolStarted():
                self._open_calls[event.call_id] = (event.name, event.server, time.monotonic())
                return {
                    "type": "tool_started",
                    "id": event.call_id,
                    "name": event.name,
                    "server": event.server,
                    "tool": event.tool,
                    "arguments": event.arguments,
                }
            case ev.ToolProgress():
                return {"type": "tool_progress", "id": event.call_id, "tail": event.tail} if self.progress else None
            case ev.ToolFinished():
                _, server, _ = self._open_calls.pop(event.call_id, ("", "", 0.0))
                record = _tool_finished(event.call_id, event.name, server, event.is_error, event.seconds, event.summary)
                if event.diff:
                    record["diff"] = event.diff
                return record
            case (
                ev.HookCalled()
                | ev.HookObjected()
                | ev.HookInjected()
                | ev.HookTimedOut()
                | ev.HookFailed()
                | ev.HookServerKilled()
                | ev.StopBudgetSpent()
                | ev.HookAnswered()
                | ev.HookBudgetSpent()
            ):
                return _hook_record(event)
            case ev.CompactionStarted():
                return {"type": "compaction_started", "reason": event.reason, "tokens_before": event.tokens_before}
            case ev.CompactionFinished():
                return {
                    "type": "compaction_finished",
                    "ok": event.ok,
                    "tokens_before": event.tokens_before,
                    "tokens_after": event.tokens_after,
                    "detail": event.detail,
                }
            case ev.ServerAsked():
                return {
                    "type": "server_request",
                    "server": event.server,
                    "kind": event.kind,
                    "message": event.message,
                    "outcome": event.outcome,
                    "detail": event.detail,
                }
            case ev.TurnFinished():
                return {
                    "type": "turn_finished",
                    "stop_reason": event.stop_reason,
                    "text": event.text,
                    "turns": event.turns,
                    "usage": usage_record(event.usage),
                }
            case _:
                assert_never(event)


def _tool_finished(call_id: str, name: str, server: str, is_error: bool, seconds: float, result: str) -> Record:
    return {
        "type": "tool_finished",
        "id": call_id,
        "name": name,
        "server": server,
        "is_error": is_error,
        "duration_ms": _ms(seconds),
        "result": result,
    }


def _hook_record(event: ev.HookEvent) -> Record:
    match event:
        case ev.HookCalled():
            return {"type": "hook_called", "hook": event.hook, "servers": list(event.servers)}
        case ev.HookObjected():
            return {"type": "hook_objected", "hook": event.hook, "server": event.server, "text": event.text}
        case ev.HookInjected():
            return {"type": "hook_injected", "hook": event.hook, "server": event.server, "text": event.text}
        case ev.HookTimedOut():
            return {
                "type": "hook_timed_out",
                "hook": event.hook,
                "server": event.server,
                "consecutive": event.consecutive,
            }
        case ev.HookFailed():
            return {"type": "hook_failed", "hook": event.hook, "server": event.server, "reason": event.reason}
        case ev.HookServerKilled():
            return {"type": "hook_server_killed", "server": event.server, "reason": event.reason}
        case ev.StopBudgetSpent():
            return {"type": "stop_budget_spent", "rejections": event.rejections}
        case ev.HookAnswered():
            return {"type": "hook_answered", "hook": event.hook, "server": event.server, "text": event.text}
        case ev.HookBudgetSpent():
            return {"type": "hook_budget_spent", "hook": event.hook, "objections": event.objections}
        case _:
            assert_never(event)


# --- input ------------------------------------------------------------------------------------------------
def parse_user_line(line: str | bytes) -> str:
    """One stdin line of `--input-format stream-json` → the user's text; ValueError says what is wrong."""
    return parse_user_message(line)[0]


def parse_user_message(line: str | bytes) -> tuple[str, tuple[Image, ...]]:
    """One stdin line → the user's text and attached images/PDFs; ValueError says what is wrong.

    Accepts Claude Code's `{"type": "user", "message": {"role": "user", "content": "…" | [blocks]}}` (text,
    image and document blocks with a base64 source, checked as the API checks them) and the shorter
    `{"type": "user", "text": "…"}`.
    """
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"not UTF-8 text (byte {error.start} is 0x{line[error.start]:02x})") from None
    try:
        data = json.loads(line)
    except ValueError as error:
        raise ValueError(f"not JSON: {error}") from None
    except RecursionError:  # json's parser recurses per `[` or `{`
        raise ValueError("not JSON: nested too deeply") from None
    if not isinstance(data, dict) or cast(dict[str, Any], data).get("type") != "user":
        raise ValueError('expected an object with "type": "user"')
    record = cast(dict[str, Any], data)
    images: tuple[Image, ...] = ()
    if isinstance(record.get("text"), str):
        text: str = record["text"]
    else:
        message = record.get("message")
        if not isinstance(message, dict):
            raise ValueError('expected "text" or "message"')
        text, images = _content(cast(dict[str, Any], message).get("content"))
    if not text.strip() and not images:
        raise ValueError("the user message is empty")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a \ud800 escape: neither the API nor the transcript can carry it
        raise ValueError("the user message is not valid Unicode (a lone surrogate)") from None
    return text, images


def _content(content: object) -> tuple[str, tuple[Image, ...]]:
    if isinstance(content, str):
        return content, ()
    if not isinstance(content, list):
        raise ValueError('"message.content" must be a string or a list of text, image and document blocks')
    parts: list[str] = []
    images: list[Image] = []
    for index, item in enumerate(cast(list[object], content)):
        block = cast(dict[str, Any], item) if isinstance(item, dict) else {}
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind in ("image", "document"):
            images.append(_attached(block, f"message.content.{index}"))
        else:
            raise ValueError("only text, image and document blocks are supported in message.content")
    return "\n".join(parts), tuple(images)


def _attached(block: dict[str, Any], where: str) -> Image:
    """An image or document block with a base64 source, its bytes checked against the declared type."""
    raw_source = block.get("source")
    source = cast(dict[str, Any], raw_source) if isinstance(raw_source, dict) else {}
    data, declared = source.get("data"), source.get("media_type")
    if source.get("type") != "base64" or not isinstance(data, str) or not isinstance(declared, str):
        raise ValueError(f"{where}: a base64 source with media_type and data is required")
    if len(data) > MAX_PDF_BASE64_BYTES:
        raise ValueError(f"{where}: over the API's 32 MB request limit")
    try:
        raw = binascii.a2b_base64("".join(data.split()), strict_mode=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{where}: the data is not valid base64") from None
    checked = attachment(raw, declared)
    if isinstance(checked, str):
        raise ValueError(f"{where}: {checked}")
    return checked
