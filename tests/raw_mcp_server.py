"""A hand-rolled stdio MCP server for wire faults the SDK's server cannot produce: `python tests/raw_mcp_server.py`.

The SDK server only writes valid messages, so bad framing and bad JSON-RPC need a server that writes its own
lines. Stdlib only: it starts in a few tens of milliseconds. Configured by environment variables:

RAW_MCP_BAD_SCHEMA      comma list of extra tools listed with an invalid inputSchema ({"type": "string"})
RAW_MCP_ENDLESS=1       tools/list always answers one more tool and a next cursor
RAW_MCP_BAD_LISTING=1   tools/list answers {"tools": "none"}: the whole listing is invalid
RAW_MCP_PIDFILE         file the server writes its pid to once it serves
RAW_MCP_CALLS           file to which each called tool's name is appended (one a line) as the call arrives

Tools (always listed): echo(text) -> text; hang() -> blocks the whole server (it reads no more, so not even
stdin's end stops it: only a signal does); and the faults, each answering a call:
huge(bytes) -> a response line of that many bytes (streamed, never held in memory), then it keeps serving;
bad_version() -> the answer says "jsonrpc": "1.0"; surrogate() -> text with a lone surrogate ("\\ud800");
garbage() -> a line that is not JSON at all; no_id() -> a broken answer whose id is missing.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

_CHUNK = 1 << 20


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")  # ensure_ascii: a lone surrogate goes out as "\ud800"
    sys.stdout.flush()


def text_result(request_id: object, text: str, version: str = "2.0") -> dict[str, Any]:
    return {"jsonrpc": version, "id": request_id, "result": {"content": [{"type": "text", "text": text}]}}


def tool(name: str, schema: object = None) -> dict[str, Any]:
    return {"name": name, "inputSchema": schema if schema is not None else {"type": "object"}}


def list_tools(request_id: object, params: dict[str, Any]) -> None:
    cursor = int(params.get("cursor") or 0)
    if os.environ.get("RAW_MCP_ENDLESS") == "1":
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {"tools": [tool(f"t{cursor}")], "nextCursor": str(cursor + 1)},
            }
        )
        return
    if os.environ.get("RAW_MCP_BAD_LISTING") == "1":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": "none"}})
        return
    bad = [name for name in os.environ.get("RAW_MCP_BAD_SCHEMA", "").split(",") if name]
    tools = [tool("echo"), tool("hang"), *(tool(name, {"type": "string"}) for name in bad)]
    tools += [tool(name) for name in ("huge", "bad_version", "surrogate", "garbage", "no_id")]
    send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools}})


def huge(request_id: object, size: int) -> None:
    head = json.dumps(text_result(request_id, "@"))
    before, after = head.split("@")
    out = sys.stdout
    out.write(before)
    left = max(0, size - len(before) - len(after) - 1)
    while left > 0:
        out.write("x" * min(left, _CHUNK))
        left -= _CHUNK
    out.write(after + "\n")
    out.flush()


def call(request_id: object, name: str, arguments: dict[str, Any]) -> None:
    calls = os.environ.get("RAW_MCP_CALLS")
    if calls:
        with open(calls, "a") as handle:
            handle.write(name + "\n")
    if name == "hang":
        time.sleep(3600)
    elif name == "echo":
        send(text_result(request_id, str(arguments.get("text", ""))))
    elif name == "huge":
        huge(request_id, int(arguments.get("bytes", 1000)))
    elif name == "bad_version":
        send(text_result(request_id, "from the past", version="1.0"))
    elif name == "surrogate":
        send(text_result(request_id, "half a pair: \ud800"))
    elif name == "garbage":
        sys.stdout.write("this is not json\n")
        sys.stdout.flush()
    elif name == "no_id":
        send({"jsonrpc": "1.0", "result": {"content": []}})


def main() -> None:
    pidfile = os.environ.get("RAW_MCP_PIDFILE")
    if pidfile:
        with open(pidfile, "w") as handle:
            handle.write(str(os.getpid()))
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "initialize":
            info = {"name": "raw", "version": "0"}
            result = {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": info}
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/list":
            list_tools(request_id, params)
        elif method == "tools/call":
            call(request_id, params["name"], params.get("arguments") or {})
        elif request_id is not None and method is not None:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no method {method}"}})


if __name__ == "__main__":
    main()
