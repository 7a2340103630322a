"""JSON-RPC 2.0 over stdio, one message per line: the stdout guard, the line reader, the ordered writer,
and a connection that dispatches requests as tasks and matches the answers to our own requests.

Ours, not the agent side of the ACP Python SDK (`agent-client-protocol` 0.12.1, `acp.run_agent`; the tests drive us
with that SDK as the editor), because: `import acp` takes ~1 s here, three quarters of it building the pydantic
models of acp/schema.py, while this module needs only anyio and `initialize` is answered before the agent's own
heavy imports; its stdio streams (acp/stdio.py) give fd 0 and fd 1 to asyncio pipe transports, which set both
non-blocking (shared with the terminal or the parent shell) and leave fd 1 open to any stray print or child;
`AgentSideConnection` accepts only asyncio StreamReader/StreamWriter and runs handlers as loose asyncio tasks,
outside our anyio cancel scopes; and it does not handle `$/cancel_request`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import sys
import traceback
from collections.abc import Awaitable, Callable, Mapping
from typing import cast

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
RESOURCE_NOT_FOUND = -32002
MAX_LINE_BYTES = 32 * 1024 * 1024  # what the TypeScript SDK accepts too

Json = dict[str, object]
RequestHandler = Callable[[Json], Awaitable[object]]
NotificationHandler = Callable[[Json], None]


class RpcError(Exception):
    """Answered to the client as a JSON-RPC error object."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def guard_stdio() -> tuple[int, int]:
    """Moves the protocol onto private descriptors: fd 1 becomes stderr and fd 0 /dev/null.

    A stray print, a library's logging or a child that inherits fd 1 then writes to stderr, and no child can
    read the client's bytes. Returns (read_fd, write_fd); `os.dup` makes both non-inheritable.
    """
    read_fd, write_fd = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdout = sys.stderr
    return read_fd, write_fd


class Reply:
    """A handler's result plus what to send right after it (e.g. updates that need the session to exist)."""

    def __init__(self, result: object, then: Callable[[], None]) -> None:
        self.result = result
        self.then = then


class LineTooLong:
    """Stands for a line over the cap; its bytes were skipped."""


