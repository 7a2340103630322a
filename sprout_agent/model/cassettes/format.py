"""A cassette's lines (docs/cassettes.md): the header, each request and its answer, the SSE stream as events; read
back whole and checked, so a truncated or hand-edited file is one clear error naming its line. Stdlib only."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from sprout_agent.core.errors import CassetteError
from sprout_agent.trust.opening import Reader, Refused

VERSION = 1  # the `version` of the header line; a reader refuses any other (docs/cassettes.md, "Versions")
FORMAT = "sprout-agent cassette"
# Request headers kept: what says which API and features a request asked for. Never a credential (an allowlist).
REQUEST_HEADERS = ("anthropic-version", "anthropic-beta", "content-type")
# Response headers kept: what the client acts on (retries, rate limits) and the API's request id.
RESPONSE_HEADERS = ("content-type", "request-id", "retry-after", "retry-after-ms", "x-should-retry")
RESPONSE_HEADER_PREFIXES = ("anthropic-ratelimit-",)
MAX_BYTES = 512 << 20  # a cassette is read whole into memory: a larger one is refused

Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Exchange:
    """One request and what answered it: `response` has `status` and `headers` and one of `events` (an SSE
    stream, `complete` false when it was cut), `body` (JSON) or `error` (no answer: a connection failure)."""

    n: int
    request: Json
    response: Json
    line: int  # the request's line in the file, for messages


@dataclass(frozen=True, slots=True)
class Cassette:
    path: Path
    header: Json
    exchanges: tuple[Exchange, ...]

    @property
    def cwd(self) -> str:
        return str(self.header.get("cwd") or "")


def kept_headers(headers: Iterable[tuple[str, str]], names: tuple[str, ...], prefixes: tuple[str, ...] = ()) -> Json:
    return {k.lower(): v for k, v in headers if k.lower() in names or k.lower().startswith(prefixes)}


def parse_sse(text: str) -> tuple[list[Json], str]:
    """The events of an SSE body as `{"event", "data"}` (data parsed as JSON where it is), and what followed the
    last complete event (a stream cut in the middle of one)."""
    text = text.replace("\r\n", "\n")
    *blocks, tail = text.split("\n\n")
    events: list[Json] = []
    for block in blocks:
        name, data = "message", list[str]()
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if data:
            events.append({"event": name, "data": _json_or_text("\n".join(data))})
    return events, tail


def render_sse(events: list[Json], tail: str = "") -> Iterator[bytes]:
    """The SSE body of recorded events, one chunk per event (a cut stream ends with its recorded tail)."""
    for event in events:
        data = event["data"]
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        yield f"event: {event['event']}\ndata: {text}\n\n".encode()
    if tail:
        yield tail.encode()


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def redacted(value: Any, redact: Callable[[str], str]) -> Any:
    """`value` with `redact` applied to every string in it, keys included."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(str(k)): redacted(v, redact) for k, v in cast(Json, value).items()}
    if isinstance(value, list):
        return [redacted(v, redact) for v in cast(list[Any], value)]
    return value


# The field of each delta type that carries the block's text; a credential may be split across deltas.
_DELTA_TEXT = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json"}


def whole_deltas(events: list[Json], redact: Callable[[str], str]) -> list[Json]:
    """The events with each content block whose text the filter changes sent as one delta of its filtered text: a
    key streamed in pieces (`ghp_`, then the rest) is caught whole, never kept in parts."""
    pieces: dict[tuple[object, str], list[int]] = {}
    for position, event in enumerate(events):
        delta = _delta(event)
        if delta is not None and delta.get("type") in _DELTA_TEXT:
            pieces.setdefault((event["data"].get("index"), str(delta["type"])), []).append(position)
    out: list[Json | None] = list(events)
    for (_, kind), positions in pieces.items():
        field = _DELTA_TEXT[kind]
        whole = "".join(str((_delta(events[p]) or {}).get(field, "")) for p in positions)
        if redact(whole) == whole:
            continue
        first = events[positions[0]]
        merged = dict(first["data"]) | {"delta": {"type": kind, field: redact(whole)}}
        out[positions[0]] = first | {"data": merged}
        for position in positions[1:]:
            out[position] = None
    return [event for event in out if event is not None]


