"""What the client, the zygote and the child say to each other over the Unix socket.

The client sends one request: a 5-byte header (`W` and the body's length) carrying its stdin, stdout and stderr
as SCM_RIGHTS descriptors, then the JSON body (argv, cwd, environment, umask). Everything else is one JSON
object per line:
- the child, once it has taken the request on: `{"ready": true}`; the client answers `{"go": true}` (from then
  on the run is the child's, and the client can no longer fall back to a cold run) or hangs up (the child
  then exits without running anything);
- the client, after `go`: `{"signal": N}` for each signal it receives, which the child raises on itself;
- the zygote, when the child has ended: `{"exit": N}` or `{"signal": N}`, the child's wait status.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct

HEADER = struct.Struct("!cI")
MAX_BODY = 16 * 1024 * 1024  # an environment and argv, with room; more is not a request
# The signals a client relays: what a terminal, a shell or a supervisor sends a run.
RELAYED = frozenset(
    {
        signal.SIGINT,
        signal.SIGTERM,
        signal.SIGHUP,
        signal.SIGQUIT,
        signal.SIGWINCH,
        signal.SIGTSTP,
        signal.SIGCONT,
        signal.SIGUSR1,
        signal.SIGUSR2,
    }
)


def line(**fields: object) -> bytes:
    return json.dumps(fields).encode() + b"\n"


def send_request(conn: socket.socket, body: bytes, fds: list[int]) -> None:
    socket.send_fds(conn, [HEADER.pack(b"W", len(body))], fds)
    conn.sendall(body)


def receive_request(conn: socket.socket) -> tuple[dict[str, object], list[int]] | None:
    """The request and its three descriptors; None (and any descriptors received closed) for anything else."""
    header, fds, _flags, _address = socket.recv_fds(conn, HEADER.size, 3)
    request = _body(conn, header) if len(fds) == 3 else None
    if request is None:
        for fd in fds:
            os.close(fd)
        return None
    return request, fds


def _body(conn: socket.socket, header: bytes) -> dict[str, object] | None:
    if len(header) != HEADER.size:
        return None
    kind, length = HEADER.unpack(header)
    if kind != b"W" or length > MAX_BODY:
        return None
    body = bytearray()
    while len(body) < length:
        chunk = conn.recv(min(length - len(body), 1 << 20))
        if not chunk:
            return None
        body += chunk
    try:
        request = json.loads(body)
    except ValueError:
        return None
    return request if isinstance(request, dict) else None  # pyright: ignore[reportUnknownVariableType]


class Lines:
    """JSON objects, one per line, from a socket; a line that is not one is skipped."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn = conn
        self._buffer = b""

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