class LineReader:
    def __init__(self, fd: int, max_bytes: int = MAX_LINE_BYTES) -> None:
        self._fd = fd
        self._max = max_bytes
        self._buffer = bytearray()
        self._skipping = False
        self._eof = False

    async def next(self) -> bytes | LineTooLong | None:
        """The next line without its newline; None once the client closed our stdin."""
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                if self._skipping:
                    self._skipping = False
                    return LineTooLong()
                return line
            if self._eof:
                rest, self._buffer = bytes(self._buffer), bytearray()
                return rest if rest and not self._skipping else None
            if len(self._buffer) > self._max:
                self._buffer.clear()
                self._skipping = True
            # A thread per read keeps fd 0 blocking (it may be a terminal shared with a shell).
            chunk = await anyio.to_thread.run_sync(os.read, self._fd, 1 << 16, abandon_on_cancel=True)
            self._eof = not chunk
            self._buffer += chunk


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Writer:
    """One queue for every outgoing message, so updates always precede the response that follows them."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._send, self._receive = anyio.create_memory_object_stream[bytes](math.inf)

    def send(self, message: Json) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        self._send.send_nowait(line)

    async def run(self) -> None:
        async for first in self._receive:
            batch = [first]
            while True:
                try:
                    batch.append(self._receive.receive_nowait())
                except anyio.WouldBlock:
                    break
            try:
                await anyio.to_thread.run_sync(_write_all, self._fd, b"".join(batch))
            except OSError:  # the client is gone; the reader sees end-of-file next
                return

    def flush(self) -> None:
        """Writes what is still queued, at the end (a client that half-closed may still read)."""
        batch: list[bytes] = []
        while True:
            try:
                batch.append(self._receive.receive_nowait())
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                break
        with contextlib.suppress(OSError):
            _write_all(self._fd, b"".join(batch))


class Connection:
    """Serves one client: requests run as tasks (a prompt never blocks a cancel), answers go out in order."""

    def __init__(
        self, writer: Writer, requests: Mapping[str, RequestHandler], notifications: Mapping[str, NotificationHandler]
    ) -> None:
        self._writer = writer
        self._requests = requests
        self._notifications = notifications
        self._ids = itertools.count(1)
        self._waiting: dict[int, tuple[anyio.Event, list[Json]]] = {}
        self._running: dict[str | int, anyio.CancelScope] = {}

    def notify(self, method: str, params: Json) -> None:
        self._writer.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Json) -> object:
        """Sends a request to the client and waits for its answer; an error answer raises RpcError."""
        number = next(self._ids)
        done, box = anyio.Event(), cast(list[Json], [])
        self._waiting[number] = (done, box)
        try:
            self._writer.send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
            await done.wait()
        finally:
            self._waiting.pop(number, None)
        answer = box[0]
        error = answer.get("error")
        if isinstance(error, dict):
            error = cast(Json, error)
            raise RpcError(_int(error.get("code"), INTERNAL_ERROR), str(error.get("message", "")))
        return answer.get("result")

    async def serve(self, reader: LineReader) -> None:
        """Reads until end-of-file, then cancels everything still running."""
        async with anyio.create_task_group() as group:
            group.start_soon(self._writer.run)
            while (line := await reader.next()) is not None:
                self._dispatch(group, line)
            group.cancel_scope.cancel()
        self._writer.flush()

    def _decode(self, line: bytes | LineTooLong) -> Json | None:
        """The message as an object, or None once the error (if any) has been answered."""
        if isinstance(line, LineTooLong):
            return self._error(None, INVALID_REQUEST, f"message longer than {MAX_LINE_BYTES} bytes")
        if not line.strip():
            return None
        try:
            message: object = json.loads(line)
        except ValueError:
            return self._error(None, PARSE_ERROR, "Parse error")
        if not isinstance(message, dict):
            return self._error(None, INVALID_REQUEST, "Invalid Request: expected a JSON object")
        return cast(Json, message)

    def _dispatch(self, group: TaskGroup, line: bytes | LineTooLong) -> None:
        message = self._decode(line)
        if message is None:
            return None
        if "method" not in message and "id" in message and ("result" in message or "error" in message):
            return self._answered(message)
        method, ident = message.get("method"), message.get("id")
        params: object = message.get("params", {})
        if message.get("jsonrpc") != "2.0" or not isinstance(method, str) or not _valid_id(ident):
            return self._error(ident if _valid_id(ident) else None, INVALID_REQUEST, "Invalid Request")
        if params is None:
            params = {}
        if "id" not in message:
            return self._notified(method, params)
        if not isinstance(params, dict):
            return self._error(ident, INVALID_PARAMS, "Invalid params: expected an object")
        if method not in self._requests:
            return self._error(ident, METHOD_NOT_FOUND, f"Method not found: {method}")
        group.start_soon(self._run, cast("str | int | None", ident), method, cast(Json, params))
        return None

    def _answered(self, message: Json) -> None:
        ident = message.get("id")
        waiting = self._waiting.get(ident) if isinstance(ident, int) else None
        if waiting is not None:
            waiting[1].append(message)
            waiting[0].set()

    def _notified(self, method: str, params: object) -> None:
        if not isinstance(params, dict):
            return
        params = cast(Json, params)
        if method == "$/cancel_request":
            scope = self._running.get(cast("str | int", params.get("requestId")))
            if scope is not None:
                scope.cancel()
            return
        handler = self._notifications.get(method)
        if handler is not None:  # unknown notifications are ignored, as the spec asks
            try:
                handler(params)
            except Exception:
                traceback.print_exc(file=sys.stderr)

    async def _run(self, ident: str | int | None, method: str, params: Json) -> None:
        handler = self._requests[method]
        with anyio.CancelScope() as scope:
            if ident is not None:
                self._running[ident] = scope
            try:
                result = await handler(params)
            except RpcError as error:
                return self._error(ident, error.code, error.message)
            except Exception as error:  # a bug must not take the agent down: report it and go on
                traceback.print_exc(file=sys.stderr)
                return self._error(ident, INTERNAL_ERROR, f"Internal error: {type(error).__name__}: {error}")
            finally:
                if ident is not None:
                    self._running.pop(ident, None)
            then = result.then if isinstance(result, Reply) else None
            result = result.result if isinstance(result, Reply) else result
            self._writer.send({"jsonrpc": "2.0", "id": ident, "result": result})
            if then is not None:
                then()
        if scope.cancelled_caught:
            self._error(ident, REQUEST_CANCELLED, "Request cancelled")
        return None

    def _error(self, ident: object, code: int, message: str) -> None:
        self._writer.send({"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}})


def _valid_id(ident: object) -> bool:
    return ident is None or isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool))


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default
