# /// script
# requires-python = ">=3.11"
# dependencies = ["mcp>=2.3"]
# ///
"""Example MCP server with a `_PreToolUse` hook: objects to destructive shell commands and to writes under
protected paths (named by `file_path`, as the dev tools send it, `path` or `notebook_path`), before the call runs.

Run by sprout-agent over stdio with SPROUT_AGENT_TOOL_HOOKS=1 (see examples/README.md). Needs `mcp` (>= 2.3).
"""

from __future__ import annotations

import os
import re
from fnmatch import fnmatch
from pathlib import PurePosixPath

from mcp.server.mcpserver import MCPServer

# Shell commands that destroy work or history; each pattern is searched in the whole command line.
DESTRUCTIVE = (
    (
        r"\brm\s+(-[a-zA-Z]*[rR][a-zA-Z]*f|-[a-zA-Z]*f[a-zA-Z]*[rR]|--recursive\s+--force|--force\s+--recursive)\b",
        "rm -rf",
    ),
    (r"\bgit\s+push\b.*\s(--force|-f)\b", "a force push"),
    (r"\bgit\s+reset\s+--hard\b", "git reset --hard"),
    (r"\bgit\s+clean\s+-[a-zA-Z]*f", "git clean -f"),
    (r"\bmkfs(\.\w+)?\b|\bdd\s+.*\bof=/dev/", "writing a device"),
    (r"\bchmod\s+-R\s+777\b", "chmod -R 777"),
    (r":\(\)\s*\{\s*:\|:&\s*\};:", "a fork bomb"),
)
# Paths no tool may write, as glob patterns on the path relative to the project (PROTECTED_PATHS overrides:
# comma-separated globs).
DEFAULT_PROTECTED = ".git,.git/*,.env,.env.*,*.pem,*.key,.mcp.json"
# Tools that write the file their path argument names (the built-in dev server's; add yours with WRITE_TOOLS).
DEFAULT_WRITE_TOOLS = "dev__write,dev__edit"
# The arguments that name that file: `file_path` in the dev tools (and Claude Code's), `path` in many servers'
# (the filesystem server's write_file and edit_file), `notebook_path` in a notebook editor's. Every one present
# is checked, so a tool cannot pass one name and write another.
PATH_ARGUMENTS = ("file_path", "path", "notebook_path")

mcp = MCPServer("guard")


@mcp.tool(name="_PreToolUse", description="Objects to destructive shell commands and writes to protected paths.")
def pre_tool_use(tool_name: str = "", arguments: dict[str, object] | None = None, cwd: str = ".") -> str:
    # Declaring these asks sprout-agent for them; an agent that sends {} gets "" (no objection), not an error.
    arguments = arguments or {}
    command = arguments.get("command")
    if isinstance(command, str) and (why := destructive(command)):
        return f"Refused: `{command}` is {why}. Ask the user to run it themselves if it is really wanted."
    if tool_name not in _names("WRITE_TOOLS", DEFAULT_WRITE_TOOLS):
        return ""  # empty = no objection: the call runs
    for name in PATH_ARGUMENTS:
        path = arguments.get(name)
        if isinstance(path, str) and (glob := protected(path, cwd)):
            return f"Refused: {path} is a protected path ({glob}); leave it to the user."
    return ""


def destructive(command: str) -> str:
    for pattern, name in DESTRUCTIVE:
        if re.search(pattern, command):
            return name
    return ""


def protected(path: str, cwd: str) -> str:
    # Links resolved: a link named notes.txt that points at .env writes .env.
    root = os.path.realpath(cwd)
    relative = os.path.relpath(os.path.realpath(os.path.join(root, path)), root)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return "outside the project"
    parts = PurePosixPath(relative).as_posix()
    for glob in _names("PROTECTED_PATHS", DEFAULT_PROTECTED):
        if fnmatch(parts, glob) or fnmatch(PurePosixPath(parts).name, glob):
            return glob
    return ""


def _names(variable: str, default: str) -> list[str]:
    return [name.strip() for name in (os.environ.get(variable) or default).split(",") if name.strip()]


if __name__ == "__main__":
    mcp.run()  # stdio transport
