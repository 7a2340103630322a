"""What the client, the zygote and the child say to each other over the Unix socket.

- The client sends one request: a 5-byte header (`W` and the body's length), then the JSON body (what
  a run inherits from its caller: inherited.CARRIED, from argv, cwd and environment to limits and signals).
- The child, once it has taken the request on (everything applied but the descriptors): `{"ready": true,
  "pid": N}`. The client answers `{"go": true}` carrying its stdin, stdout and stderr as SCM_RIGHTS descriptors
  (from then on the run is the child's, and the client can no longer fall back to a cold run), or hangs up (the
  child then exits without running anything). Until `go`, the caller's descriptors are nowhere else: a client
  that goes cold leaves no copy of its stdout holding a pipe open.
- The client, after `go`: `{"signal": N}` for each signal it receives, which the child raises on itself.
- The zygote, when the child has ended: `{"exit": N}` or `{"signal": N}`, the child's wait status.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct

HEADER = struct.Struct("!cI")
MAX_BODY = 16 * 1024 * 1024  # an environment and argv, with room; more is not a request
# The signals a client relays over the socket: what a terminal, a shell or a supervisor sends a run. Stopping and
# continuing (SIGTSTP, SIGCONT) the client does itself, on the child's pid: a stopped child reads no socket.
RELAYED = frozenset(
    {
        signal.SIGINT,
        signal.SIGTERM,
        signal.SIGHUP,
        signal.SIGQUIT,
        signal.SIGWINCH,
        signal.SIGUSR1,
        signal.SIGUSR2,
    }
)


def line(**fields: object) -> bytes:
    return json.dumps(fields).encode() + b"\n"


def send_request(conn: socket.socket, body: bytes) -> None:
    conn.sendall(HEADER.pack(b"W", len(body)) + body)


def receive_request(conn: socket.socket) -> dict[str, object] | None:
    """The request; None for anything else."""
    header = _exactly(conn, HEADER.size)
    if header is None:
        return None
    kind, length = HEADER.unpack(header)
    if kind != b"W" or length > MAX_BODY:
        return None
    body = _exactly(conn, length)
    if body is None:
        return None
    try:
        request = json.loads(body)
    except ValueError:
        return None
    return request if isinstance(request, dict) else None  # pyright: ignore[reportUnknownVariableType]


def _exactly(conn: socket.socket, size: int) -> bytes | None:
    got = bytearray()
    while len(got) < size:
        chunk = conn.recv(min(size - len(got), 1 << 20))
        if not chunk:
            return None
        got += chunk
    return bytes(got)


def send_go(conn: socket.socket, fds: list[int]) -> None:
    socket.send_fds(conn, [line(go=True)], fds)


def receive_go(conn: socket.socket) -> tuple[list[int], bytes] | None:
    """The three descriptors that came with `go`, and whatever followed it on the stream; None (any descriptors
    received closed) when the client hung up or sent something else."""
    data, fds, _flags, _address = socket.recv_fds(conn, 4096, 3)
    end = data.find(b"\n")
    try:
        went = end >= 0 and json.loads(data[:end]) == {"go": True}
    except ValueError:
        went = False
    if not went or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        return None
    return fds, data[end + 1 :]


class Lines:
    """JSON objects, one per line, from a socket; a line that is not one is skipped."""

    def __init__(self, conn: socket.socket, buffered: bytes = b"") -> None:
        self._conn = conn
        self._buffer = buffered

    def next(self) -> dict[str, object] | None:
        """The next object; None at the end of the stream (or on a socket error)."""
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                raw, self._buffer = self._buffer[:end], self._buffer[end + 1 :]
                try:
                    found = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(found, dict):
                    return found  # pyright: ignore[reportUnknownVariableType]
                continue
            try:
                chunk = self._conn.recv(4096)
            except OSError:
                return None
            if not chunk:
                return None
            self._buffer += chunk
