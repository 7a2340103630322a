"""Newline framing in linear time with a size cap: the lines of a stdio MCP server and of `--input-format
stream-json` (faces/sdk). No mcp: a run reads its stdin with it before any server starts.

Each chunk is searched once for newlines and kept as a part until its line ends, so a line costs its length, not its
length squared (joining the buffer to every chunk took 77 s for one 100 MB line). A line over the cap is counted,
not kept: only its first and last few bytes survive, where a response's id is.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The largest message we read from others: a JSON-RPC message of a stdio server, the body of a remote server's
answer or one event of its stream (http_cap.py, remote.py), one `--input-format stream-json` line
(control.py). Room for several images at the API's limit; a tool result is cut to
SPROUT_AGENT_TOOL_RESULT_MAX_BYTES for the model anyway, so more would only cost memory."""

EDGE_BYTES = 4096  # kept from each end of an oversized line: the id sits at one end of a serialised response


@dataclass(frozen=True, slots=True)
class Oversized:
    """A line longer than the cap: its size, and its first and last `EDGE_BYTES` bytes."""

    size: int
    head: bytes
    tail: bytes


_GATHER = 64 * 1024  # pieces smaller than this are gathered into one before they are kept


class LineSplitter:
    """Turns chunks into complete lines (without the newline) or `Oversized` markers; memory stays under the cap."""

    def __init__(self, limit: int = MAX_MESSAGE_BYTES) -> None:
        self._limit = limit
        self._parts: list[bytes] = []
        # Small pieces gather here first: a line fed in 2-byte reads made each its own object (~35x the bytes).
        self._pending = bytearray()
        self._size = 0
        self._head: bytes | None = None  # set once the current line is over the limit
        self._tail = b""

    def feed(self, chunk: bytes) -> Iterator[bytes | Oversized]:
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            self._add(chunk[start:end])
            yield self._finish()
            start = end + 1
        if start < len(chunk):
            self._add(chunk[start:])

    def _add(self, piece: bytes) -> None:
        self._size += len(piece)
        if self._head is None and self._size <= self._limit:
            if len(piece) >= _GATHER:
                self._flush()
                self._parts.append(piece)
                return
            self._pending += piece
            if len(self._pending) >= _GATHER:
                self._flush()
            return
        if self._head is None:  # just went over: one join of at most the limit plus a chunk, then only edges
            self._flush()
            joined = b"".join([*self._parts, piece])
            self._head, self._tail = joined[:EDGE_BYTES], joined[-EDGE_BYTES:]
            self._parts.clear()
            return
        self._tail = (self._tail + piece[-EDGE_BYTES:])[-EDGE_BYTES:]

    def _flush(self) -> None:
        if self._pending:
            self._parts.append(bytes(self._pending))
            self._pending = bytearray()

    def end(self) -> bytes | Oversized | None:
        """At the end of input: the last line if it had no newline (None if there was nothing after one)."""
        return self._finish() if self._size or self._parts or self._pending else None

    def _finish(self) -> bytes | Oversized:
        self._flush()
        line = b"".join(self._parts) if self._head is None else Oversized(self._size, self._head, self._tail)
        self._parts, self._size, self._head, self._tail = [], 0, None, b""
        return line
