"""The stream-json lines in Claude Code's shapes (schema version 2): pure builders, one per line kind.

SDK clients (claude-agent-sdk, @anthropic-ai/claude-agent-sdk) read `system/init`, `assistant`, `user`,
`result` and `stream_event`; our own events are `system` lines with subtypes of ours, which they skip.
Stdlib only; docs/stream-json.md and docs/stream-json.schema.json describe every field.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TextIO, assert_never, cast

from sprout_agent import CLAUDE_CODE_PROTOCOL, __version__
from sprout_agent.config.files import Transport, listed_transport
from sprout_agent.config.provider import Provider, provider_record
from sprout_agent.config.sandboxing import SandboxPlan
from sprout_agent.core import events as ev
from sprout_agent.core.messages import (
    Block,
    Image,
    RedactedThinking,
    ServerToolResult,
    ServerToolUse,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Usage,
)
from sprout_agent.core.permission_mode import PermissionMode
from sprout_agent.core.stop_reasons import StopReason

SCHEMA_VERSION = 2
Record = dict[str, object]

# Our server states → Claude Code's mcp_servers statuses (connected, failed, needs-auth, pending, disabled).
MCP_STATUS = {
    "pending": "pending",  # a built-in server offered from its announced listing: it starts at its first call
    "running": "connected",
    "starting": "pending",
    "failed": "failed",
    "dead": "failed",
    "needs login": "needs-auth",
    "not approved": "disabled",
}
# Our stop reasons that end a turn early → the result subtypes Claude Code uses for them.
RESULT_SUBTYPE: dict[StopReason, str] = {
    "max_turns": "error_max_turns",
    "budget": "error_max_budget_usd",
    "error": "error_during_execution",
    "interrupted": "error_during_execution",
    "cancelled": "error_during_execution",
    "structured_output_retries": "error_max_structured_output_retries",  # --json-schema: no valid answer
}


@dataclass(frozen=True, slots=True)
class ServerInfo:
    name: str
    status: str  # ours: starting | running | failed | dead | needs login | not approved
    tools: int
    hooks: int
    error: str
    transport: Transport = "stdio"


@dataclass(frozen=True, slots=True)
class InitInfo:
    session_id: str
    model: str
    cwd: str
    servers: Sequence[ServerInfo]
    tools: Sequence[str]  # the SDK-facing names (mcp__server__tool)
    hooks: Sequence[tuple[str, str]]  # (server, hook) for allowlisted servers
    resumed: bool
    sandbox: Mapping[str, object] = field(default_factory=lambda: SandboxPlan.off().record())
    context_window: int = 0  # tokens, from the Models API (or the table/default when it cannot say)
    model_tools: Sequence[str] = ()  # the names the model sees (server__tool)
    permission_mode: PermissionMode = PermissionMode.AUTO  # as given; shown as Claude Code names it
    api_key_source: str = "none"  # apiKeyHelper | ANTHROPIC_API_KEY | none: where the key came from, never the value
    max_output_tokens: int = 0
    agents: Sequence[str] = ()  # the agent definitions' names (subagent types)
    slash_commands: Sequence[str] = ()  # the custom commands' names (a script sends them as prompts)
    provider: Mapping[str, object] = field(default_factory=lambda: provider_record(Provider()))  # where requests go
    output_style: str = "default"  # the settings' outputStyle


@dataclass(frozen=True, slots=True)
class ResultInfo:
    text: str
    stop_reason: StopReason
    session_id: str | None  # None: the run failed before a session existed
    turns: int  # model requests
    usage: Usage
    cost_usd: float  # the session's total so far
    duration_ms: int
    exit_code: int
    errors: Sequence[str]
    duration_api_ms: int = 0
    permission_denials: Sequence[Mapping[str, object]] = ()  # {tool_name, tool_use_id, tool_input}
    model_usage: Mapping[str, Mapping[str, object]] = field(default_factory=dict[str, Mapping[str, object]])
    structured_output: Mapping[str, object] | None = None  # --json-schema: the validated answer
    api_failed: bool = False  # the model API failed after retries
    api_error_status: int | None = None  # its last HTTP status (None: no answer)
    changes: ev.TurnChanges | None = None  # the turn's checkpoint and what it changed (None: none was taken)


def new_uuid() -> str:
    return str(uuid.uuid4())


def write_record(out: TextIO, record: Record) -> None:
    """One whole line in one write, flushed: lines from different writers never interleave on one stream."""
    try:
        out.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
    except UnicodeEncodeError:  # a lone surrogate from a server or the model: escaped, never a crash
        out.write(json.dumps(record, default=str) + "\n")
    out.flush()


def ms(seconds: float) -> int:
    return round(seconds * 1000)


def usage_record(usage: Usage) -> Record:
    """The Messages API's usage object."""
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "server_tool_use": {"web_search_requests": usage.web_searches, "web_fetch_requests": usage.web_fetches},
    }


