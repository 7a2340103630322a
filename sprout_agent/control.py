"""The Claude Agent SDKs' control protocol over `--input-format stream-json`: stdin read while a turn runs.

`user` lines queue prompts; `control_request` lines are answered at once by the session's handlers (see
sdk_session.py); `control_response` lines answer the requests we send (`can_use_tool`, `mcp_message`),
matched by request id. Every line to stdout goes through one `LineWriter`: whole lines, flushed, never
interleaved, so no text inside a line (a model's, a server's) can start a line of its own.
"""

from __future__ import annotations

import itertools
import json
import math
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TextIO, cast

import anyio
import anyio.abc
import anyio.to_thread
from anyio.streams.memory import MemoryObjectReceiveStream

from sprout_agent.errors import UsageError
from sprout_agent.messages import Image
from sprout_agent.ui.jsonl import parse_user_message

Prompt = tuple[str, tuple[Image, ...]]
Body = dict[str, Any]
Handler = Callable[[Body], Awaitable[Body]]
# Lines the SDKs may write that carry nothing for us (the TypeScript SDK's keep-alives, its env updates).
IGNORED_TYPES = frozenset({"keep_alive", "update_environment_variables"})


class ControlError(Exception):
    """The SDK answered a request with an error, or could not answer it (stdin ended, no answer in time)."""


class LineWriter:
    """The one writer of stdout: each `write` is a whole line, written and flushed under a lock (the sink and
    the control channel write from the event loop; a notice may come from the model-loading thread)."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            written = self._out.write(text)
            self._out.flush()
        return written

    def flush(self) -> None:
        with self._lock:
            self._out.flush()

    def line(self, record: Mapping[str, object]) -> None:
        self.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")

    def as_text_io(self) -> TextIO:
        return cast(TextIO, self)  # write and flush are all a sink calls


class Control:
    """One SDK connection: `run` reads stdin lines until it ends; `prompts` yields the user turns."""

    def __init__(self, out: LineWriter, handlers: Mapping[str, Handler]) -> None:
        self.out = out
        self.handlers = handlers
        self._send, self.prompts = anyio.create_memory_object_stream[Prompt](math.inf)
        self._pending: dict[str, tuple[anyio.Event, list[Body | ControlError]]] = {}
        self._ids = itertools.count(1)
        self.error: UsageError | None = None  # a bad stdin line: the run ends with it (exit 2)
        self.closed = False  # stdin ended: requests can no longer be answered

    async def run(self, lines: AsyncIterator[bytes]) -> None:
        """Reads every line; answers control requests concurrently, so an interrupt is never queued behind one."""
        async with self._send, anyio.create_task_group() as group:
            number = 0
            async for line in lines:
                number += 1
                if not line.strip():
                    continue
                try:
                    self._dispatch(line, group)
                except ValueError as error:
                    self.error = UsageError(f"stdin line {number}: {error}")
                    break
            self.closed = True
            for event, slot in self._pending.values():
                slot.append(ControlError("stdin ended before the SDK answered"))
                event.set()

    def _dispatch(self, line: bytes, group: anyio.abc.TaskGroup) -> None:
        record = _json_object(line)
        kind = record.get("type") if record is not None else None
        if record is None or kind == "user":
            self._send.send_nowait(parse_user_message(line))  # says what is wrong with a line that is not JSON
        elif kind == "control_request":
            request_id, request = record.get("request_id"), record.get("request")
            if not isinstance(request_id, str) or not isinstance(request, dict):
                raise ValueError('a control_request needs a string "request_id" and a "request" object')
            group.start_soon(self._answer, request_id, cast(Body, request))
        elif kind == "control_response":
            self._resolve(record.get("response"))
        elif kind == "control_cancel_request" or kind in IGNORED_TYPES:
            return  # we answer each request at once: nothing of ours is left to cancel
        else:
            raise ValueError(f"unexpected line type {kind!r} (expected user, control_request or control_response)")

    async def _answer(self, request_id: str, request: Body) -> None:
        subtype = request.get("subtype")
        handler = self.handlers.get(subtype) if isinstance(subtype, str) else None
        if handler is None:
            self._respond_error(request_id, f"unsupported control request subtype: {subtype!r}")
            return
        try:
            body = await handler(request)
        except Exception as error:  # whatever fails answers this request only: the session goes on
            self._respond_error(request_id, str(error) or type(error).__name__)
            return
        self.out.line(
            {"type": "control_response", "response": {"subtype": "success", "request_id": request_id, "response": body}}
        )

    def _respond_error(self, request_id: str, message: str) -> None:
        response = {"subtype": "error", "request_id": request_id, "error": message}
        self.out.line({"type": "control_response", "response": response})

    def _resolve(self, response: object) -> None:
        if not isinstance(response, dict):
            raise ValueError('a control_response needs a "response" object')
        answer = cast(Body, response)
        waiting = self._pending.get(str(answer.get("request_id")))
        if waiting is None:
            return  # an answer to a request we gave up on (cancelled, timed out)
        event, slot = waiting
        if answer.get("subtype") == "error":
            slot.append(ControlError(str(answer.get("error") or "the SDK answered with an error")))
        else:
            inner = answer.get("response")
            slot.append(cast(Body, inner) if isinstance(inner, dict) else {})
        event.set()

    async def request(self, subtype: str, fields: Body, timeout: float) -> Body:
        """Sends `control_request` and waits (at most `timeout` s) for its answer; ControlError if none comes.
        Cancelled while waiting, it tells the SDK so (`control_cancel_request`)."""
        if self.closed:
            raise ControlError("stdin has ended: the SDK can no longer answer")
        request_id = f"sprout_{next(self._ids)}"
        event, slot = anyio.Event(), list[Body | ControlError]()
        self._pending[request_id] = (event, slot)
        self.out.line({"type": "control_request", "request_id": request_id, "request": {"subtype": subtype, **fields}})
        try:
            with anyio.fail_after(timeout):
                await event.wait()
        except TimeoutError:
            raise ControlError(f"no answer from the SDK to {subtype} within {timeout:g} s") from None
        except anyio.get_cancelled_exc_class():
            self.out.line({"type": "control_cancel_request", "request_id": request_id})
            raise
        finally:
            del self._pending[request_id]
        answer = slot[0]
        if isinstance(answer, ControlError):
            raise answer
        return answer


def _json_object(line: bytes) -> dict[str, Any] | None:
    """The line as a JSON object; None when it is not one (parse_user_message then says why)."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return cast(dict[str, Any], data) if isinstance(data, dict) else None


async def stdin_lines(read: Callable[[], bytes]) -> AsyncIterator[bytes]:
    """Lines from a blocking `read` (stdin's readline), each read in a thread, until it returns b''."""
    while line := await anyio.to_thread.run_sync(read, abandon_on_cancel=True):
        yield line


async def prompts_of(control: Control) -> AsyncIterator[Prompt]:
    """The queued user turns, until stdin ends; a bad line ends them with its error."""
    receive: MemoryObjectReceiveStream[Prompt] = control.prompts
    async with receive:
        async for prompt in receive:
            yield prompt
    if control.error is not None:
        raise control.error
