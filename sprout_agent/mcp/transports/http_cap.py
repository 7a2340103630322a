"""The size cap on a remote MCP server's HTTP answers: each body is held to the stdio cap (MAX_MESSAGE_BYTES).

Why ours: the mcp SDK (2.3.0, checked in mcp/client/streamable_http.py `_handle_json_response` and
mcp/shared/_httpx_utils.py `request_within_origin`, which the SSE transport's POSTs use) reads an answer that
is not an event stream whole, with `response.aread()` and no limit: a 400 MB answer took 2.1 GB. Event
streams are the SDK's to cap: its SSE parser stops at `max_sse_event_size` bytes per event (remote.py sets it).

`cap_body` is a response event hook (httpx2 2.16.2 runs those for every response, whichever transport or
proxy mount sends it, before the body is read). It gives the response a body that reads at most the cap,
inflating gzip and deflate itself in bounded pieces, so that the cap counts what would reach memory, not what
crossed the wire (400 MB of zeros gzip to 0.4 MB, and httpx2 inflates a whole network chunk at once). An
answer over the cap, or declared over it by Content-Length (then nothing is read), becomes a JSON-RPC error
for the id of the request it answers, worded as stdio's: that call fails and the session goes on. So does a
body that does not inflate (the SDK would not catch the decoding error, and its transport would end). Either,
in an answer to a request that is not JSON-RPC (an OAuth discovery), fails that request with `BodyRefused`.
An event stream is only inflated in bounded pieces, for the SDK's parser to count.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing

import httpx2

from sprout_agent.mcp.transports.framing import MAX_MESSAGE_BYTES
from sprout_agent.mcp.transports.stdio_wire import too_large

# What we can inflate with a bound on the output; httpx2 would offer br and zstd as well once their packages
# are installed, and inflate them without one.
_ACCEPT_ENCODING = "gzip, deflate"
_WBITS = {"gzip": 31, "x-gzip": 31, "deflate": 47}  # 47: a zlib or gzip header, told apart by zlib
_PIECE = 1 << 20  # the most one network chunk inflates to at a time
_INTERNAL_ERROR = -32603


class BodyRefused(httpx2.StreamError):
    """An answer over the cap, or that does not inflate, to a request that is not JSON-RPC: no call to fail in
    its place. A StreamError: the SDK's readers treat those as a failed read of that one answer."""


def capped_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """A server's configured headers, asking only for encodings we inflate (unless they ask otherwise)."""
    if any(name.lower() == "accept-encoding" for name in headers):
        return dict(headers)
    return {"Accept-Encoding": _ACCEPT_ENCODING, **headers}


async def cap_body(response: httpx2.Response) -> None:
    """Response hook: a body that is not an event stream is read through `CappedBody`; an encoded one is
    inflated by us (and so no longer by httpx2)."""
    raw = response.stream
    if not isinstance(raw, httpx2.AsyncByteStream):
        return
    codings = [c.strip().lower() for c in response.headers.get_list("content-encoding", split_commas=True)]
    codings = [c for c in codings if c not in ("", "identity")]
    if codings:
        del response.headers["content-encoding"]
    if response.headers.get("content-type", "").partition(";")[0].strip().lower() == "text/event-stream":
        if codings:
            response.stream = Inflated(raw, codings)
        return
    declared = response.headers.get("content-length", "")
    size = int(declared) if declared.isdigit() and not codings else None
    response.stream = CappedBody(raw, codings, size, _request_id(response.request))


class Inflated(httpx2.AsyncByteStream):
    """A body inflated in pieces of at most `_PIECE` bytes (passed through as it is when it has no encoding)."""

    def __init__(self, raw: httpx2.AsyncByteStream, codings: list[str]) -> None:
        self._raw = raw
        self._codings = codings

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async with aclosing(self.pieces()) as pieces:
            async for piece in pieces:
                yield piece

    async def pieces(self) -> AsyncGenerator[bytes, None]:
        if not self._codings:
            async for chunk in self._raw:
                yield chunk
            return
        if len(self._codings) > 1 or self._codings[0] not in _WBITS:
            raise ValueError(f"it is encoded as {', '.join(self._codings)}, which we did not ask for")
        inflater = zlib.decompressobj(wbits=_WBITS[self._codings[0]])
        async for chunk in self._raw:
            while chunk:
                yield inflater.decompress(chunk, _PIECE)
                chunk = inflater.unconsumed_tail
        yield inflater.flush()

    async def aclose(self) -> None:
        await self._raw.aclose()


class CappedBody(Inflated):
    """At most MAX_MESSAGE_BYTES of inflated body, yielded once whole; past it, an error answer in its place."""

    def __init__(
        self, raw: httpx2.AsyncByteStream, codings: list[str], size: int | None, request_id: object | None
    ) -> None:
        super().__init__(raw, codings)
        self._size = size  # from Content-Length, when it counts the body as we would hold it
        self._request_id = request_id
        self.limit = MAX_MESSAGE_BYTES

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            if self._size is not None and self._size > self.limit:
                yield self._refusal(too_large(self._size))
                return
            try:
                body = await self._read()
            except (zlib.error, ValueError) as error:
                yield self._refusal(f"the server's answer does not inflate: {error}")
                return
            yield self._refusal(too_large(None)) if body is None else body
        finally:
            await self.aclose()  # the unread rest too: the connection is dropped, not drained

    async def _read(self) -> bytes | None:
        """The whole inflated body, or None once it is over the limit (the rest is not read)."""
        # One buffer, not a list of pieces: a server sending 2-byte chunks made each its own object (~70 bytes of
        # overhead per 2 bytes), and a 6 MiB answer peaked at 500 MB.
        body = bytearray()
        async with aclosing(self.pieces()) as pieces:
            async for piece in pieces:
                if len(body) + len(piece) > self.limit:
                    return None
                body += piece
        return bytes(body)

    def _refusal(self, reason: str) -> bytes:
        if self._request_id is None:
            raise BodyRefused(reason)
        error = {"code": _INTERNAL_ERROR, "message": reason}
        return json.dumps({"jsonrpc": "2.0", "id": self._request_id, "error": error}).encode()


def _request_id(request: httpx2.Request) -> object | None:
    """The id of the JSON-RPC request this answers (None for a notification, a GET or anything else)."""
    try:
        message: object = json.loads(request.content)
    except (httpx2.RequestNotRead, ValueError, RecursionError):
        return None
    if isinstance(message, dict) and "method" in message:
        return message.get("id")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return None
