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


class PermissionMode(enum.StrEnum):
    auto = "auto"
    ask = "ask"
    read_only = "read-only"


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