def init_record(info: InitInfo) -> Record:
    return {
        "type": "system",
        "subtype": "init",
        "cwd": info.cwd,
        "model": info.model,
        "tools": list(info.tools),
        "mcp_servers": [
            {
                "name": s.name,
                "status": MCP_STATUS.get(s.status, "failed"),
                "state": s.status,
                "transport": listed_transport(s.transport),
                "tools": s.tools,
                "hooks": s.hooks,
                "error": s.error,
            }
            for s in info.servers
        ],
        "permissionMode": info.permission_mode.claude_name,
        "slash_commands": list(info.slash_commands),
        "apiKeySource": info.api_key_source,
        "output_style": info.output_style,
        "agents": list(info.agents),
        "skills": [],
        "plugins": [],
        # The SDKs read the protocol level from the leading x.y.z (and warn when there is none); the rest says
        # who speaks it. We do not claim to be Claude Code.
        "claude_code_version": f"{CLAUDE_CODE_PROTOCOL} (sprout-agent {__version__}, compatible)",
        "schema_version": SCHEMA_VERSION,
        "resumed": info.resumed,
        "model_tools": list(info.model_tools),
        "hooks": [{"server": server, "hook": hook} for server, hook in info.hooks],
        "sandbox": dict(info.sandbox),
        "context_window": info.context_window,
        "provider": dict(info.provider),
    }


def result_record(info: ResultInfo) -> Record:
    record: Record = {
        "type": "result",
        "subtype": RESULT_SUBTYPE.get(info.stop_reason, "success"),
        "is_error": info.exit_code != 0,
        "result": info.text,
        "num_turns": info.turns,
        "duration_ms": info.duration_ms,
        "duration_api_ms": info.duration_api_ms,
        "total_cost_usd": round(info.cost_usd, 6),
        "usage": usage_record(info.usage),
        "modelUsage": {model: dict(usage) for model, usage in info.model_usage.items()},
        "permission_denials": [dict(denial) for denial in info.permission_denials],
        "session_id": info.session_id,
        "uuid": new_uuid(),
        "schema_version": SCHEMA_VERSION,
        "stop_reason": info.stop_reason,
        "exit_code": info.exit_code,
        "errors": list(info.errors),
        "checkpoint": checkpoint_record(info.changes),
    }
    if info.structured_output is not None:  # as Claude Code: only a run with a valid structured answer has it
        record["structured_output"] = dict(info.structured_output)
    if info.api_failed:
        # Claude Code's shape for a failed API request, which the SDKs turn into their ResultError: subtype
        # `success` (the turn machinery ran), `is_error`, the cause in `result`, `terminal_reason: "api_error"`.
        record |= {"subtype": "success", "terminal_reason": "api_error", "api_error_status": info.api_error_status}
    return record


def checkpoint_record(changes: ev.TurnChanges | None) -> Record | None:
    """The turn's checkpoint for scripts: its number (`sessions rewind ID --to TURN`) and each file it changed, with
    the tool calls that did it (the ids of the `tool_use` blocks); null when no checkpoint was taken."""
    if changes is None:
        return None
    files = [
        {
            "path": change.path, "status": change.status, "added": change.added, "removed": change.removed,
            "tool_use_ids": list(change.calls), "tools": list(change.tools),
        }
        for change in changes.files
    ]  # fmt: skip
    added, removed = sum(f.added for f in changes.files), sum(f.removed for f in changes.files)
    return {
        "turn": changes.turn,
        "files_changed": files,
        "added": added,
        "removed": removed,
        "skipped": list(changes.skipped),
    }


def assistant_record(event: ev.AssistantMessage, *, parent_tool_use_id: str | None = None) -> Record:
    """A reply as Claude Code's `assistant` line; a subagent's names its parent call (the `task` call's id)."""
    blocks = event.content
    message: Record = {
        "id": event.message_id,
        "type": "message",
        "role": "assistant",
        "model": event.model,
        "content": [content_block(block, event.sdk_names) for block in blocks],
        "stop_reason": event.stop_reason,
        "stop_sequence": None,
        "usage": usage_record(event.usage),
    }
    return {"type": "assistant", "message": message, "parent_tool_use_id": parent_tool_use_id}


def tool_result_record(
    call_id: str, content: Sequence[Text | Image], is_error: bool, *, parent_tool_use_id: str | None = None
) -> Record:
    block = content_block(ToolResult(call_id, tuple(content), is_error), {})
    return {"type": "user", "message": {"role": "user", "content": [block]}, "parent_tool_use_id": parent_tool_use_id}


