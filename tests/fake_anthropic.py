"""Scripted fake Anthropic Messages API: real HTTP on 127.0.0.1 speaking the SSE stream the SDK parses.

In a test: ``with FakeAnthropic([reply("hi"), error(529)]) as fake: ... fake.base_url ... fake.requests``.
Each POST /v1/messages consumes the next step; when the script runs out the server answers 500
"fake script exhausted" (with ``x-should-retry: false``) so a test fails loudly instead of hanging.
Like the real API, it refuses a body the API would refuse (the package's rules, which a replay applies too:
sprout_agent/model/cassettes/api_rules.py through tests/api_rules.py: tool_use answered in the next message,
alternating roles, no empty text, valid tool names, image types...) with 400 ``invalid_request_error`` naming every
problem; the step is not consumed and the problems are kept in ``fake.refused``. A scripted HttpError is answered
before the body is checked (an overloaded API sheds load before it reads the request), so fault steps work with any
body.
A step is a Reply (``reply``, ``cut``, ``stream_error``), an HttpError (``error``), a Hang (``hang``),
or a callable ``body -> step``. POST /v1/messages/count_tokens answers ``len(raw body) // 4`` (a body the
API would refuse, or one with max_tokens or stream, gets 400).

Usage: fields passed to ``reply(usage=...)`` win; the rest are estimated (len(json) // 4 per token),
and ``auto_usage=True`` bills prompt caching as documented in tests/fake_anthropic_wire.py.

Subprocess form: ``python -m tests.fake_anthropic --script s.json [--record r.jsonl] [--port-file p]
[--auto-usage]`` writes its port to the port file (atomically) and prints it on stdout once listening,
then serves until SIGTERM/SIGINT. The script file is a JSON list of step objects:
``{"text": "hi"}``; ``{"tool_uses": [{"name": "x__echo", "input": {...}, "id": "opt"}], "text": "opt"}``;
optional ``"stop_reason"``, ``"usage"``, ``"delay"`` (seconds) on any reply;
``{"error": 529, "type": "opt", "message": "opt", "retry_after_ms": 1}``;
``{"cut": true, "text": "partial", "after": 4}`` (stream closed without message_stop; ``after`` = how
many SSE events to send, default: up to the first delta of the last block);
``{"stream_error": "overloaded_error", "text": "opt"}`` (``event: error`` mid-stream);
``{"hang": true}`` (never answers; ``"mid_stream": true`` sends message_start first).
Each recorded request is a JSON line ``{"path", "headers", "body"}`` (path as sent, with any query;
header names lowercased; body parsed JSON; GETs are in ``model_lookups``). Text, tool_use, ``thinking(...)`` (signed
for the request's model, streamed as thinking_delta + signature_delta) and ``redacted(...)`` blocks stream.
GET /v1/models/{id} answers the ``models=[model_info(id, ...)]`` entries, 404 for any other id; a request
to a listed model is also checked against its capabilities (thinking types, effort levels, structured outputs).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import urlsplit

from tests.api_rules import COUNT_TOKENS, MESSAGES, encrypted, endpoint_problems
from tests.fake_anthropic_wire import PromptCache, estimate_input, message_events, sse

Json = dict[str, Any]
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass
class Reply:
    blocks: list[Json]
    stop_reason: str | None = None  # None: "tool_use" if any tool_use block, else "end_turn"
    usage: Json = field(default_factory=dict)
    delay: float = 0.0
    cut_after: int | None = None  # send only this many SSE events, then close
    error: Json | None = None  # mid-stream `event: error` payload, sent instead of message_delta


@dataclass
class HttpError:
    status: int
    type: str
    message: str
    headers: dict[str, str]
    delay: float = 0.0


@dataclass
class Hang:
    mid_stream: bool = False


Step = Reply | HttpError | Hang | Callable[[Json], "Step"]


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any
    arrived: float = field(default_factory=time.monotonic)  # when the body was read (time.monotonic)
    arrived_at: float = field(default_factory=time.time)  # the same, on the wall clock (a rate gate's)
    sent: float | None = None  # when a streamed reply finished sending (scripts/bench.py)


def text(s: str) -> Json:
    return {"type": "text", "text": s}


def tool_use(name: str, input: Json | None = None, id: str | None = None) -> Json:
    return {"type": "tool_use", "id": id, "name": name, "input": input or {}}


def thinking(s: str) -> Json:
    """A thinking block; the fake signs it for the request's model (tests/api_rules.py checks it comes back)."""
    return {"type": "thinking", "thinking": s}


