"""The queue of stdin lines waiting for their turn (`--input-format stream-json`): first-in first-out, bounded in
bytes in memory, then spilled to an unnamed temporary file, and beyond both held back on stdin itself.

Ten 15 MiB prompts written during a turn took about 800 MB when every line read was kept parsed. Now the queue keeps
each line as the bytes it came as (parsed again when its turn comes); at most `memory_bytes` of them stay in memory.
Later lines go to the spool file, so stdin is still read, and the lines behind the prompts still arrive: the SDK's
`interrupt` and, above all, its answers to our own requests (`can_use_tool`, `hook_callback`, `mcp_message`), which
the running turn waits for. Holding stdin at the memory bound would wedge that turn: the SDK writes its lines one
after another, so its answer would sit in the pipe behind a prompt we refused to read. Once the spool holds
`spool_bytes` too, `room` holds the reader back (the writer blocks in the pipe) until a turn takes a line, except
while a request of ours waits for its answer: then the reader goes on and the spool (disk, not memory) grows past its
bound for as long as that wait lasts (its own timeout bounds it). docs/stream-json.md, "Queued messages".
"""

from __future__ import annotations

import os
import struct
import tempfile
from collections import deque
from collections.abc import Callable
from typing import BinaryIO

import anyio
import anyio.to_thread

from sprout_agent.mcp.transports.framing import MAX_MESSAGE_BYTES

MEMORY_BYTES = 4 * MAX_MESSAGE_BYTES  # 64 MiB: four lines at the cap (one line always fits: the queue's first)
SPOOL_BYTES = 64 * MAX_MESSAGE_BYTES  # 1 GiB on disk before stdin is held back
_LENGTH = struct.Struct(">I")  # each spooled line: its length, then its bytes
_PER_LINE = 64  # what a line costs in memory besides its bytes (the bytes object, its place in the deque)


class PromptQueue:
    """One reader puts lines, one consumer gets them, in order; `close` ends the queue after what it holds."""

    def __init__(self, memory_bytes: int = MEMORY_BYTES, spool_bytes: int = SPOOL_BYTES) -> None:
        self.memory_bytes = memory_bytes
        self.spool_bytes = spool_bytes
        self._memory: deque[bytes] = deque()
        self.in_memory = 0  # what the lines held in memory cost (their bytes, and _PER_LINE each)
        self._spool: BinaryIO | None = None
        self._read_at = 0  # the spool's next line to get
        self._end = 0  # where the next spilled line goes (reserved before its write, which runs in a thread)
        self._spooled = 0  # lines spilled and written whole, not yet taken
        self._writing = False
        self._changed = anyio.Event()
        self._closed = False

    @property
    def queued_bytes(self) -> int:
        return self.in_memory + self._end - self._read_at

    @property
    def full(self) -> bool:
        return self.queued_bytes >= self.memory_bytes + self.spool_bytes

    async def put(self, line: bytes) -> None:
        """Queues `line` after every line before it: in memory while that stays under its bound (the first line
        always), else in the spool (a thread writes it: the event loop goes on answering control requests)."""
        if self._spooled == 0 and not self._writing and (not self._memory or self.fits(len(line))):
            self._memory.append(line)
            self.in_memory += len(line) + _PER_LINE
        else:
            await self._spill(line)
        self.wake()

    def fits(self, size: int) -> bool:
        return self.in_memory + size + _PER_LINE <= self.memory_bytes

    async def get(self) -> bytes | None:
        """The oldest line, waiting for one; None once the queue is closed and empty."""
        while True:
            if self._memory:
                line = self._memory.popleft()
                self.in_memory -= len(line) + _PER_LINE
                self.wake()
                return line
            if self._spooled:
                return await self._unspill()
            if self._closed:
                return None
            await self._wait()

    async def room(self, must_read: Callable[[], bool]) -> None:
        """Returns when the reader may read another line: the queue is under both bounds, or `must_read` (a request
        of ours waits for its answer, which may be behind the queued lines). `wake` makes it look again."""
        while self.full and not must_read():
            await self._wait()

    def wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def close(self) -> None:
        """Nothing more will be put; `get` returns what is held, then None."""
        self._closed = True
        self.wake()

    async def _wait(self) -> None:
        await self._changed.wait()

    async def _spill(self, line: bytes) -> None:
        if self._spool is None:
            # 0600 and unlinked (no name to open); closed with the queue, when the run ends.
            self._spool = tempfile.TemporaryFile(prefix="sprout-agent-stdin-")  # noqa: SIM115
        offset, fd = self._end, self._spool.fileno()
        self._end += _LENGTH.size + len(line)
        self._writing = True
        try:
            await anyio.to_thread.run_sync(_write_at, fd, _LENGTH.pack(len(line)) + line, offset)
        finally:
            self._writing = False
        self._spooled += 1

    async def _unspill(self) -> bytes:
        assert self._spool is not None
        fd = self._spool.fileno()
        (size,) = _LENGTH.unpack(await anyio.to_thread.run_sync(_read_at, fd, _LENGTH.size, self._read_at))
        line = await anyio.to_thread.run_sync(_read_at, fd, size, self._read_at + _LENGTH.size)
        self._read_at += _LENGTH.size + size
        self._spooled -= 1
        if self._spooled == 0 and not self._writing:  # drained: the file starts over (its blocks are freed)
            self._read_at = self._end = 0
            os.ftruncate(fd, 0)
        self.wake()
        return line


def _write_at(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


def _read_at(fd: int, size: int, offset: int) -> bytes:
    parts: list[bytes] = []
    while size:
        part = os.pread(fd, size, offset)
        if not part:
            raise OSError("the stdin spool file ended early")
        parts.append(part)
        size, offset = size - len(part), offset + len(part)
    return b"".join(parts)
