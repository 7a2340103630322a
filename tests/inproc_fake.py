"""The everyday tools of tests/fake_mcp_server.py as an MCP server inside the test's process, for the real server
pool: `fake_in_process()` is a config with `in_process="tests.inproc_fake"`, which runs it over in-memory MCP streams
(sprout_agent/mcp/transports/in_process.py), so a test of a face through the real runtime starts no process.

Tools as the stdio fake answers them: echo(text) -> text, add(a, b) -> the sum, fail() -> "this tool failed on
purpose" as an error result. Knobs are the server config's env, named as there: FAKE_MCP_STOP and
FAKE_MCP_POSTCOMPACT (a `_Stop` or `_PostCompact` hook answering that text). The fault knobs (hangs, crashes,
grandchildren) stay with the stdio fake: they are about a process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sprout_agent.config.files import ServerConfig


def fake_in_process(name: str = "fake", **knobs: str) -> ServerConfig:
    """A server config for this module; knobs become FAKE_MCP_* entries of its env."""
    env = {f"FAKE_MCP_{key.upper()}": value for key, value in knobs.items()}
    return ServerConfig(name, "", env=env, transport="in-process", in_process=__name__)


def create_server_in(cwd: str, env: Mapping[str, str] | None = None) -> Any:
    from sprout_agent.tools._server import Args, Report, ToolError, ToolSpec, build_server

    knobs = dict(env or {})

    async def echo(args: Args, report: Report | None) -> str:
        return str(args.get("text", ""))

    async def add(args: Args, report: Report | None) -> str:
        return str(args["a"] + args["b"])

    async def fail(args: Args, report: Report | None) -> str:
        raise ToolError("this tool failed on purpose")

    number = {"type": "number"}
    specs = [
        ToolSpec("echo", "fake echo", {"text": {"type": "string"}}, echo),
        ToolSpec("add", "fake add", {"a": number, "b": number}, add, ("a", "b")),
        ToolSpec("fail", "fake fail", {}, fail),
    ]
    for hook, knob in (("_Stop", "FAKE_MCP_STOP"), ("_PostCompact", "FAKE_MCP_POSTCOMPACT")):
        if (text := knobs.get(knob)) is not None:
            specs.append(ToolSpec(hook, f"fake {hook}", {}, answering(text), open_args=True))
    return build_server("fake", "", specs)


def answering(text: str) -> Any:
    async def answer(args: object, report: object) -> str:
        return text

    return answer