def redacted(secret: str = "hidden") -> Json:
    return {"type": "redacted_thinking", "secret": secret}


def web_search(query: str, *results: tuple[str, str], id: str = "srvtoolu_fake_1") -> tuple[Json, Json]:
    """A search the API ran and its results ((title, url) each, sealed like the real encrypted content)."""
    found = [
        {"type": "web_search_result", "title": title, "url": url, "encrypted_content": encrypted(url), "page_age": None}
        for title, url in results
    ]
    use = {"type": "server_tool_use", "id": id, "name": "web_search", "input": {"query": query}}
    return use, {"type": "web_search_tool_result", "tool_use_id": id, "content": found}


def web_fetch(
    url: str, text: str = "page text", *, id: str = "srvtoolu_fake_2", error: str | None = None
) -> tuple[Json, Json]:
    """A fetch the API ran: the page as a document, or an error (`error`: its code, e.g. url_not_accessible)."""
    use = {"type": "server_tool_use", "id": id, "name": "web_fetch", "input": {"url": url}}
    document = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": text}}
    content: Json = (
        {"type": "web_fetch_tool_result_error", "error_code": error}
        if error
        else {"type": "web_fetch_result", "url": url, "content": document, "retrieved_at": "2026-01-01T00:00:00Z"}
    )
    return use, {"type": "web_fetch_tool_result", "tool_use_id": id, "content": content}


def model_info(
    id: str,
    *,
    thinking: Sequence[str] = ("adaptive", "enabled", "disabled"),
    effort: Sequence[str] = ("low", "medium", "high", "max"),
    max_input_tokens: int = 1_000_000,
    max_tokens: int = 64_000,
    web_search: bool = True,
    structured_outputs: bool = False,
) -> Json:
    """A `GET /v1/models/{id}` answer, shaped like the SDK's ModelInfo (every capability key present)."""
    no = {"supported": False}
    types = {t: {"supported": t in thinking} for t in ("adaptive", "enabled", "disabled", "between_tools")}
    levels: Json = {e: {"supported": e in effort} for e in ("low", "medium", "high", "xhigh", "max")}
    capabilities = {
        "batch": no, "citations": no, "code_execution": no, "image_input": {"supported": True}, "pdf_input": no,
        "structured_outputs": {"supported": structured_outputs},
        "server_tools": {"supported": web_search, "web_search": {"supported": web_search}, "code_execution": no},
        "context_management": {"supported": False},
        "thinking": {"supported": bool(set(thinking) - {"disabled"}), "types": types},
        "effort": {"supported": bool(effort), **levels},
    }  # fmt: skip
    return {
        "type": "model", "id": id, "display_name": id, "created_at": "2026-01-01T00:00:00Z", "lifecycle": "active",
        "max_input_tokens": max_input_tokens, "max_tokens": max_tokens, "capabilities": capabilities,
    }  # fmt: skip


def _blocks(parts: tuple[Json | str, ...]) -> list[Json]:
    return [text(p) if isinstance(p, str) else p for p in parts]


def reply(*parts: Json | str, stop_reason: str | None = None, usage: Json | None = None, delay: float = 0.0) -> Reply:
    """A streamed reply; plain strings become text blocks."""
    return Reply(_blocks(parts), stop_reason, usage or {}, delay)


def cut(*parts: Json | str, after: int | None = None) -> Reply:
    """message_start and some deltas, then the connection closes (default: after the last block's
    first delta, or after ping when there are no blocks)."""
    return Reply(_blocks(parts), cut_after=after if after is not None else -1)


def stream_error(*parts: Json | str, type: str = "overloaded_error", message: str = "Overloaded") -> Reply:
    return Reply(_blocks(parts), error={"type": "error", "error": {"type": type, "message": message}})


def error(
    status: int = 529,
    type: str | None = None,
    message: str | None = None,
    retry_after_ms: int | None = 1,
    headers: dict[str, str] | None = None,
    delay: float = 0.0,
) -> HttpError:
    """An HTTP error; `retry-after-ms: 1` by default so the SDK retries at once."""
    etype = type or ERROR_TYPES.get(status, "api_error")
    hdrs = {"retry-after-ms": str(retry_after_ms)} if retry_after_ms is not None else {}
    return HttpError(status, etype, message or f"fake {etype}", hdrs | (headers or {}), delay)


