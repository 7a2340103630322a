"""Reading a stdio server's messages: newline framing in linear time with a size cap, and an answer for every reply.

The lines and their cap are framing.py's (no mcp there). The SDK's session drops whatever fails to parse (mcp
2.3.0 `JSONRPCDispatcher._dispatch` logs an `Exception` item at debug level), so the call it answered waited for
the whole tool timeout. Here a broken or oversized reply whose id names one of our open requests becomes a
JSON-RPC error for that request, and one that answers nothing we can name ends the server with the reason. Tools
whose definition fails the protocol's validation are dropped from their `tools/list` page (the SDK would reject
the whole page).
"""

from __future__ import annotations

import json
import re
from typing import Any, cast

import mcp.types as types
from mcp.types import methods
from pydantic import ValidationError

from sprout_agent.mcp.transports.framing import MAX_MESSAGE_BYTES, Oversized


class Fatal(Exception):
    """The server sent something that answers no request we can name: the session cannot go on."""


class Requests:
    """Our requests still unanswered (id and method), and the protocol version the handshake agreed."""

    def __init__(self) -> None:
        self._open: dict[str, tuple[types.RequestId, str]] = {}
        self._version = types.LATEST_PROTOCOL_VERSION

    def sent(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCRequest):
            self._open[_key(message.id)] = (message.id, message.method)
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            self._open.pop(_key((message.params or {}).get("requestId")), None)

    def find(self, request_id: object) -> types.RequestId | None:
        found = self._open.get(_key(request_id))
        return found[0] if found is not None else None

    def answered(self, request_id: object) -> str | None:
        """Forgets the request; returns its method (None if it was not open)."""
        found = self._open.pop(_key(request_id), None)
        return found[1] if found is not None else None

    def agreed(self, version: object) -> None:
        if isinstance(version, str):
            self._version = version

    @property
    def version(self) -> str:
        return self._version


def read_message(line: bytes | Oversized, requests: Requests, skipped: list[str]) -> types.JSONRPCMessage | None:
    """The message a line carries, an error answer in place of a broken or oversized one, or None to skip it.

    Raises `Fatal` when the line answers no open request we can name. Tools dropped from a listing are
    described in `skipped`.
    """
    if isinstance(line, Oversized):
        found = _id_at_edges(line, requests)
        if found is None:
            raise Fatal(f"sent a {line.size}-byte message (limit {MAX_MESSAGE_BYTES}) that answers no open request")
        requests.answered(found)
        return _error(found, too_large(line.size))
    text = line.decode(errors="replace")
    if not text.strip():
        return None
    try:
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as exc:
        return _salvage(text, exc, requests)
    if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
        method = requests.answered(message.id)
        if isinstance(message, types.JSONRPCResponse) and method is not None:
            _check_result(method, message.result, requests, skipped)
    return message


def too_large(size: int | None) -> str:
    """The error for an answer over the cap; `size` None when it was not read to its end."""
    if size is None:
        return f"result too large: over the limit of {MAX_MESSAGE_BYTES} bytes"
    return f"result too large: {size} bytes, limit {MAX_MESSAGE_BYTES}"


def _salvage(text: str, error: ValidationError, requests: Requests) -> types.JSONRPCMessage | None:
    try:
        data: object = json.loads(text)  # lenient where pydantic is not: lone surrogates parse here
    except ValueError:
        raise Fatal(f"sent a line that is not JSON: {text[:60]!r}") from None
    if not isinstance(data, dict):
        raise Fatal(f"sent a message that is not a JSON object: {text[:60]!r}")
    fields = cast("dict[str, Any]", data)
    if "method" in fields and "id" not in fields:
        return None  # a broken notification answers nothing: dropping it keeps every call whole
    found = requests.find(fields.get("id")) if "method" not in fields else None
    why = _why(fields, error)
    if found is None:
        raise Fatal(f"sent an invalid message that answers no open request: {why}")
    requests.answered(found)
    return _error(found, f"the server's answer is not valid JSON-RPC: {why}")


def _why(fields: dict[str, Any], error: ValidationError) -> str:
    if fields.get("jsonrpc") != "2.0":
        return f'"jsonrpc" is {json.dumps(fields.get("jsonrpc"))}, not "2.0"'
    try:
        json.dumps(fields, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return "its text holds a lone surrogate (half of a UTF-16 pair), which is not valid Unicode"
    first = error.errors()[0]
    if first["type"] == "json_invalid":
        return str(first["msg"])  # e.g. a lone surrogate: "Invalid JSON: unexpected end of hex escape at ..."
    return "not a JSON-RPC 2.0 message"


_ID = r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")'
_VERSION = r'"jsonrpc"\s*:\s*"[^"]*"'
_HEAD_ID = re.compile(rf"^\s*\{{\s*(?:{_VERSION}\s*,\s*)?{_ID}".encode())
_TAIL_ID = re.compile(rf"{_ID}\s*(?:,\s*{_VERSION}\s*)?\}}\s*$".encode())


def _id_at_edges(line: Oversized, requests: Requests) -> types.RequestId | None:
    """The id of an open request named where serialisers put it: first (after "jsonrpc") or last."""
    for pattern, edge in ((_HEAD_ID, line.head), (_TAIL_ID, line.tail)):
        match = pattern.search(edge)
        if match is not None:
            found = requests.find(json.loads(match.group(1)))
            if found is not None:
                return found
    return None


def _check_result(method: str, result: dict[str, Any], requests: Requests, skipped: list[str]) -> None:
    if method == "initialize":
        requests.agreed(result.get("protocolVersion"))
    elif method == "tools/list" and isinstance(result.get("tools"), list):
        tools = cast("list[object]", result["tools"])
        result["tools"] = [tool for tool in tools if _tool_is_valid(tool, result, requests.version, skipped)]


def _tool_is_valid(tool: object, page: dict[str, Any], version: str, skipped: list[str]) -> bool:
    """Whether the page with only this tool passes the check the session makes; faults of the page itself
    are left to the session (they fail the server with their reason)."""
    try:
        methods.validate_server_result("tools/list", version, {**page, "tools": [tool]})
    except ValidationError as exc:
        faults = [error for error in exc.errors() if error["loc"][:2] == ("tools", 0)]
        if not faults:
            return True
        where = ".".join(str(part) for part in faults[0]["loc"][2:]) or "definition"
        name = cast("dict[str, object]", tool).get("name") if isinstance(tool, dict) else None
        skipped.append(f"skipped tool '{name}': invalid {where}: {faults[0]['msg']}")
        return False
    except (KeyError, ValueError):
        pass  # a version or method this SDK has no schema for: the session decides
    return True


def _error(request_id: types.RequestId, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=types.INTERNAL_ERROR, message=message)
    )


def _key(request_id: object) -> str:
    # The SDK matches 7 and "7" as one id; so do we.
    return str(request_id)
