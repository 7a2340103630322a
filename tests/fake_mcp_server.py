"""A real stdio MCP server with fault knobs, for tests: `python tests/fake_mcp_server.py`.

Stdlib only, JSON-RPC by hand (as the SDK's server writes it: see the wire shapes below), so that it starts in
tens of milliseconds where the SDK's server took over a second; our side still speaks through the real SDK
client. Each tools/call runs in its own thread, like the SDK's task per request; a notifications/cancelled
drops the answer of the call it names, as the SDK's server does.

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
                           "<unset>", dotted.name() -> "dotted", read_only() (readOnlyHint=true);
                           refuse(code, message) -> a JSON-RPC error answer (listed only when named here)
FAKE_MCP_SLOW_GATE         a path: `slow` also ends as soon as that file exists (the test holds the call open)
FAKE_MCP_PAGE_SIZE         list tools in pages of this many (default: one page)
FAKE_MCP_LIST_BARRIER      "N:DIR": the first tools/list waits until N servers with this knob are all in theirs
                           (each leaves its pid in DIR); after FAKE_MCP_LIST_BARRIER_SECONDS (default 15) it fails
                           instead. Proves a concurrent start without timing: servers started one after another
                           never get past it
FAKE_MCP_STOP              text the `_Stop` hook returns; unset = no `_Stop` tool; "" = empty
FAKE_MCP_STOP_MODE         ok | hang (spawns a grandchild, then never answers) | freeze (blocks the
                           whole server) | crash | error (is_error result) | huge | sequence
FAKE_MCP_STOP_SEQUENCE     JSON list of texts returned by successive `_Stop` calls, then "" forever
FAKE_MCP_HUGE_BYTES        size of the `huge` hook answer (default 200000)
FAKE_MCP_POSTCOMPACT       text the `_PostCompact` hook returns; unset = no such tool
FAKE_MCP_HOOKS             JSON object {hook name: text}: more hooks (e.g. `_SessionEnd`), each declaring every
                           context field and answering its text ("" = nothing to say); "hang" never answers
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
import threading
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
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
_stop_calls = 0
_out = threading.Lock()
_cancelled: dict[object, threading.Event] = {}  # in-flight calls by request id


class Error(Exception):
    """An error answer (JSON-RPC `error`), as the SDK's server sends for a handler that raised."""

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code


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
    serve()


def serve() -> None:
    sys.stderr.write(f"fake: serving as pid {os.getpid()}\n")
    sys.stderr.flush()
    for line in sys.stdin.buffer:
        if line.strip():
            dispatch(json.loads(line))
    os._exit(0)  # stdin's end is the client's goodbye: calls still running in threads end with us


def send(message: dict[str, Any]) -> None:
    line = json.dumps({"jsonrpc": "2.0", **message}, separators=(",", ":")) + "\n"
    with _out:
        sys.stdout.write(line)
        sys.stdout.flush()


def dispatch(message: dict[str, Any]) -> None:
    method, request_id, params = message.get("method"), message.get("id"), message.get("params") or {}
    if method == "notifications/cancelled":
        event = _cancelled.get(params.get("requestId"))
        if event is not None:
            event.set()
        return
    if request_id is None:
        return  # other notifications (initialized) need no answer
    if method == "tools/call":
        if str(params.get("name")) == "_Stop" and (knob("STOP_MODE") or "ok") == "freeze":
            call_hook("_Stop", threading.Event())  # in the reading thread: nothing else is read, not even a cancel
        cancel = _cancelled[request_id] = threading.Event()
        threading.Thread(target=answer, args=(request_id, method, params, cancel), daemon=True).start()
        return
    answer(request_id, method, params, threading.Event())


def answer(request_id: object, method: Any, params: dict[str, Any], cancel: threading.Event) -> None:
    try:
        if method == "initialize":
            result = initialize(params)
        elif method == "tools/list":
            result = list_tools(params)
        elif method == "tools/call":
            result = call_tool(str(params.get("name")), dict(params.get("arguments") or {}), cancel)
        elif method == "ping":
            result = {}
        else:
            raise Error("Method not found", -32601)
    except Error as error:
        response: dict[str, Any] = {"id": request_id, "error": {"code": error.code, "message": str(error)}}
    except Exception as error:  # the SDK's server answers a handler's crash as an error, too
        response = {"id": request_id, "error": {"code": 0, "message": str(error)}}
    else:
        response = {"id": request_id, "result": result}
    _cancelled.pop(request_id, None)
    if not cancel.is_set():  # a cancelled request gets no answer
        send(response)


def initialize(params: dict[str, Any]) -> dict[str, Any]:
    asked = params.get("protocolVersion")
    return {
        "capabilities": {"tools": {"listChanged": False}},
        "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
        "serverInfo": {"name": knob("NAME", "fake") or "fake", "version": ""},
    }


