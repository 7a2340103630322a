"""The `mcp_serve` group of scripts/bench: what a `sprout` call of `sprout-agent mcp serve` takes to start, against a
`-p` run's start (docs/mcp-serve.md), through the real CLI, the mcp SDK's client and the fake API.

- A call's start: from the `tools/call` sent to the call's first model request (arrived), in a server that already
  answered one call (the SDKs are imported once per server; each call still prepares its run and starts its own
  servers, here the built-in dev server).
- A `-p` run's start: spawn to its first model request, cold (no warm interpreter), with the same servers.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from tests.fake_anthropic import FakeAnthropic, reply
from tests.harness import agent_command, agent_env

ENV = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev", "SPROUT_AGENT_SANDBOX": "off", "SPROUT_AGENT_CHECKPOINTS": "off"}


async def call_starts(runs: int) -> list[float]:
    """Seconds from each `sprout` call to its first model request, after one call that warmed the server."""
    import anyio
    from mcp import Client, StdioServerParameters

    starts: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic([reply("ok") for _ in range(runs + 1)]) as fake:
        command = agent_command(["mcp", "serve"])
        env = agent_env(Path(tmp), fake, ENV)
        params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=tmp)
        with anyio.fail_after(120):
            async with Client(params) as client:
                await client.call_tool("sprout", {"prompt": "warm up"})
                for _ in range(runs):
                    began = time.monotonic()
                    result = await client.call_tool("sprout", {"prompt": "go"})
                    assert not result.is_error, result.content
                    starts.append(fake.requests[-1].arrived - began)
    return starts


def p_starts(spawn: Any, check: Any, runs: int) -> list[float]:
    """Seconds from spawning `sprout-agent -p` (cold) to its first model request."""
    starts: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs):
            with FakeAnthropic([reply("ok")]) as fake:
                run = check(spawn(agent_command(["-p", "go"]), agent_env(Path(tmp), fake, ENV), Path(tmp), fake), 1)
            starts.append(run.first())
    return starts
