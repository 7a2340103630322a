"""The choices and shared option types of the `sprout-agent` command line (Typer), apart from the commands."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer


class OutputFormat(enum.StrEnum):
    text = "text"
    json = "json"
    stream_json = "stream-json"


class InputFormat(enum.StrEnum):
    text = "text"
    stream_json = "stream-json"


class SandboxMode(enum.StrEnum):
    off = "off"
    read_only = "read-only"
    workspace_write = "workspace-write"
    required = "required"


class OnOff(enum.StrEnum):
    on = "on"
    off = "off"


# The sandbox flags, shared by the main command and `acp`.
SandboxOption = Annotated[
    SandboxMode | None,
    typer.Option(
        help="OS sandbox for dev__bash: workspace-write (default where it works), read-only, off, or required "
        "(workspace-write that must work: exit 2 if it cannot). Env: SPROUT_AGENT_SANDBOX."
    ),
]
SandboxNetworkOption = Annotated[
    OnOff | None, typer.Option(help="Network for sandboxed commands (default on; always off in read-only).")
]
SandboxAllowWriteOption = Annotated[
    list[Path] | None, typer.Option(metavar="PATH", help="Another directory sandboxed commands may write; repeatable.")
]

# Flags more than one command takes (the main command, `acp`, the `mcp` commands).
ConfigOption = Annotated[
    list[Path] | None,
    typer.Option("--config", metavar="PATH", help="MCP config file (repeatable); replaces the lookup."),
]
ModelOption = Annotated[
    str | None, typer.Option(metavar="NAME", help="Model name (default: $ANTHROPIC_MODEL or built in).")
]
MaxTurnsOption = Annotated[int | None, typer.Option(min=1, metavar="N", help="Most model requests per prompt.")]
ThinkingOption = Annotated[
    str | None,
    typer.Option(metavar="MODE", help="Extended thinking: adaptive, on (a budget) or off (default: the model's)."),
]
EffortOption = Annotated[
    str | None, typer.Option(metavar="LEVEL", help="Effort: low, medium, high, xhigh or max (as the model lists).")
]
WebOption = Annotated[
    bool | None,
    typer.Option(
        "--web/--no-web",
        help="Offer the API's web search and fetch to the model, where it supports them ($10 per 1000 searches; "
        "default off; env SPROUT_AGENT_WEB).",
    ),
]

# Claude Code's flags (README: "Claude Code's headless flags → sprout-agent").
PermissionModeOption = Annotated[
    str | None,
    typer.Option(
        metavar="MODE",
        help="auto, ask (approve each call) or read-only; or Claude Code's default, acceptEdits, plan, "
        "bypassPermissions, dontAsk (mapped onto ours). Not given: auto, or Claude Code's default for a Claude Code "
        "script (--allowedTools/--disallowedTools, an Agent SDK; README).",
    ),
]
AllowedToolsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--allowedTools",
        metavar="RULES",
        help="Claude Code's allow rules (Read, Bash(git:*), mcp__server__tool), comma- or space-separated.",
    ),
]
DisallowedToolsOption = Annotated[
    list[str] | None,
    typer.Option("--disallowedTools", metavar="RULES", help="Claude Code's deny rules, as --allowedTools."),
]
McpConfigOption = Annotated[
    list[str] | None,
    typer.Option(
        "--mcp-config",
        metavar="FILE|JSON",
        help='More servers, added to the lookup: a file or inline {"mcpServers": …} JSON; repeatable.',
    ),
]
StrictMcpConfigOption = Annotated[
    bool, typer.Option(help="Use only the --mcp-config (and --config) servers: no project or user config.")
]
RequireServersOption = Annotated[
    bool, typer.Option(help="Fail if any configured MCP server is broken or fails to start.")
]
SessionIdOption = Annotated[
    str | None, typer.Option(metavar="UUID", help="Start a new session with this id (a UUID not used yet).")
]
ForkSessionOption = Annotated[
    bool, typer.Option(help="With --resume/--continue: go on in a new session, leaving the old one as it was.")
]
AddDirOption = Annotated[
    list[Path] | None,
    typer.Option(metavar="DIR", help="Another directory the built-in tools may read and write; repeatable."),
]
FallbackModelOption = Annotated[
    str | None, typer.Option(metavar="NAME", help="The model to use when the main one is overloaded.")
]
