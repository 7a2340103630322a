"""Example MCP server with a `_Stop` hook that blocks end_turn while the project's tests fail.

Run by sprout-agent over stdio (see examples/README.md). Needs only `mcp` (>= 2.3) installed.
"""

from __future__ import annotations

import os
import shlex
import subprocess

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

DEFAULT_COMMAND = "python -m pytest -q -x"
# The hook's text goes back to the model, so keep just the end of the output, where test runners
# put their summary. sprout-agent would cap it anyway (16 KiB, middle elided); this stays well below.
TAIL_CHARS = 4000

mcp = MCPServer("tests")


@mcp.tool(name="_Stop", description="Returns the failing test summary while the test suite is red.")
async def stop() -> str:
    # No timeout of our own: the agent bounds every hook call (SPROUT_AGENT_HOOK_TIMEOUT_MS, 2.5 s by
    # default) and cancels it past that, which kills the test command (anyio.run_process does that on
    # cancel). A timed-out hook counts as "no objection", and two timeouts in a row get this server
    # killed, so for a suite slower than the default raise SPROUT_AGENT_HOOK_TIMEOUT_MS above its run time.
    command = shlex.split(os.environ.get("TEST_RUNNER_COMMAND") or DEFAULT_COMMAND)
    try:
        # stdin must not be inherited: it is this server's MCP channel. Runs in the server's cwd.
        done = await anyio.run_process(command, stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT, check=False)
    except OSError as error:
        # A hook that cannot run is an error result, which the agent treats as no objection.
        raise ToolError(f"cannot run {shlex.join(command)}: {error}") from error
    if done.returncode == 0:
        return ""  # empty = no objection: the agent may stop
    output = done.stdout.decode(errors="replace").strip()
    if len(output) > TAIL_CHARS:
        output = "…" + output[-TAIL_CHARS:]
    return (
        f"The test command `{shlex.join(command)}` exits {done.returncode}: the tests are failing. "
        f"Fix them before you finish. The end of its output:\n{output}"
    )


if __name__ == "__main__":
    mcp.run()  # stdio transport
