"""The Claude Agent SDKs' control protocol over `--input-format stream-json`: stdin read while a turn runs.

`user` lines queue prompts; `control_request` lines are answered at once by the session's handlers (see
sdk_session.py); `control_response` lines answer the requests we send (`can_use_tool`, `mcp_message`),
matched by request id. Every line to stdout goes through one `LineWriter`: whole lines, flushed, never
interleaved, so no text inside a line (a model's, a server's) can start a line of its own.

stdin is read in chunks and split by stdio_wire's `LineSplitter`, so a line is held only up to the stdio cap
(MAX_MESSAGE_BYTES); readline() held a whole 300 MB line (1.2 GB once parsed). A line over the cap
is counted to its newline, not kept, and skipped with one line on stderr; the run goes on. Where the protocol
has a place for the error, it goes there too: a `control_request` gets an error answer, a `control_response`
fails our request it answers (their ids are read from the line's first or last bytes, where the SDKs'
serialisers put them), and any other line, taken for a user message, gets an error `result` (run.py).

User lines wait for their turn in a `PromptQueue` (prompt_queue.py): bounded in bytes, in memory then on disk, and
stdin is held back only beyond both and never while a request of ours waits for its answer (it may be behind them).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO, cast

import anyio
import anyio.abc
import anyio.to_thread

from sprout_agent.core.errors import UsageError
from sprout_agent.core.messages import Image
from sprout_agent.faces.sdk.prompt_queue import PromptQueue
from sprout_agent.faces.sdk.user_lines import parse_user_message
from sprout_agent.mcp.transports.framing import MAX_MESSAGE_BYTES, LineSplitter, Oversized

MAX_WAITING = 64  # control requests being answered at once (the SDKs send a few)
WAITING_BYTES = 2 * MAX_MESSAGE_BYTES  # and their lines' bytes
_TOO_MANY = "too many control requests are being answered ({} requests, {} bytes): send it again after their answers"


@dataclass(frozen=True, slots=True)
class Skipped:
    """A stdin line over the cap, taken for a user message: it is not run, and its `result` says why."""

    reason: str


Prompt = tuple[str, tuple[Image, ...]]
Queued = Prompt | Skipped
Body = dict[str, Any]
Handler = Callable[[Body], Awaitable[Body]]
# Lines the SDKs may write that carry nothing for us (the TypeScript SDK's keep-alives, its env updates).
IGNORED_TYPES = frozenset({"keep_alive", "update_environment_variables"})
_READ_BYTES = 64 * 1024  # one read of stdin: a line is split from these, never read whole
# A skipped line's reason is queued after a NUL, which no JSON line starts with; a user line is queued as it came.
_SKIPPED = b"\0"
_ID = r'"request_id"\s*:\s*("(?:[^"\\]|\\.)*")'
_TYPE = r'"type"\s*:\s*"{}"'
# Where a control line's id sits: after "type" (the SDKs write type, request_id, request first), or, with keys
# sorted, last before "type" (a control_request) or first inside "response" (a control_response).
_Edges = tuple[tuple[re.Pattern[bytes], bool], ...]  # (pattern, search the tail rather than the head)
_REQUEST_ID: _Edges = (
    (re.compile(rf"^\s*\{{\s*{_TYPE.format('control_request')}\s*,\s*{_ID}".encode()), False),
    (re.compile(rf"{_ID}\s*,\s*{_TYPE.format('control_request')}\s*\}}\s*$".encode()), True),
)
_RESPONSE_ID: _Edges = (
    (
        re.compile(rf'^\s*\{{\s*{_TYPE.format("control_response")}\s*,\s*"response"\s*:\s*\{{[^{{}}]*?{_ID}'.encode()),
        False,
    ),
    (re.compile(rf'^\s*\{{\s*"response"\s*:\s*\{{\s*{_ID}'.encode()), False),
)


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

    def __init__(
        self,
        out: LineWriter,
        handlers: Mapping[str, Handler],
        note: Callable[[str], None] = lambda _: None,
        queue: PromptQueue | None = None,
        waiting: tuple[int, int] = (MAX_WAITING, WAITING_BYTES),
    ) -> None:
        self.out = out
        # Requests being answered, and their lines' bytes, at most `waiting`: a handler may wait (for the servers
        # to start), and each held its whole request; forty 8 MB `mcp_status` lines took 340 MB. Over the bound a
        # request is refused at once, so stdin is still read (an interrupt, the answers a turn waits for).
        self._bound = waiting
        self._waiting, self._waiting_bytes = 0, 0
        self.handlers = handlers
        self.note = note  # one line for stderr: a stdin line was skipped
        self.queue = queue or PromptQueue()  # user lines as read, and skipped lines' reasons (after _SKIPPED)
        self._pending: dict[str, tuple[anyio.Event, list[Body | ControlError]]] = {}
        self._ids = itertools.count(1)
        self.error: UsageError | None = None  # a bad stdin line: the run ends with it (exit 2)
        self.closed = False  # stdin ended: requests can no longer be answered
        # The first line has been read (or stdin ended without one), and whether it was the SDK's `initialize`:
        # a session that waits for it (run.py) knows then whether to wait for its answer too.
        self.first_line = anyio.Event()
        self.began_with_initialize: bool = False

    async def run(self, lines: AsyncIterator[bytes | Oversized]) -> None:
        """Reads every line; answers control requests concurrently, so an interrupt is never queued behind one. A
        user line is queued; the next line is read once the queue has room (`PromptQueue.room`)."""
        async with anyio.create_task_group() as group:
            try:
                number = 0
                async for line in lines:
                    number += 1
                    try:
                        queued = self._take(line, number, group)
                    except ValueError as error:
                        self.error = UsageError(f"stdin line {number}: {error}")
                        break
                    if queued is not None and not await self._queued(queued, number):
                        break
                    await self.queue.room(lambda: bool(self._pending))
            finally:
                self._ended()

    async def _queued(self, line: bytes, number: int) -> bool:
        """Queues a line for the turns; a spool file that cannot take it (a full disk) ends the reading with that
        error, as a bad line does: a message is never dropped."""
        try:
            await self.queue.put(line)
        except OSError as error:
            self.error = UsageError(f"stdin line {number}: could not queue it: {error.strerror or error}")
            return False
        return True

    def _take(self, line: bytes | Oversized, number: int, group: anyio.abc.TaskGroup) -> bytes | None:
        """One line handled; what to queue for the turns (None: nothing). ValueError: a line the run ends on."""
        if isinstance(line, Oversized):
            return self._skip(line, number)
        if not line.strip():
            return None
        try:
            return self._dispatch(line, group)
        finally:
            self.first_line.set()

    def _ended(self) -> None:
        """stdin ended (or a bad line ended the reading): the queue ends after what it holds, and every request
        still waiting for the SDK's answer fails."""
        self.closed = True
        self.first_line.set()
        self.queue.close()
        for event, slot in self._pending.values():
            slot.append(ControlError("stdin ended before the SDK answered"))
            event.set()

    def _dispatch(self, line: bytes, group: anyio.abc.TaskGroup) -> bytes | None:
        record = _json_object(line)
        kind = record.get("type") if record is not None else None
        if record is None or kind == "user":
            record = None  # one parse at a time: a 15 MiB line may take 60 MiB parsed (4 bytes a character)
            parse_user_message(line)  # says what is wrong with a line that is not JSON; parsed again in its turn
            return line
        elif kind == "control_request":
            request_id, request = record.get("request_id"), record.get("request")
            if not isinstance(request_id, str) or not isinstance(request, dict):
                raise ValueError('a control_request needs a string "request_id" and a "request" object')
            body = cast(Body, request)
            if not self.first_line.is_set():
                self.began_with_initialize = body.get("subtype") == "initialize"
            if not self._admit(len(line)):
                self._respond_error(request_id, _TOO_MANY.format(self._waiting, self._waiting_bytes))
            else:
                group.start_soon(self._answer, request_id, body, len(line))
        elif kind == "control_response":
            self._resolve(record.get("response"))
        elif kind != "control_cancel_request" and kind not in IGNORED_TYPES:  # we answer each request at once
            raise ValueError(f"unexpected line type {kind!r} (expected user, control_request or control_response)")
        return None

    def _skip(self, line: Oversized, number: int) -> bytes | None:
        """The error for a line over the cap: on stderr, and where the protocol has a place for it."""
        size = f"{line.size} bytes, over the limit of {MAX_MESSAGE_BYTES}"
        reason = f"stdin line {number}: {size}"
        self.note(f"{reason}: skipped")
        request_id = _id_at_edges(_REQUEST_ID, line)
        if request_id is not None:
            self._respond_error(request_id, reason)
            return None
        response_id = _id_at_edges(_RESPONSE_ID, line)
        if response_id is None:  # any other line is taken for a prompt
            return _SKIPPED + reason.encode()
        if response_id in self._pending:  # an answer we no longer wait for needs nothing more
            self._resolve({"subtype": "error", "request_id": response_id, "error": f"the SDK's answer is {size}"})
        return None

    def _admit(self, size: int) -> bool:
        count, limit = self._waiting, self._bound
        if count and (count >= limit[0] or self._waiting_bytes + size > limit[1]):
            return False  # the first always fits: one line is at most the cap
        self._waiting, self._waiting_bytes = count + 1, self._waiting_bytes + size
        return True

    async def _answer(self, request_id: str, request: Body, size: int) -> None:
        try:
            await self._answer_now(request_id, request)
        finally:
            self._waiting, self._waiting_bytes = self._waiting - 1, self._waiting_bytes - size

    async def _answer_now(self, request_id: str, request: Body) -> None:
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
        self.queue.wake()  # a reader held back by a full queue reads on: the answer may be behind the queued lines
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


