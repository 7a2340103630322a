"""The bytes under the JSON-RPC connection: the stdout guard, a capped line reader, the ordered writer,
and the one place a line becomes JSON and back (strict both ways, so one odd line never ends the server)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys

import anyio
import anyio.to_thread

MAX_LINE_BYTES = 32 * 1024 * 1024  # what the TypeScript SDK accepts too


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


def decode(line: bytes) -> object:
    """One line as JSON; ValueError for anything that is not strict JSON we can hold.

    Python's parser accepts NaN and Infinity (not JSON: echoed in an id they would make our own output
    invalid), turns 1e400 into inf, and raises RecursionError on deep nesting (100000 `[`) rather than
    ValueError; all of them are a parse error here. Invalid UTF-8 and 5000-digit integers already are.
    """
    try:
        return json.loads(line, parse_constant=_not_json, parse_float=_finite)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def encode(message: dict[str, object]) -> bytes:
    """One line of JSON; ValueError if the message holds what JSON cannot (NaN, a set, a cycle, deep nesting)."""
    try:
        text = json.dumps(message, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, RecursionError) as error:
        raise ValueError(str(error)) from None
    try:
        return text.encode() + b"\n"
    except UnicodeEncodeError:  # a lone surrogate (a client's "\ud800" id or text): escaped, it is valid JSON
        return json.dumps(message, allow_nan=False, separators=(",", ":")).encode() + b"\n"


def _not_json(constant: str) -> object:
    raise ValueError(f"{constant} is not JSON")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"number out of range: {text[:20]}")
    return number


class LineTooLong:
    """Stands for a line over the cap; its bytes were skipped."""

    def __init__(self, limit: int) -> None:
        self.limit = limit


class LineReader:
    def __init__(self, fd: int, max_bytes: int = MAX_LINE_BYTES) -> None:
        self._fd = fd
        self._max = max_bytes
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer known to hold no newline: a long line is searched once
        self._skipping = False
        self._eof = False

    async def next(self) -> bytes | LineTooLong | None:
        """The next line without its newline; None once the client closed our stdin."""
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                self._scanned = 0
                return self._line(line)
            if self._eof:
                rest, self._buffer = bytes(self._buffer), bytearray()
                return self._line(rest) if rest or self._skipping else None
            if len(self._buffer) > self._max:
                self._buffer.clear()
                self._skipping = True
            self._scanned = len(self._buffer)
            # A thread per read keeps fd 0 blocking (it may be a terminal shared with a shell).
            chunk = await anyio.to_thread.run_sync(os.read, self._fd, 1 << 16, abandon_on_cancel=True)
            self._eof = not chunk
            self._buffer += chunk

    def _line(self, line: bytes) -> bytes | LineTooLong:
        if self._skipping or len(line) > self._max:  # answered once, as a whole, after its last byte
            self._skipping = False
            return LineTooLong(self._max)
        return line


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Writer:
    """One queue for every outgoing message, so updates always precede the response that follows them.

    Its own list, not a memory object stream: a stream's receiver cancelled at end-of-input loses the item
    it was just handed (the answer to a client's last line); here a line leaves the queue only to be written.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._queue: list[bytes] = []
        self._queued = anyio.Event()

    def send(self, message: dict[str, object]) -> None:
        """Queues one message; ValueError (nothing queued) if it cannot be JSON."""
        self._queue.append(encode(message))
        self._queued.set()

    async def run(self) -> None:
        while True:
            await self._queued.wait()
            self._queued = anyio.Event()
            batch, self._queue = b"".join(self._queue), []
            try:
                with anyio.CancelScope(shield=True):  # a batch taken is a batch written, even at the end
                    await anyio.to_thread.run_sync(_write_all, self._fd, batch)
            except OSError:  # the client is gone; the reader sees end-of-file next
                return

    def flush(self) -> None:
        """Writes what is still queued, at the end (a client that half-closed may still read)."""
        batch, self._queue = b"".join(self._queue), []
        with contextlib.suppress(OSError):
            _write_all(self._fd, batch)
