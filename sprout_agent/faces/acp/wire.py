"""JSON-RPC 2.0 for ACP: a connection that calls each handler as its message is read, runs what must wait as a
task, matches the answers to our own requests, and answers every bad message with the error the spec names.

Ours, not the agent side of the ACP Python SDK (`agent-client-protocol` 0.12.1, `acp.run_agent`; the tests drive us
with that SDK as the editor), because: `import acp` takes ~1 s here, three quarters of it building the pydantic
models of acp/schema.py, while this module needs only anyio and `initialize` is answered before the agent's own
heavy imports; its stdio streams (acp/stdio.py) give fd 0 and fd 1 to asyncio pipe transports, which set both
non-blocking (shared with the terminal or the parent shell) and leave fd 1 open to any stray print or child;
`AgentSideConnection` accepts only asyncio StreamReader/StreamWriter and runs handlers as loose asyncio tasks,
outside our anyio cancel scopes; and it does not handle `$/cancel_request`.
"""

from __future__ import annotations

import inspect
import itertools
import math
import sys
import traceback
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeGuard, cast

import anyio
from anyio.abc import TaskGroup

from sprout_agent.faces.acp.lines import LineReader, LineTooLong, Writer, decode

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
RESOURCE_NOT_FOUND = -32002

Json = dict[str, object]
Id = str | int | float  # JSON-RPC allows any number; a null id is answered but cannot be cancelled
# A handler returns its result (answered at once) or an awaitable of it (run as a task); either may be a Reply.
RequestHandler = Callable[[Json], object]
NotificationHandler = Callable[[Json], None]


class RpcError(Exception):
    """Answered to the client as a JSON-RPC error object."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Reply:
    """A handler's result plus what to send right after it (e.g. updates that need the session to exist)."""

    def __init__(self, result: object, then: Callable[[], None]) -> None:
        self.result = result
        self.then = then


class Connection:
    """Serves one client; no message, however malformed, ends it (only end-of-input does).

    Every handler is called as its line is read, in wire order, so a notification sees every request sent
    before it: a `session/cancel` or `$/cancel_request` right behind its request (in the same write) finds it,
    even though the request's awaitable has not started yet. Awaitables run as tasks, so a prompt never
    blocks a cancel; answers and notifications go out through one ordered writer.
    """

    def __init__(
        self, writer: Writer, requests: Mapping[str, RequestHandler], notifications: Mapping[str, NotificationHandler]
    ) -> None:
        self._writer = writer
        self._requests = requests
        self._notifications = notifications
        self._ids = itertools.count(1)
        self._waiting: dict[int, tuple[anyio.Event, list[Json]]] = {}
        self._running: dict[Id, anyio.CancelScope] = {}

    def notify(self, method: str, params: Json) -> None:
        try:
            self._writer.send({"jsonrpc": "2.0", "method": method, "params": params})
        except ValueError as error:  # our bug; one lost update must not end the turn
            print(f"sprout-agent: dropped a {method} that is not JSON: {error}", file=sys.stderr)

    async def request(self, method: str, params: Json) -> object:
        """Sends a request to the client and waits for its answer; an error answer raises RpcError."""
        number = next(self._ids)
        done, box = anyio.Event(), cast(list[Json], [])
        self._waiting[number] = (done, box)
        try:
            try:
                self._writer.send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
            except ValueError as error:
                raise RpcError(INTERNAL_ERROR, f"the {method} request is not JSON: {error}") from None
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
                try:
                    self._dispatch(group, line)
                except Exception:  # a bug in one message's handling: say so, and serve the next one
                    traceback.print_exc(file=sys.stderr)
            group.cancel_scope.cancel()
        self._writer.flush()

    def _decode(self, line: bytes | LineTooLong) -> Json | None:
        """The message as an object, or None once the error (if any) has been answered."""
        if isinstance(line, LineTooLong):
            return self._error(None, INVALID_REQUEST, f"Invalid Request: a message longer than {line.limit} bytes")
        if not line.strip():
            return None
        try:
            message = decode(line)
        except ValueError as error:
            return self._error(None, PARSE_ERROR, f"Parse error: {error}"[:200])
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
            return self._error(ident, METHOD_NOT_FOUND, f"Method not found: {method}"[:200])
        return self._call(group, ident, method, cast(Json, params))

    def _answered(self, message: Json) -> None:
        ident = message.get("id")
        waiting = self._waiting.get(ident) if isinstance(ident, int) and not isinstance(ident, bool) else None
        if waiting is not None:
            waiting[1].append(message)
            waiting[0].set()

    def _notified(self, method: str, params: object) -> None:
        """Notifications get no answer, right or wrong: a bad one is ignored, as are unknown ones (the spec)."""
        if not isinstance(params, dict):
            return
        params = cast(Json, params)
        if method == "$/cancel_request":
            ident = params.get("requestId")
            scope = self._running.get(ident) if _valid_id(ident) and ident is not None else None
            if scope is not None:
                scope.cancel()
            return
        handler = self._notifications.get(method)
        if handler is not None:
            try:
                handler(params)
            except Exception:
                traceback.print_exc(file=sys.stderr)

    def _call(self, group: TaskGroup, ident: Id | None, method: str, params: Json) -> None:
        try:
            work = self._requests[method](params)
        except Exception as error:
            return self._failed(ident, error)
        if not inspect.isawaitable(work):
            return self._answer(ident, work)
        scope = anyio.CancelScope()  # registered now, so a cancel that arrives before the task starts finds it
        if ident is not None:
            self._running[ident] = scope
        group.start_soon(self._run, ident, scope, work)
        return None

    async def _run(self, ident: Id | None, scope: anyio.CancelScope, work: Awaitable[object]) -> None:
        try:
            with scope:
                try:
                    result = await work
                except Exception as error:
                    return self._failed(ident, error)
                self._answer(ident, result)
        finally:
            if ident is not None and self._running.get(ident) is scope:  # a reused id may belong to another
                del self._running[ident]
        if scope.cancelled_caught:
            self._error(ident, REQUEST_CANCELLED, "Request cancelled")
        return None

    def _answer(self, ident: Id | None, result: object) -> None:
        then = result.then if isinstance(result, Reply) else None
        value = result.result if isinstance(result, Reply) else result
        try:
            self._writer.send({"jsonrpc": "2.0", "id": ident, "result": value})
        except ValueError as error:  # our bug; the client still gets an answer
            return self._error(ident, INTERNAL_ERROR, f"Internal error: the result is not JSON: {error}")
        if then is not None:
            try:
                then()
            except Exception:  # the answer is out; what follows it is best effort
                traceback.print_exc(file=sys.stderr)
        return None

    def _failed(self, ident: Id | None, error: Exception) -> None:
        if isinstance(error, RpcError):
            return self._error(ident, error.code, error.message)
        traceback.print_exception(error, file=sys.stderr)  # a bug must not take the agent down: report it, go on
        return self._error(ident, INTERNAL_ERROR, f"Internal error: {type(error).__name__}: {error}")

    def _error(self, ident: object, code: int, message: str) -> None:
        self._writer.send({"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}})


def _valid_id(ident: object) -> TypeGuard[Id | None]:
    """A string, a number or null (JSON-RPC 2.0); decode() already refused NaN and infinities."""
    if isinstance(ident, bool):
        return False
    return ident is None or isinstance(ident, str | int) or (isinstance(ident, float) and math.isfinite(ident))


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default