def tool_defs() -> list[dict[str, Any]]:
    def tool(name: str, properties: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
        schema = {"type": "object", "properties": properties or {}}
        return {"name": name, "description": f"fake {name}", "inputSchema": schema, **extra}

    listed = knob("TOOLS")
    chosen = [name.strip() for name in (ALL_TOOLS if listed is None else listed.split(",")) if name.strip()]
    args: dict[str, dict[str, Any]] = {
        "echo": {"text": {"type": "string"}},
        "add": {"a": {"type": "number"}, "b": {"type": "number"}},
        "slow": {"seconds": {"type": "number"}},
        "huge": {"bytes": {"type": "integer"}},
        "spawn_grandchild": {"hold_stdout": {"type": "boolean"}},
        "env": {"name": {"type": "string"}},
        "refuse": {"code": {"type": "integer"}, "message": {"type": "string"}},
    }
    tools = [tool(name, args.get(name)) for name in chosen if name != "read_only"]
    if "read_only" in chosen:
        tools.append(tool("read_only", annotations={"readOnlyHint": True}))
    if knob("STOP") is not None or knob("STOP_MODE") in ("sequence", "hang", "freeze", "crash", "error"):
        tools.append(tool("_Stop", json.loads(knob("HOOK_SCHEMA") or "{}")))
    if knob("POSTCOMPACT") is not None:
        tools.append(tool("_PostCompact"))
    every = {name: {} for name in ("session_id", "cwd", "source", "prompt", "reason", "tool_name", "arguments")}
    tools += [tool(name, every) for name in json.loads(knob("HOOKS") or "{}")]
    return tools


def list_tools(params: dict[str, Any]) -> dict[str, Any]:
    cursor = params.get("cursor")
    barrier = knob("LIST_BARRIER")
    if barrier and not cursor:
        meet(barrier)
    tools = tool_defs()
    size = int(knob("PAGE_SIZE") or 0) or len(tools) or 1
    start = int(cursor) if cursor else 0
    following = start + size
    page: dict[str, Any] = {"tools": tools[start:following]}
    if following < len(tools):
        page["nextCursor"] = str(following)
    return page


def meet(barrier: str) -> None:
    count, directory = barrier.split(":", 1)
    open(os.path.join(directory, str(os.getpid())), "w").close()
    seconds = float(knob("LIST_BARRIER_SECONDS") or 15)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if len(os.listdir(directory)) >= int(count):
            return
        time.sleep(0.01)
    raise Error(f"barrier: {len(os.listdir(directory))} of {count} servers reached tools/list within {seconds:g} s")


def text(value: str, is_error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}], "isError": is_error}


def call_tool(name: str, arguments: dict[str, Any], cancel: threading.Event) -> dict[str, Any]:
    log_call(name, arguments)
    if name.startswith("_"):
        return call_hook(name, cancel)
    if name == "echo":
        return text(str(arguments.get("text", "")))
    if name == "add":
        return text(str(arguments["a"] + arguments["b"]))
    if name == "slow":
        seconds, gate = float(arguments.get("seconds", 1)), knob("SLOW_GATE")
        if gate is None:
            cancel.wait(seconds)
        else:
            deadline = time.monotonic() + seconds
            while not os.path.exists(gate) and not cancel.wait(0.01) and time.monotonic() < deadline:
                pass
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
        return {"content": [{"type": "image", "data": data, "mimeType": "image/png"}], "isError": False}
    if name == "spawn_grandchild":
        return text(str(spawn_grandchild(bool(arguments.get("hold_stdout", False)))))
    if name == "env":
        return text(os.environ.get(str(arguments.get("name")), "<unset>"))
    if name == "dotted.name":
        return text("dotted")
    if name == "read_only":
        return text("read only")
    if name == "refuse":
        raise Error(str(arguments.get("message", "refused")), int(arguments.get("code", -32000)))
    return text(f"unknown tool {name}", is_error=True)


def call_hook(name: str, cancel: threading.Event) -> dict[str, Any]:
    global _stop_calls
    if name == "_PostCompact":
        return text(knob("POSTCOMPACT") or "")
    more = json.loads(knob("HOOKS") or "{}")
    if name in more:
        if more[name] == "hang":
            threading.Event().wait()
        return text(more[name])
    mode = knob("STOP_MODE") or "ok"
    _stop_calls += 1
    if mode == "hang":
        spawn_grandchild()
        threading.Event().wait()  # never answers, cancelled or not
    if mode == "freeze":
        spawn_grandchild()
        time.sleep(1000)  # called in the reading thread: the server cannot even see a cancellation
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
