"""--record: the SDK's own HTTP client (its defaults, proxies and keep-alive kept) with `send` taped, so each
request and its whole answer (the SSE stream as received) go to the session's cassette, credentials filtered out."""

from __future__ import annotations

import itertools
import json
import os
import threading
import zlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx2

from sprout_agent.model.cassettes import format as fmt
from sprout_agent.model.cassettes.eventstream import is_event_stream, parse_event_stream
from sprout_agent.model.cassettes.format import Json


class CassetteWriter:
    """The session's cassette file: created 0600 under a new name (a resumed session's second recording is
    `<id>.2.jsonl`), the header first, then each exchange as two lines once its answer has ended."""

    def __init__(self, directory: Path, session_id: str, header: Json, redact: Callable[[str], str]) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path, fd = _create(directory, session_id)
        self._file = os.fdopen(fd, "w", encoding="utf-8")
        self.redact = redact
        self._lock = threading.Lock()  # exchanges end on the loop; the header is written from the model's thread
        self._numbers = itertools.count(1)
        self._write({"type": "cassette", "format": fmt.FORMAT, "version": fmt.VERSION} | header)

    def number(self) -> int:
        return next(self._numbers)

    def exchange(self, n: int, request: Json, response: Json) -> None:
        self._write({"type": "request", "n": n, **request}, {"type": "response", "n": n, **response})

    def _write(self, *records: Json) -> None:
        text = "".join(fmt.line_of(fmt.redacted(record, self.redact)) for record in records)
        with self._lock:
            if not self._file.closed:
                self._file.write(text)
                self._file.flush()  # a run that dies leaves every finished exchange readable

    def close(self) -> None:
        with self._lock:
            self._file.close()


def _create(directory: Path, session_id: str) -> tuple[Path, int]:
    for k in itertools.count(1):
        path = directory / (f"{session_id}.jsonl" if k == 1 else f"{session_id}.{k}.jsonl")
        try:
            return path, os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            continue
    raise AssertionError("unreachable")


def recording_client(writer: CassetteWriter) -> httpx2.AsyncClient:
    """The client the SDK would make for itself, whose every request is written to `writer`'s cassette."""

    class Recording(anthropic.DefaultAsyncHttpxClient):
        async def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
            n, asked = writer.number(), _request(request)
            try:
                response = await super().send(request, **kwargs)
            except httpx2.HTTPError as error:  # no answer: replayed as the same failure
                kind = "timeout" if isinstance(error, httpx2.TimeoutException) else "connection"
                writer.exchange(n, asked, {"status": 0, "headers": {}, "error": {"kind": kind, "message": str(error)}})
                raise
            if not kwargs.get("stream"):
                writer.exchange(n, asked, _answer(response, response.content, True, writer.redact))
                return response

            def ended(body: bytes, complete: bool) -> None:
                writer.exchange(n, asked, _answer(response, body, complete, writer.redact))

            response.stream = _Tee(response.stream, ended)
            return response

    # The body recorded is the body sent. A client header, not one set in `send`: Bedrock's client signs the
    # request's headers before it is sent, and a header changed after that is a signature the API refuses.
    return Recording(headers={"accept-encoding": "identity"})


def _request(request: httpx2.Request) -> Json:
    content = request.content
    try:
        body: Any = json.loads(content) if content else None
    except ValueError:
        body = content.decode("utf-8", errors="replace")
    headers = fmt.kept_headers(request.headers.multi_items(), fmt.REQUEST_HEADERS)
    return {"method": request.method, "path": request.url.raw_path.decode("ascii"), "headers": headers, "body": body}


def _answer(response: httpx2.Response, raw: bytes, complete: bool, redact: Callable[[str], str]) -> Json:
    headers = fmt.kept_headers(response.headers.multi_items(), fmt.RESPONSE_HEADERS, fmt.RESPONSE_HEADER_PREFIXES)
    body = _decoded(raw, response.headers.get("content-encoding", ""))
    text = body.decode("utf-8", errors="replace")
    answer: Json = {"status": response.status_code, "headers": headers}
    kind = headers.get("content-type", "")
    # Bedrock's binary frames as the events they carry: base64 would hide a credential from the filter.
    binary = is_event_stream(kind)
    if kind.startswith("text/event-stream") or binary:
        events, tail = (parse_event_stream(body), "") if binary else fmt.parse_sse(text)
        events = fmt.whole_deltas(events, redact)
        answer |= {"events": events, "complete": complete} | ({"tail": tail} if tail else {})
        if (usage := _usage(events)) is not None:
            answer["usage"] = usage
        return answer
    try:
        return answer | {"body": json.loads(text)}
    except ValueError:
        return answer | {"body": text}


def _decoded(raw: bytes, encoding: str) -> bytes:
    """The body as sent, had the server compressed it anyway (identity was asked for)."""
    try:
        if encoding == "gzip":
            return zlib.decompress(raw, 16 + zlib.MAX_WBITS)
        if encoding == "deflate":
            return zlib.decompress(raw)
    except zlib.error:
        return raw
    return raw


def _usage(events: list[Json]) -> Json | None:
    """The reply's usage, as the stream reported it (message_start's, updated by message_delta's): for a reader."""
    usage: Json = {}
    for event in events:
        data = event["data"]
        if not isinstance(data, dict):
            continue
        message = data.get("message")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        found = message.get("usage") if isinstance(message, dict) else data.get("usage")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if isinstance(found, dict):
            usage |= {k: v for k, v in found.items() if v is not None}  # pyright: ignore[reportUnknownVariableType]
    return usage or None


class _Tee(httpx2.AsyncByteStream):
    """The response's stream, read by the SDK as ever; what passed is written once the stream is closed."""

    def __init__(self, inner: Any, done: Callable[[bytes, bool], None]) -> None:
        self._inner, self._done = inner, done
        self._chunks: list[bytes] = []
        self._complete = self._written = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._chunks.append(chunk)
            yield chunk
        self._complete = True

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            if not self._written:
                self._written = True
                self._done(b"".join(self._chunks), self._complete)
