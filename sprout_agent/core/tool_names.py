"""Model-facing tool names: `server__tool`, valid for the API, at most 64 characters, stable across runs."""

from __future__ import annotations

import hashlib
import re

MAX_TOOL_NAME = 64  # the Anthropic API allows 128; 64 keeps us inside what other providers accept
_INVALID_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def model_tool_name(server: str, tool: str) -> str:
    """`server__tool` with every character outside [a-zA-Z0-9_-] made `_`, at most 64 characters."""
    name = _INVALID_NAME_CHARS.sub("_", f"{server}__{tool}")
    return name if len(name) <= MAX_TOOL_NAME else with_hash(name, server, tool)


def with_hash(name: str, server: str, tool: str) -> str:
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_TOOL_NAME - 9]}_{digest}"


def sdk_tool_name(server: str, tool: str) -> str:
    """Claude Code's name for an MCP tool, `mcp__server__tool`: what its SDKs' allow-lists and matchers expect.
    Only the SDK-facing stream uses it; the model sees `model_tool_name`. A tool of no server (the loop's own
    StructuredOutput) keeps its name."""
    return f"mcp__{server}__{tool}" if server else tool