def _id_at_edges(patterns: _Edges, line: Oversized) -> str | None:
    for pattern, in_tail in patterns:
        match = pattern.search(line.tail if in_tail else line.head)
        if match is not None:
            try:
                found: object = json.loads(match.group(1))
            except ValueError:  # an escape JSON has not got ("\q"): no id we could answer
                return None
            return found if isinstance(found, str) else None
    return None


def _json_object(line: bytes) -> dict[str, Any] | None:
    """The line as a JSON object; None when it is not one (parse_user_message then says why)."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return cast(dict[str, Any], data) if isinstance(data, dict) else None


async def stdin_lines(read: Callable[[int], bytes]) -> AsyncIterator[bytes | Oversized]:
    """Lines (or `Oversized` markers) from a blocking `read(n)` (stdin's read1), each read in a thread, until it
    returns b''; the last line needs no newline."""
    lines = LineSplitter()
    while chunk := await anyio.to_thread.run_sync(read, _READ_BYTES, abandon_on_cancel=True):
        for line in lines.feed(chunk):
            yield line
    last = lines.end()
    if last is not None:
        yield last


async def prompts_of(control: Control) -> AsyncIterator[Queued]:
    """The queued user turns (and skipped lines), until stdin ends; a bad line ends them with its error."""
    while (queued := await control.queue.get()) is not None:
        yield Skipped(queued[1:].decode()) if queued.startswith(_SKIPPED) else parse_user_message(queued)
    if control.error is not None:
        raise control.error
