"""Opt-in pytest plugin that keeps the `e2e` marker honest: `scripts/test -p tests.spawn_probe -m "not e2e"`.

It fails every test not marked `e2e` that starts a subprocess of the agent or of an MCP server (seen through
the interpreter's audit events, so every way of spawning counts: subprocess, asyncio, anyio, the mcp SDK).
Other children (git, rg, bash run by a tool under test) are allowed: they are what the tool does.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator
from typing import Any

import pytest

# A command is "the agent or an MCP server" when one of its words contains one of these.
AGENT_OR_SERVER = ("sprout_agent", "sprout-agent", "fake_mcp_server", "mcp-server", "mcp_server", "acpx", "node")

_spawned: list[str] | None = None  # the commands started by the running test phase; None = not recording


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _spawned is None:
        return
    if event == "subprocess.Popen":
        argv = args[1]
        words = [os.fsdecode(w) for w in ([argv] if isinstance(argv, str | bytes) else argv or [])]
        _spawned.append(" ".join([os.fsdecode(args[0] or ""), *words]).strip())
    elif event == "os.posix_spawn":
        _spawned.append(" ".join([os.fsdecode(args[0]), *map(os.fsdecode, args[1] or [])]))


def pytest_configure(config: pytest.Config) -> None:
    sys.addaudithook(_audit)  # audit hooks cannot be removed; outside a test phase it returns at once


def _offending(commands: list[str]) -> list[str]:
    return [c for c in commands if any(marker in c for marker in AGENT_OR_SERVER)]


def _watch(item: pytest.Item, phase: str) -> Generator[None, object, object]:
    global _spawned
    _spawned = []
    try:
        result = yield
    finally:
        commands, _spawned = _spawned, None
    offending = _offending(commands)
    if offending and item.get_closest_marker("e2e") is None:
        shown = "\n  ".join(c[:200] for c in offending)
        pytest.fail(f"not marked e2e, but its {phase} starts the agent or an MCP server:\n  {shown}", pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _watch(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _watch(item, "call"))