def subagent_finished_record(event: ev.SubagentFinished) -> Record:
    fields: Record = {"stop_reason": event.stop_reason, "num_turns": event.turns, "usage": usage_record(event.usage)}
    fields |= {"total_cost_usd": event.cost_usd, "duration_ms": ms(event.seconds), "error": event.error or None}
    return system_record("subagent_finished", id=event.call_id, agent=event.agent, **fields)


def replayed_user_record(text: str, images: Sequence[Image]) -> Record:
    """`--replay-user-messages`: a user message from stdin, echoed once its turn starts (its `uuid` names the turn
    for the SDKs' `rewind_files`), in the TypeScript SDK's SDKUserMessageReplay shape."""
    content = [content_block(Text(text), {}), *(content_block(image, {}) for image in images)]
    message = {"role": "user", "content": content}
    return {"type": "user", "message": message, "parent_tool_use_id": None, "isReplay": True}


def content_block(block: Block, sdk_names: Mapping[str, str]) -> Record:
    match block:
        case Text():
            return {"type": "text", "text": block.text}
        case Image():
            kind = "document" if block.media_type == "application/pdf" else "image"
            return {"type": kind, "source": {"type": "base64", "media_type": block.media_type, "data": block.data}}
        case ToolUse():
            return {
                "type": "tool_use",
                "id": block.id,
                "name": sdk_names.get(block.name, block.name),
                "input": block.input,
            }
        case ToolResult():
            content = [content_block(part, sdk_names) for part in block.content]
            return {
                "type": "tool_result",
                "tool_use_id": block.tool_use_id,
                "content": content,
                "is_error": block.is_error,
            }
        case Thinking():
            return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
        case RedactedThinking():
            return {"type": "redacted_thinking", "data": block.data}
        case ServerToolUse():
            return {"type": "server_tool_use", "id": block.id, "name": block.name, "input": block.input}
        case ServerToolResult():
            return _server_tool_result(block)
        case _:
            assert_never(block)


def _server_tool_result(block: ServerToolResult) -> Record:
    try:
        raw: object = json.loads(block.raw)
    except (ValueError, RecursionError):
        raw = None
    if isinstance(raw, dict):
        return cast(Record, raw)
    return {"type": block.kind, "tool_use_id": block.tool_use_id}


def system_record(subtype: str, **fields: object) -> Record:
    return {"type": "system", "subtype": subtype, **fields}


def hook_record(event: ev.HookEvent) -> Record:
    match event:
        case ev.HookCalled():
            return system_record("hook_called", hook=event.hook, servers=list(event.servers))
        case ev.HookObjected():
            return system_record("hook_objected", hook=event.hook, server=event.server, text=event.text)
        case ev.HookInjected():
            return system_record("hook_injected", hook=event.hook, server=event.server, text=event.text)
        case ev.HookTimedOut():
            return system_record("hook_timed_out", hook=event.hook, server=event.server, consecutive=event.consecutive)
        case ev.HookFailed():
            return system_record("hook_failed", hook=event.hook, server=event.server, reason=event.reason)
        case ev.HookServerKilled():
            return system_record("hook_server_killed", server=event.server, reason=event.reason)
        case ev.StopBudgetSpent():
            return system_record("stop_budget_spent", rejections=event.rejections)
        case ev.HookAnswered():
            return system_record("hook_answered", hook=event.hook, server=event.server, text=event.text)
        case ev.HookBudgetSpent():
            return system_record("hook_budget_spent", hook=event.hook, objections=event.objections)
        case _:
            assert_never(event)


def add_model_usage(totals: dict[str, Record], event: ev.AssistantMessage, window: int, max_output: int) -> None:
    """Claude Code's `modelUsage`: the session's running totals per model, in its camelCase names."""
    usage = event.usage
    now = totals.get(event.model) or {
        "inputTokens": 0,
        "outputTokens": 0,
        "cacheReadInputTokens": 0,
        "cacheCreationInputTokens": 0,
        "webSearchRequests": 0,
        "costUSD": 0.0,
        "contextWindow": window,
        "maxOutputTokens": max_output,
    }
    added = {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "cacheReadInputTokens": usage.cache_read_tokens,
        "cacheCreationInputTokens": usage.cache_write_tokens,
        "webSearchRequests": usage.web_searches,
    }
    for name, value in added.items():
        now[name] = cast(int, now[name]) + value
    now["costUSD"] = round(cast(float, now["costUSD"]) + event.cost_usd, 6)
    totals[event.model] = now
