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


# Our built-in tools that do the job of one of Claude Code's, under Claude Code's name in everything SDK-facing:
# callbacks, hook matchers and allow-lists written for Claude Code name them so. A server of your own named `dev`
# or `todo` replaces the built-in one (config/files.py) and takes these names with it, as `--allowedTools Bash`
# already means its `bash` (claude_rules.py).
CLAUDE_CODE_NAMES: dict[tuple[str, str], str] = {
    ("dev", "bash"): "Bash",
    ("dev", "read"): "Read",
    ("dev", "write"): "Write",
    ("dev", "edit"): "Edit",
    ("dev", "glob"): "Glob",
    ("dev", "grep"): "Grep",
    ("todo", "todo_write"): "TodoWrite",
    ("agent", "task"): "Agent",  # Claude Code's `Task` before 2.1 (claude_rules.py reads both)
    ("agent", "skill"): "Skill",
}


def sdk_tool_name(server: str, tool: str) -> str:
    """Claude Code's name for a tool: `Bash`, `Read`… for the built-in tools that match one of its own, else
    `mcp__server__tool`, as for any MCP tool; a tool of no server (the loop's own StructuredOutput) keeps its
    name. Only the SDK-facing stream and callbacks use it; the model sees `model_tool_name`."""
    return CLAUDE_CODE_NAMES.get((server, tool)) or (f"mcp__{server}__{tool}" if server else tool)
