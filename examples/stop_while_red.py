# /// script
# requires-python = ">=3.11"
# dependencies = ["mcp>=2.3"]
# ///
"""Example MCP server with a `_Stop` hook that blocks end_turn while the project's tests fail.

Run by sprout-agent over stdio (see examples/README.md): with sprout-agent's own Python
(`${SPROUT_AGENT_PYTHON}`, which has `mcp`), or with `uv run --script` / `pipx run`, which read the
dependencies above. Named so that no test runner collects it as a test module.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time

import anyio
from anyio.abc import TaskGroup
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

DEFAULT_COMMAND = "python3 -m pytest -q -x"
# The hook's text goes back to the model, so keep just the end of the output, where test runners
# put their summary. sprout-agent would cap it anyway (16 KiB, middle elided); this stays well below.
TAIL_CHARS = 4000
# sprout-agent gives a hook 2.5 s by default (SPROUT_AGENT_HOOK_TIMEOUT_MS). A suite slower than this
# keeps running in the background: the hook says so (an objection: "wait for the tests"), and the next
# `_Stop` answers from that run's result.
ANSWER_WITHIN_S = float(os.environ.get("TEST_RUNNER_ANSWER_S") or 2.0)

mcp = MCPServer("tests")


class Runs:
    """The test command's runs: at most one at a time; a finished one is answered from once."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.result: tuple[int, str] | None = None
        self.started: float | None = None
        self.group: TaskGroup | None = None  # the server's (main below): a run outlives the call that started it

    def begin(self) -> None:
        """Marks a run started (before its task is), so a caller waits on this run's `done`."""
        self.started, self.result, self.done = time.monotonic(), None, anyio.Event()

    async def run(self, command: list[str]) -> None:
        try:
            # stdin must not be inherited: it is this server's MCP channel. Runs in the server's cwd.
            done = await anyio.run_process(command, stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT, check=False)
            self.result = (done.returncode, done.stdout.decode(errors="replace").strip())
        except OSError as error:
            self.result = (-1, f"cannot run {shlex.join(command)}: {error}")
        finally:
            self.started = None
            self.done.set()


runs = Runs()


@mcp.tool(name="_Stop", description="Returns the failing test summary while the test suite is red.")
async def stop() -> str:
    command = shlex.split(os.environ.get("TEST_RUNNER_COMMAND") or DEFAULT_COMMAND)
    with anyio.move_on_after(ANSWER_WITHIN_S):
        if runs.started is None and runs.result is None:
            runs.begin()
            if runs.group is not None:  # the run belongs to the server: a call the agent cancels leaves it running
                runs.group.start_soon(runs.run, command)
            else:  # imported into another server (sprout-agent's tests): the run is this call's
                await runs.run(command)
        await runs.done.wait()
    if runs.result is None:
        running = time.monotonic() - (runs.started or time.monotonic())
        return (
            f"The test command `{shlex.join(command)}` is still running ({running:.0f} s so far). "
            "Wait for its result: do not finish yet."
        )
    code, output = runs.result
    runs.result = None  # answered once: the next `_Stop` runs the tests again
    if code == -1:
        # A hook that cannot run is an error result, which the agent treats as no objection.
        raise ToolError(output)
    if code == 0:
        return ""  # empty = no objection: the agent may stop
    if len(output) > TAIL_CHARS:
        output = "…" + output[-TAIL_CHARS:]
    return (
        f"The test command `{shlex.join(command)}` exits {code}: the tests are failing. "
        f"Fix them before you finish. The end of its output:\n{output}"
    )


async def main() -> None:
    async with anyio.create_task_group() as group:
        runs.group = group
        await mcp.run_stdio_async()
        group.cancel_scope.cancel()  # stdin closed: a run still going ends with the server


if __name__ == "__main__":
    anyio.run(main)
