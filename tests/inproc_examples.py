"""The example hook servers of examples/ (and a deliberately bad one) as in-process MCP servers, for the real
server pool: a config with `in_process="tests.inproc_examples"` and env {"EXAMPLE": name} runs that server
over in-memory MCP streams (sprout_agent/mcp/transports/in_process.py), so a test pays no interpreter start."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from sprout_agent.config.files import ServerConfig

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def config(name: str, cwd: Path) -> ServerConfig:
    return ServerConfig(name, "", env={"EXAMPLE": name}, cwd=str(cwd), transport="in-process", in_process=__name__)


def create_server_in(cwd: str, env: Mapping[str, str] | None = None) -> Any:
    del cwd
    name = (env or {})["EXAMPLE"]
    server = bad_server() if name == "bad" else _load(name).mcp
    return server._lowlevel_server  # pyright: ignore[reportPrivateUsage]


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bad_server() -> MCPServer:
    """Breaks the contract every way the kit must catch: slow, an error result, an error on {}, odd names."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    mcp = MCPServer("bad")

    @mcp.tool(name="_Stop", description="Always fails.")
    def stop() -> str:
        raise ToolError("the hook crashed")

    @mcp.tool(name="_PreToolUse", description="Slower than any sane timeout.")
    async def pre_tool_use() -> str:
        await anyio.sleep(30)
        return ""

    @mcp.tool(name="_SessionStart", description="Needs an input no agent sends.")
    def session_start(branch: str) -> str:  # no default: {} is an error
        return f"on {branch}"

    @mcp.tool(name="_BeforeLunch", description="A hook point no agent has.")
    def before_lunch() -> str:
        return ""

    return mcp
