"""The texts around the interactive prompt: the banner, the servers line, the status toolbar, the replay of a
resumed conversation, and the line printed on leaving. Plain strings; the REPL prints them escaped."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import assert_never

from sprout_agent.core.agent import Agent
from sprout_agent.core.messages import (
    Image,
    Message,
    RedactedThinking,
    ServerToolResult,
    ServerToolUse,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    text_of,
)
from sprout_agent.faces.terminal.prompt_attach import without_attachments
from sprout_agent.mcp.state import ServerStatus
from sprout_agent.session.prepared import Prepared

REPLAY_MESSAGES = 20  # the tail of a resumed conversation shown before the prompt
REPLAY_TEXT_CHARS = 300


def banner(prepared: Prepared, model: str) -> str:
    options = prepared.options
    names = ", ".join(server.name for server in prepared.loaded.servers) or "none"
    given = prepared.permission_mode
    mode = given if given is given.ours else f"{given} ({given.ours})"  # Claude Code's name: say what it means here
    provider = prepared.settings.provider  # named unless it is Anthropic's own API, as before
    via = f" on {provider.describe()}" if provider.kind != "anthropic" or provider.gateway else ""
    return (
        f"sprout-agent · {model}{via} · {_home(options.cwd)}\n"
        f"permissions {mode} · sandbox {prepared.sandbox.describe()} · servers: {names}\n"
        "/help for commands · Tab completes /commands and @files · Esc cancels a turn · Ctrl-D leaves"
    )


def servers_line(statuses: Sequence[ServerStatus]) -> str:
    """After start-up: each server with its tool count (a pending one starts at its first call), or what failed."""
    parts = [
        f"{s.name} ({s.tool_count} tools)" if s.state in ("running", "pending") else f"{s.name} {s.state.upper()}"
        for s in statuses
    ]
    return "servers: " + (", ".join(parts) if parts else "none")


def status_text(model: str, agent: Agent | None) -> str:
    """The bottom toolbar: model · context used (% of the window) · session cost."""
    if agent is None:
        return f" {model} · starting MCP servers…"
    window = agent.compactor.window if agent.compactor is not None else 0
    used = agent.context_estimate()
    share = f"{100 * used / window:.0f}% of {window // 1000}k" if window else f"~{used} tokens"
    return f" {model} · context {share} · ${agent.ledger.earlier + agent.ledger.cost:.4f}"  # the session's, all runs


def replay_lines(history: Sequence[Message]) -> list[tuple[str, str]]:
    """The last messages compactly, as (text, style): prompts, answers (clipped), one line per tool call."""
    shown = history[-REPLAY_MESSAGES:]
    lines: list[tuple[str, str]] = []
    if len(history) > len(shown):
        lines.append((f"… {len(history) - len(shown)} earlier messages", "dim"))
    for message in shown:
        for block in message.content:
            match block:
                case Text():
                    # A prompt as it was typed: an `@file` it attached is in it, not the file's contents.
                    said = without_attachments(block.text) if message.role == "user" else block.text
                    if said.strip():
                        text = _clip(said)
                        lines.append((f"› {text}", "bold") if message.role == "user" else (text, ""))
                case ToolUse():
                    arguments = " ".join(json.dumps(block.input, ensure_ascii=False).split())
                    lines.append((f"⏺ {block.name} {_clip(arguments, 80)}", "cyan"))
                case ToolResult():
                    lines.extend(_result_line(block))
                case Image() | Thinking() | RedactedThinking() | ServerToolUse() | ServerToolResult():
                    pass  # a compact replay: what was said and which tools ran
                case _:
                    assert_never(block)
    return lines


def _result_line(result: ToolResult) -> list[tuple[str, str]]:
    """Only what went wrong: a call cut short (Esc, a signal) was cancelled, not failed."""
    if not result.is_error:
        return []
    if text_of(result.content).startswith("interrupted"):
        return [("  ✗ cancelled", "yellow")]
    return [("  ✗ failed", "red")]


def leave_line(session_id: str, recorded: bool) -> str | None:
    """What to type to come back; None when nothing was recorded (a new session with no message)."""
    if not recorded:
        return None
    return f"resume this session: sprout-agent -r {session_id}"  # one line in 80 columns: copyable whole


def _clip(text: str, limit: int = REPLAY_TEXT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _home(path: Path) -> str:
    home = Path.home()
    return "~/" + str(path.relative_to(home)) if path.is_relative_to(home) and path != home else str(path)
