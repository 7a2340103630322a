# /// script
# requires-python = ">=3.11"
# dependencies = ["mcp>=2.3"]
# ///
"""Example MCP server with a `_SessionStart` hook: tells the model the current branch and `git status`.

Run by sprout-agent over stdio (see examples/README.md). Needs `mcp` (>= 2.3) and git.
"""

from __future__ import annotations

import subprocess

import anyio
from mcp.server.mcpserver import MCPServer

STATUS_LINES = 40  # a dirty tree can list thousands of files: the model needs the gist

mcp = MCPServer("git-context")


@mcp.tool(name="_SessionStart", description="The current branch and `git status --short`, at session start.")
async def session_start(cwd: str = ".", source: str = "startup") -> str:
    # Declaring `cwd` asks sprout-agent for its working directory (ours may differ); {} means ".".
    branch = await git(cwd, "branch", "--show-current")  # works before the first commit, too
    if branch is None:
        return ""  # not a git checkout: nothing to say
    if not branch:  # a detached HEAD has no branch name
        branch = f"(detached at {await git(cwd, 'rev-parse', '--short', 'HEAD')})"
    status = (await git(cwd, "status", "--short")) or ""
    lines = status.splitlines()
    shown = "\n".join(lines[:STATUS_LINES]) + (
        f"\n… and {len(lines) - STATUS_LINES} more" if len(lines) > STATUS_LINES else ""
    )
    state = f"uncommitted changes:\n{shown}" if lines else "the working tree is clean"
    return f"Session {source}: on git branch {branch}; {state}"


async def git(cwd: str, *args: str) -> str | None:
    try:
        # stdin must not be inherited: it is this server's MCP channel.
        done = await anyio.run_process(["git", "-C", cwd, *args], stdin=subprocess.DEVNULL, check=False)
    except OSError:
        return None
    return done.stdout.decode(errors="replace").strip() if done.returncode == 0 else None


if __name__ == "__main__":
    mcp.run()  # stdio transport
