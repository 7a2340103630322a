"""A real stdio MCP server with fault knobs, for tests: `python tests/fake_mcp_server.py`.

Configured only by environment variables (tests put them in the server config's "env"):

FAKE_MCP_NAME              server name reported in the handshake (default "fake")
FAKE_MCP_HANG_ON_START=1   never answer `initialize` (never reads stdin; spawns the grandchild first)
FAKE_MCP_CRASH_ON_START=1  write a line to stderr and exit 3 at once
FAKE_MCP_IGNORE_TERM=1     ignore SIGTERM (the server and its grandchildren): only SIGKILL ends it
FAKE_MCP_TOOLS             comma list of tools to expose ("" = none; unset = all of them, in this order):
                           echo(text), add(a, b), slow(seconds) -> "done", crash() -> exit 1,
                           huge(bytes) -> that many bytes of text, fail() -> is_error result,
                           image() -> a 1x1 PNG, spawn_grandchild(hold_stdout=false) -> pid of a
                           `sleep 1000` in our process group, env(name) -> os.environ[name] or
                           "<unset>", dotted.name() -> "dotted", read_only() (readOnlyHint=true)
FAKE_MCP_PAGE_SIZE         list tools in pages of this many (default: one page)
FAKE_MCP_LIST_BARRIER      "N:DIR": the first tools/list waits until N servers with this knob are all in theirs
                           (each leaves its pid in DIR); after 15 s it fails instead. Proves a concurrent start
                           without timing: servers started one after another never get past it
FAKE_MCP_STOP              text the `_Stop` hook returns; unset = no `_Stop` tool; "" = empty
FAKE_MCP_STOP_MODE         ok | hang (spawns a grandchild, then never answers) | freeze (blocks the
                           whole server) | crash | error (is_error result) | huge | sequence
FAKE_MCP_STOP_SEQUENCE     JSON list of texts returned by successive `_Stop` calls, then "" forever
FAKE_MCP_HUGE_BYTES        size of the `huge` hook answer (default 200000)
FAKE_MCP_POSTCOMPACT       text the `_PostCompact` hook returns; unset = no such tool
FAKE_MCP_HOOK_SCHEMA       JSON object: the inputSchema "properties" `_Stop` declares
FAKE_MCP_LOG               file to which one JSON line per tool call is appended:
                           {"tool": name, "arguments": args, "pid": pid}
FAKE_MCP_GRANDCHILD_PIDFILE  where spawned grandchildren's pids are written (one per line)
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

ALL_TOOLS = (
    "echo",
    "add",
    "slow",
    "crash",
    "huge",
    "fail",
    "image",
    "spawn_grandchild",
    "env",
    "dotted.name",
    "read_only",
)
# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
_stop_calls = 0


def knob(name: str, default: str | None = None) -> str | None:
    return os.environ.get(f"FAKE_MCP_{name}", default)


def spawn_grandchild(hold_stdout: bool = False) -> int:
    child = subprocess.Popen(
        ["sleep", "1000"],
        stdin=subprocess.DEVNULL,
        stdout=None if hold_stdout else subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    pidfile = knob("GRANDCHILD_PIDFILE")
    if pidfile:
        with open(pidfile, "a") as handle:
            handle.write(f"{child.pid}\n")
    return child.pid


def log_call(tool: str, arguments: dict[str, Any]) -> None:
    path = knob("LOG")
    if path:
        with open(path, "a") as handle:
            handle.write(json.dumps({"tool": tool, "arguments": arguments, "pid": os.getpid()}) + "\n")


def main() -> None:
    if knob("IGNORE_TERM") == "1":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # inherited by the grandchildren too
    if knob("CRASH_ON_START") == "1":
        sys.stderr.write("fake: loading config\nfake: fatal: cannot start (FAKE_MCP_CRASH_ON_START)\n")
        sys.stderr.flush()
        os._exit(3)
    if knob("HANG_ON_START") == "1":
        spawn_grandchild()
        sys.stderr.write("fake: hanging before the handshake\n")
        sys.stderr.flush()
        while True:
            time.sleep(1000)
    import anyio  # imported late so that the start-up knobs above act before the slow imports

    anyio.run(serve)


async def serve() -> None:
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    server = Server(knob("NAME", "fake") or "fake", on_list_tools=list_tools, on_call_tool=call_tool)
    sys.stderr.write(f"fake: serving as pid {os.getpid()}\n")
    sys.stderr.flush()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def tool_defs() -> list[Any]:
    import mcp.types as types

    def tool(name: str, properties: dict[str, Any] | None = None, **extra: Any) -> types.Tool:
        schema = {"type": "object", "properties": properties or {}}
        return types.Tool(name=name, description=f"fake {name}", input_schema=schema, **extra)

    listed = knob("TOOLS")
    chosen = [name.strip() for name in (ALL_TOOLS if listed is None else listed.split(",")) if name.strip()]
    args: dict[str, dict[str, Any]] = {
        "echo": {"text": {"type": "string"}},
        "add": {"a": {"type": "number"}, "b": {"type": "number"}},
        "slow": {"seconds": {"type": "number"}},
        "huge": {"bytes": {"type": "integer"}},
        "spawn_grandchild": {"hold_stdout": {"type": "boolean"}},
        "env": {"name": {"type": "string"}},
    }
    tools = [tool(name, args.get(name)) for name in chosen if name != "read_only"]
    if "read_only" in chosen:
        tools.append(tool("read_only", annotations=types.ToolAnnotations(read_only_hint=True)))
    if knob("STOP") is not None or knob("STOP_MODE") in ("sequence", "hang", "freeze", "crash", "error"):
        tools.append(tool("_Stop", json.loads(knob("HOOK_SCHEMA") or "{}")))
    if knob("POSTCOMPACT") is not None:
        tools.append(tool("_PostCompact"))
    return tools


async def list_tools(ctx: Any, params: Any) -> Any:
    import mcp.types as types

    barrier = knob("LIST_BARRIER")
    if barrier and not (params is not None and params.cursor):
        await meet(barrier)
    tools = tool_defs()
    size = int(knob("PAGE_SIZE") or 0) or len(tools) or 1
    start = int(params.cursor) if params is not None and params.cursor else 0
    following = start + size
    cursor = str(following) if following < len(tools) else None
    return types.ListToolsResult(tools=tools[start:following], next_cursor=cursor)


async def meet(barrier: str) -> None:
    import anyio

    count, directory = barrier.split(":", 1)
    open(os.path.join(directory, str(os.getpid())), "w").close()
    with anyio.move_on_after(15):
        while len(os.listdir(directory)) < int(count):
            await anyio.sleep(0.01)
        return
    raise RuntimeError(f"barrier: {len(os.listdir(directory))} of {count} servers reached tools/list within 15 s")


async def call_tool(ctx: Any, params: Any) -> Any:
    import anyio
    import mcp.types as types

    name, arguments = params.name, dict(params.arguments or {})
    log_call(name, arguments)

    def text(value: str, is_error: bool = False) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=value)], is_error=is_error)

    if name.startswith("_"):
        return await call_hook(name, text)
    if name == "echo":
        return text(str(arguments.get("text", "")))
    if name == "add":
        return text(str(arguments["a"] + arguments["b"]))
    if name == "slow":
        await anyio.sleep(float(arguments.get("seconds", 1)))
        return text("done")
    if name == "crash":
        os._exit(1)
    if name == "huge":
        size = int(arguments.get("bytes", 100_000))
        return text("HEAD" + "x" * max(0, size - 8) + "TAIL")
    if name == "fail":
        return text("this tool failed on purpose", is_error=True)
    if name == "image":
        data = base64.b64encode(PNG).decode()
        return types.CallToolResult(content=[types.ImageContent(type="image", data=data, mime_type="image/png")])
    if name == "spawn_grandchild":
        return text(str(spawn_grandchild(bool(arguments.get("hold_stdout", False)))))
    if name == "env":
        return text(os.environ.get(str(arguments.get("name")), "<unset>"))
    if name == "dotted.name":
        return text("dotted")
    if name == "read_only":
        return text("read only")
    return text(f"unknown tool {name}", is_error=True)


async def call_hook(name: str, text: Any) -> Any:
    import anyio

    global _stop_calls
    if name == "_PostCompact":
        return text(knob("POSTCOMPACT") or "")
    mode = knob("STOP_MODE") or "ok"
    _stop_calls += 1
    if mode == "hang":
        spawn_grandchild()
        await anyio.sleep_forever()
    if mode == "freeze":
        spawn_grandchild()
        time.sleep(1000)  # blocks the event loop: the server cannot even see a cancellation
    if mode == "crash":
        os._exit(1)
    if mode == "error":
        return text("the _Stop hook failed on purpose", is_error=True)
    if mode == "huge":
        return text("H" * int(knob("HUGE_BYTES") or 200_000))
    if mode == "sequence":
        sequence = json.loads(knob("STOP_SEQUENCE") or "[]")
        return text(sequence[_stop_calls - 1] if _stop_calls <= len(sequence) else "")
    return text(knob("STOP") or "")


if __name__ == "__main__":
    main()
