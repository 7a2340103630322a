"""AWS's binary event stream (Amazon Bedrock's streamed answer) as a cassette's events and back: each chunk's Messages
API event decoded from its base64, so a cassette holds the same readable events as the first party's SSE (and the
secret filter reads them), and a replay frames them again. Stdlib only."""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterator
from typing import Any, cast

from sprout_agent.model.cassettes.format import Json

CONTENT_TYPE = "application/vnd.amazon.eventstream"
_PRELUDE = 12  # total length, headers length, the prelude's CRC: 4 bytes each
_STRING = 7  # the header value type Bedrock sends (every one of its headers is a string)
_FIXED = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}  # the other value types: their sizes


def is_event_stream(content_type: str) -> bool:
    return content_type.split(";")[0].strip().lower() == CONTENT_TYPE


def parse_event_stream(raw: bytes) -> list[Json]:
    """The events of a body: a chunk as `{"event": its type, "data": the event}`, as SSE gives them; any other
    message (an exception) as `{"event": ":" + its message type, "headers", "data"}`. A message cut short or whose
    checksums fail ends the list: the stream was cut there."""
    events: list[Json] = []
    at = 0
    while (message := _message(raw, at)) is not None:
        headers, payload, at = message
        events.append(_event(headers, payload))
    return events


def _message(raw: bytes, at: int) -> tuple[dict[str, str], bytes, int] | None:
    if len(raw) - at < _PRELUDE + 4:
        return None
    total, header_length = int.from_bytes(raw[at : at + 4], "big"), int.from_bytes(raw[at + 4 : at + 8], "big")
    end = at + total
    prelude_ok = zlib.crc32(raw[at : at + 8]) == int.from_bytes(raw[at + 8 : at + 12], "big")
    if not prelude_ok or total < _PRELUDE + header_length + 4 or end > len(raw):
        return None
    if zlib.crc32(raw[at : end - 4]) != int.from_bytes(raw[end - 4 : end], "big"):
        return None
    headers = _headers(raw[at + _PRELUDE : at + _PRELUDE + header_length])
    return headers, raw[at + _PRELUDE + header_length : end - 4], end


def _headers(raw: bytes) -> dict[str, str]:
    """The string headers (the others, which Bedrock does not send, are skipped)."""
    found: dict[str, str] = {}
    at = 0
    while at < len(raw):
        size = raw[at]
        name = raw[at + 1 : at + 1 + size].decode("utf-8", errors="replace")
        kind = raw[at + 1 + size] if at + 1 + size < len(raw) else -1
        at += 2 + size
        if kind in (6, _STRING):
            length = int.from_bytes(raw[at : at + 2], "big")
            if kind == _STRING:
                found[name] = raw[at + 2 : at + 2 + length].decode("utf-8", errors="replace")
            at += 2 + length
        elif kind in _FIXED:
            at += _FIXED[kind]
        else:
            break  # not a header type: the rest cannot be read
    return found


def _event(headers: dict[str, str], payload: bytes) -> Json:
    data = _json(payload)
    if headers.get(":message-type") == "event" and headers.get(":event-type") == "chunk" and isinstance(data, dict):
        inner = _json(base64.b64decode(str(cast(Json, data).get("bytes", "")), validate=False))
        if isinstance(inner, dict):
            return {"event": str(cast(Json, inner).get("type", "message")), "data": inner}
    return {"event": ":" + headers.get(":message-type", "event"), "headers": headers, "data": data}


def _json(raw: bytes) -> Any:
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def render_event_stream(events: list[Json]) -> Iterator[bytes]:
    """One framed message per recorded event: a Messages API event as a chunk, anything else as it came."""
    for event in events:
        data = event["data"]
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        headers = event.get("headers")
        if isinstance(headers, dict):
            yield frame({str(k): str(v) for k, v in cast(Json, headers).items()}, text.encode())
            continue
        chunk = json.dumps({"bytes": base64.b64encode(text.encode()).decode()}).encode()
        yield frame({":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}, chunk)


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One message: the prelude (lengths and their CRC), string headers, the payload, the message's CRC."""
    encoded = b"".join(
        bytes([len(k.encode())]) + k.encode() + bytes([_STRING]) + len(v.encode()).to_bytes(2, "big") + v.encode()
        for k, v in headers.items()
    )
    prelude = (_PRELUDE + len(encoded) + len(payload) + 4).to_bytes(4, "big") + len(encoded).to_bytes(4, "big")
    message = prelude + zlib.crc32(prelude).to_bytes(4, "big") + encoded + payload
    return message + zlib.crc32(message).to_bytes(4, "big")