def hang(mid_stream: bool = False) -> Hang:
    """Never answer (or stall after message_start) until the server stops."""
    return Hang(mid_stream)


def step_from_json(obj: Json) -> Step:
    """One step of a JSON script file (format in the module docstring)."""
    if obj.get("hang"):
        return hang(bool(obj.get("mid_stream")))
    if "error" in obj:
        return error(
            int(obj["error"]),
            obj.get("type"),
            obj.get("message"),
            obj.get("retry_after_ms", 1),
            delay=float(obj.get("delay", 0)),
        )
    parts: list[Json | str] = [obj["text"]] if obj.get("text") is not None else []
    parts += [tool_use(t["name"], t.get("input"), t.get("id")) for t in obj.get("tool_uses", [])]
    if obj.get("cut"):
        return cut(*parts, after=obj.get("after"))
    if "stream_error" in obj:
        return stream_error(*parts, type=obj["stream_error"], message=obj.get("message", "Overloaded"))
    return reply(*parts, stop_reason=obj.get("stop_reason"), usage=obj.get("usage"), delay=float(obj.get("delay", 0)))


def render(step: Reply, model: str, n: int, usage: Json) -> list[tuple[str, Json]]:
    """The SSE events of a reply to request number `n`, cut or errored as the step says."""
    events = message_events(step.blocks, step.stop_reason, model, n, usage)
    if step.error is not None:
        return [*events[:-2], ("error", step.error)]
    if step.cut_after == -1:  # default cut: just after the first delta of the last block
        starts = [k for k, (name, _) in enumerate(events) if name == "content_block_start"]
        return events[: starts[-1] + 2] if starts else events[:2]
    return events if step.cut_after is None else events[: step.cut_after]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        """`/v1/models/{id}`: the entry given to FakeAnthropic(models=...), else 404 as for an unknown model."""
        path = urlsplit(self.path).path
        fake: FakeAnthropic = getattr(self.server, "fake")  # noqa: B009 - set by FakeAnthropic.start
        with fake._lock:  # kept apart from `requests`, which tests index as the Messages API calls
            fake.model_lookups.append(path)
        model = path.removeprefix("/v1/models/") if path.startswith("/v1/models/") else None
        info = fake.models.get(model) if model is not None else None
        fake.stopping.wait(fake.lookup_delay)
        if info is None:
            return self._json(404, _err_body("not_found_error", f"model: {model}"), {})
        return self._json(200, info, {})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        self._answer(urlsplit(self.path).path, self._parsed(raw), raw)

    @staticmethod
    def _parsed(raw: bytes) -> Any:
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode(errors="replace")

    def _answer(self, path: str, body: Any, raw: bytes) -> None:
        """The Messages API at `path` (tests/fake_providers.py translates each cloud's wire to it first)."""
        fake: FakeAnthropic = getattr(self.server, "fake")  # noqa: B009 - set by FakeAnthropic.start
        rec = Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        n = fake._record(rec)
        if path == COUNT_TOKENS:  # as strict as /v1/messages, and it takes no max_tokens or stream
            if problems := endpoint_problems(path, body):
                return self._json(400, _err_body("invalid_request_error", "; ".join(problems)), {})
            return self._json(200, {"input_tokens": len(raw) // 4}, {})
        if path != MESSAGES or not isinstance(body, dict):
            return self._json(404, _err_body("not_found_error", f"fake: no route {path}"), {})
        step = fake._next(body)
        if isinstance(step, HttpError):
            fake.stopping.wait(step.delay)
            return self._json(step.status, _err_body(step.type, step.message), step.headers)
        if isinstance(step, Hang):
            if step.mid_stream:
                self._stream(render(reply(), body.get("model", ""), n, fake.usage(body, []))[:2])
            fake.stopping.wait()
            return None
        fake.stopping.wait(step.delay)
        self._stream(render(step, body.get("model", ""), n, fake.usage(body, step.blocks, step.usage)))
        rec.sent = time.monotonic()

    def _json(self, status: int, data: Json, headers: dict[str, str]) -> None:
        out = json.dumps(data).encode()
        self.send_response(status)
        for k, v in ({"content-type": "application/json", "content-length": str(len(out))} | headers).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(out)

    content_type = "text/event-stream"

    def _stream(self, events: list[tuple[str, Json]]) -> None:
        self.send_response(200)
        self.send_header("content-type", self.content_type)
        self.send_header("connection", "close")  # no content-length: the body ends when the socket closes
        self.end_headers()
        for name, data in events:
            self.wfile.write(self._frame(name, data))
            self.wfile.flush()
        self.close_connection = True

    def _frame(self, name: str, data: Json) -> bytes:
        """One event on the wire: SSE here; AWS event-stream framing in the fake Bedrock."""
        return sse(name, data)


def _err_body(etype: str, message: str) -> Json:
    return {"type": "error", "error": {"type": etype, "message": message}}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeAnthropic

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client hanging up is normal here
            super().handle_error(request, client_address)


class FakeAnthropic:
    """The server; a context manager. `requests` lists every request received, in order."""

    handler: type[BaseHTTPRequestHandler] = _Handler  # a provider's fake speaks its own wire (tests/fake_providers.py)

    def __init__(
        self,
        script: Sequence[Step] | None = None,
        *,
        auto_usage: bool = False,
        record: str | Path | None = None,
        port: int = 0,
        models: Sequence[Json] = (),
        lookup_delay: float = 0.0,
    ) -> None:
        self._script, self._lock, self._requests = list(script or []), threading.Lock(), list[Recorded]()
        self._cache = PromptCache() if auto_usage else None
        self._record_path, self._port, self.stopping = record, port, threading.Event()
        self._server: _Server | None = None
        self.refused: list[list[str]] = []  # the problems of each request answered 400 as invalid
        self.models: dict[str, Json] = {info["id"]: info for info in models}  # served at GET /v1/models/{id}
        self.lookup_delay = lookup_delay  # seconds before a model lookup is answered (a real API's round trip)
        self.model_lookups: list[str] = []  # the path of every GET, in order

    def start(self) -> Self:
        self._server = _Server(("127.0.0.1", self._port), self.handler)
        self._server.fake = self
        threading.Thread(target=self._server.serve_forever, args=(0.02,), name="fake-anthropic", daemon=True).start()
        return self

    def stop(self) -> None:
        self.stopping.set()  # releases hangs and delays
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "FakeAnthropic not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[Recorded]:
        with self._lock:
            return list(self._requests)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    def add(self, *steps: Step) -> None:
        with self._lock:
            self._script.extend(steps)

    def _record(self, rec: Recorded) -> int:
        with self._lock:
            self._requests.append(rec)
            if self._record_path is not None:
                with open(self._record_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(asdict(rec)) + "\n")
            return len(self._requests)

    def _next(self, body: Json) -> Reply | HttpError | Hang:
        with self._lock:
            upcoming = self._script[0] if self._script else None
            info = self.models.get(str(body.get("model")))
            capabilities = info.get("capabilities") if info is not None else None
            problems = [] if isinstance(upcoming, HttpError) else endpoint_problems(MESSAGES, body, capabilities)
            if problems:
                self.refused.append(problems)
                message = "fake: invalid request: " + "; ".join(problems)
                return HttpError(400, "invalid_request_error", message, {"x-should-retry": "false"})
            step = self._script.pop(0) if self._script else None
        if step is None:
            return HttpError(500, "api_error", "fake script exhausted", {"x-should-retry": "false"})
        while callable(step):
            step = step(body)
        return step

    def usage(self, body: Json, blocks: list[Json], override: Json | None = None) -> Json:
        with self._lock:
            billed = self._cache.bill(body) if self._cache is not None else None
        if billed is None:
            billed = {"input_tokens": estimate_input(body), "cache_read_input_tokens": 0}
            billed["cache_creation_input_tokens"] = 0
        return billed | {"output_tokens": max(1, len(json.dumps(blocks)) // 4)} | (override or {})


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m tests.fake_anthropic", description="Scripted fake Anthropic Messages API."
    )
    ap.add_argument("--script", required=True, help="JSON list of steps")
    ap.add_argument("--record", help="append each request here as a JSON line")
    ap.add_argument("--port-file", help="write the listening port here")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--auto-usage", action="store_true", help="bill prompt caching from the requests")
    args = ap.parse_args(argv)
    steps = [step_from_json(s) for s in json.loads(Path(args.script).read_text(encoding="utf-8"))]
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    with FakeAnthropic(steps, auto_usage=args.auto_usage, record=args.record, port=args.port) as fake:
        if args.port_file:
            tmp = f"{args.port_file}.tmp"
            Path(tmp).write_text(str(fake.port), encoding="utf-8")
            os.replace(tmp, args.port_file)
        print(fake.port, flush=True)
        done.wait()


if __name__ == "__main__":
    main()
