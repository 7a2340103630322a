"""A hand-rolled Streamable HTTP MCP server for replies the SDK's server never sends; stdlib only.

In a thread for tests (`serving()`), or as a process for scripts/bench: `python -m tests.raw_http_server PORT`.
POST /mcp answers `initialize`, notifications (202), `tools/list` and `tools/call`, each as one body; no session
id, so the client opens no GET stream. Tools: echo(text) -> text; huge(bytes, sse, gzip, length) -> a text
result about `bytes` long, streamed in 1 MiB pieces and never held whole: as one SSE event (`sse`),
gzip-compressed (`gzip`: its zeros shrink about 1000 times, a decompression bomb; `corrupt`: said to be gzip,
but not), with a Content-Length (`length`, the default) or ended by closing the connection. `sent` counts the
bytes of huge replies that reached the socket (a client that stops reading leaves it short of the total), and
`finished` is set when a huge reply's handler is done with it.
"""

from __future__ import annotations

import json
import sys
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.bounds import bounded

_PIECE = 1 << 20
TOOLS = [
    {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "huge", "inputSchema": {"type": "object"}},
]


def _answer(request_id: object, result: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


def _text(request_id: object, text: str) -> bytes:
    return _answer(request_id, {"content": [{"type": "text", "text": text}]})


def _frame(request_id: object, sse: bool) -> tuple[bytes, bytes]:
    """What goes before and after the huge reply's filler: the JSON-RPC answer (in an SSE event)."""
    before, after = _text(request_id, "@").split(b"@")
    return (b"event: message\ndata: " + before, after + b"\n\n") if sse else (before, after)


def _pieces(before: bytes, after: bytes, left: int, filler: bytes) -> Iterator[bytes]:
    yield before
    while left > 0:
        yield filler * min(left, _PIECE)
        left -= _PIECE
    yield after


def _gzipped(pieces: Iterator[bytes]) -> Iterator[bytes]:
    packer = zlib.compressobj(wbits=31)  # 31: the gzip container
    for piece in pieces:
        if packed := packer.compress(piece):
            yield packed
    yield packer.flush()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: RawHttpServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._send(405, b"", "text/plain")

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["content-length"])))
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if request_id is None:
            self._send(202, b"", "text/plain")
        elif method == "initialize":
            info = {"name": "raw-http", "version": "0"}
            result = {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": info}
            self._send(200, _answer(request_id, result))
        elif method == "tools/list":
            self._send(200, _answer(request_id, {"tools": TOOLS}))
        elif method == "tools/call" and params.get("name") == "huge":
            self._huge(request_id, params.get("arguments") or {})
        elif method == "tools/call":
            self._send(200, _text(request_id, str((params.get("arguments") or {}).get("text", ""))))
        else:
            error = {"code": -32601, "message": f"no method {method}"}
            self._send(200, json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode())

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _huge(self, request_id: object, arguments: dict[str, Any]) -> None:
        try:
            self._stream_huge(request_id, arguments)
        finally:
            self.server.finished.set()

    def _stream_huge(self, request_id: object, arguments: dict[str, Any]) -> None:
        size, sse, gzip = int(arguments["bytes"]), bool(arguments.get("sse")), bool(arguments.get("gzip"))
        before, after = _frame(request_id, sse)
        left = max(0, size - len(before) - len(after))
        pieces = _pieces(before, after, left, b"0" if gzip else b"x")
        self.send_response(200)
        self.send_header("content-type", "text/event-stream" if sse else "application/json")
        if gzip:
            pieces = iter([b"this is not gzip"]) if arguments.get("corrupt") else _gzipped(pieces)
            self.send_header("content-encoding", "gzip")
        if arguments.get("length", True) and not gzip:
            self.send_header("content-length", str(len(before) + left + len(after)))
        else:
            self.send_header("connection", "close")
            self.close_connection = True
        self.end_headers()
        try:
            for piece in pieces:
                self.wfile.write(piece)
                self.server.sent += len(piece)
        except OSError:  # the client stopped reading: what it was sent so far is in `sent`
            self.close_connection = True


class RawHttpServer(ThreadingHTTPServer):
    daemon_threads = True
    sent = 0

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, _Handler)
        self.finished = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/mcp"


@contextmanager
def serving() -> Iterator[RawHttpServer]:
    """The server on an ephemeral loopback port, in a thread, for the `with` block."""
    server = RawHttpServer(("127.0.0.1", 0))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=bounded(10))


if __name__ == "__main__":
    RawHttpServer(("127.0.0.1", int(sys.argv[1]))).serve_forever()
