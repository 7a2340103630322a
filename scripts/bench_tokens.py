"""The `tokens` group of scripts/bench: the input tokens of a ten-round tool task, sprout-agent (built-in servers on,
as a user has them) beside Claude Code (`--claude PATH`) on the same scenario and fake API (issue 46, item 3).

The scenario: one MCP server (tests/fake_mcp_server.py), the prompt "go", ten calls of its `echo` tool, then an
answer. Each request is counted as the fake sees it, len(json body) // 4, summed over the run: cache reads included,
since a cached token is still sent and still fills the context.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from tests.claude_code import claude_env
from tests.fake_anthropic import FakeAnthropic, Recorded, Step, reply, tool_use
from tests.harness import agent_command, agent_env, fake_server, write_config

ROUNDS = 10
CLAUDE_MODEL = "claude-sonnet-4-6"  # the classic request shape the fake serves (scripts/bench_startup.py)


def _script(tool: str) -> list[Step]:
    """Ten calls of `tool` then an answer, given only to requests that offer tools (Claude Code sends others)."""
    calls = iter(range(1, ROUNDS + 2))

    def step(body: dict[str, Any]) -> Step:
        if not body.get("tools"):
            return reply("ok")
        n = next(calls)
        return reply(tool_use(tool, {"text": f"round {n}"})) if n <= ROUNDS else reply("final answer")

    return [step] * (ROUNDS * 4)


def _sent(requests: list[Recorded]) -> tuple[int, int, int]:
    """(tokens in all, requests, tokens of the first request's tools and system)."""
    tasks = [r for r in requests if r.path.split("?")[0] == "/v1/messages" and r.body.get("tools")]
    first = tasks[0].body
    fixed = len(json.dumps(first.get("tools", []))) // 4 + len(json.dumps(first.get("system", ""))) // 4
    return sum(len(json.dumps(r.body)) // 4 for r in tasks), len(tasks), fixed


def ours() -> tuple[int, int, int]:
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic(_script("fake__echo"), auto_usage=True) as fake:
        home = Path(tmp)
        env = agent_env(home, fake)
        env.pop("SPROUT_AGENT_BUILTIN_SERVERS")  # dev, todo and agent, as a user has them
        argv = agent_command(["--config", str(write_config(home, {"fake": fake_server()})), "-p", "go"])
        done = subprocess.run(argv, env=env, cwd=home, capture_output=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"sprout-agent exited {done.returncode}: {done.stderr[-300:]!r}")
        return _sent(fake.requests)


def claude(binary: str) -> tuple[int, int, int]:
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic(_script("mcp__fake__echo"), auto_usage=True) as fake:
        home = Path(tmp)
        work = home / "work"
        work.mkdir()
        config = write_config(home, {"fake": fake_server()})
        argv = [binary, "-p", "go", "--mcp-config", str(config), "--model", CLAUDE_MODEL]
        argv += ["--allowedTools", "mcp__fake__echo"]
        done = subprocess.run(argv, env=claude_env(home, fake), cwd=work, capture_output=True, timeout=180, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"claude exited {done.returncode}: {done.stderr[-300:]!r}")
        return _sent(fake.requests)