def _delta(event: Json) -> Json | None:
    data = event.get("data")
    if event.get("event") != "content_block_delta" or not isinstance(data, dict):
        return None
    delta = cast(Json, data).get("delta")
    return cast(Json, delta) if isinstance(delta, dict) else None


def line_of(record: Json) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def load(path: Path) -> Cassette:
    """The cassette at `path`, checked whole: a line that is not JSON, a request without its answer, a field
    missing or of the wrong type, another format or version: one `CassetteError` naming the line."""
    try:  # the one reader: a regular file only, no link followed, never waiting on a FIFO a repository put there
        data = Reader().read(str(path), os.getcwd(), MAX_BYTES)
        text = data.decode("utf-8")
    except (OSError, Refused, UnicodeDecodeError) as error:
        raise CassetteError(f"cassette {path}: cannot be read ({error})") from error
    if len(data) > MAX_BYTES:
        raise CassetteError(f"cassette {path}: larger than {MAX_BYTES >> 20} MiB")
    records = [(number, _record(path, number, line)) for number, line in enumerate(text.splitlines(), 1) if line]
    if not records:
        raise CassetteError(f"cassette {path}: empty")
    header = records[0][1]
    if header.get("type") != "cassette" or header.get("format") != FORMAT:
        raise CassetteError(f"cassette {path}: line 1 is not a cassette header (is this a sprout-agent cassette?)")
    if header.get("version") != VERSION:
        raise CassetteError(
            f"cassette {path}: version {header.get('version')!r}; this sprout-agent reads version {VERSION}"
        )
    return Cassette(path, header, tuple(_exchanges(path, records[1:])))


def _record(path: Path, number: int, line: str) -> Json:
    try:
        record = json.loads(line)
    except ValueError as error:
        raise CassetteError(
            f"cassette {path}: line {number} is not JSON ({error}): truncated or edited by hand? record it again"
        ) from error
    if not isinstance(record, dict):
        raise CassetteError(f"cassette {path}: line {number} is not a JSON object")
    return cast(Json, record)


def _exchanges(path: Path, records: list[tuple[int, Json]]) -> Iterator[Exchange]:
    for index in range(0, len(records), 2):
        number, request = records[index]
        _expect(path, number, request, "request", {"n": int, "method": str, "path": str, "headers": dict})
        if index + 1 == len(records):
            raise CassetteError(f"cassette {path}: request {request['n']} (line {number}) has no answer: truncated?")
        answer_line, response = records[index + 1]
        _expect(path, answer_line, response, "response", {"n": int, "status": int, "headers": dict})
        if response["n"] != request["n"]:
            raise CassetteError(
                f"cassette {path}: line {answer_line} answers request {response['n']}, not request {request['n']}"
            )
        _check_answer(path, answer_line, response)
        yield Exchange(request["n"], request, response, number)


def _expect(path: Path, number: int, record: Json, kind: str, fields: dict[str, type]) -> None:
    if record.get("type") != kind:
        raise CassetteError(f"cassette {path}: line {number} should be a {kind}, is {record.get('type')!r}")
    for name, wanted in fields.items():
        if not isinstance(record.get(name), wanted):
            raise CassetteError(f"cassette {path}: line {number}: `{name}` missing or not a {wanted.__name__}")


def _check_answer(path: Path, number: int, response: Json) -> None:
    forms = [key for key in ("events", "body", "error") if key in response]
    if len(forms) != 1:
        raise CassetteError(f"cassette {path}: line {number}: an answer has one of events, body or error")
    events = response.get("events")
    if events is None:
        return
    ok = isinstance(events, list) and all(
        isinstance(e, dict) and isinstance(e.get("event"), str) and "data" in e  # pyright: ignore[reportUnknownMemberType]
        for e in cast(list[Any], events)
    )
    if not ok:
        raise CassetteError(f"cassette {path}: line {number}: `events` must be a list of {{event, data}} objects")
