"""--replay: the model's side served from a cassette, with no key and no network. Strict (the default): each
request must be a recorded one (docs/cassettes.md lists what may differ), else the run fails with the first
difference; lenient: a request that differs is answered by position, with one warning."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import anthropic
import anyio.lowlevel
import httpx2

from sprout_agent.core.errors import ReplayDiverged
from sprout_agent.model.cassettes import format as fmt
from sprout_agent.model.cassettes.api_check import ApiCheck, accepted
from sprout_agent.model.cassettes.compare import comparable, difference_text
from sprout_agent.model.cassettes.eventstream import is_event_stream, render_event_stream
from sprout_agent.model.cassettes.format import Cassette, Exchange, Json


@dataclass(frozen=True, slots=True)
class Answered:
    """A request the player answered: its number in the run, the exchange that answered it, both requests in
    comparable form, and the request as sent (filtered): what `sprout-agent replay` reports from."""

    number: int
    exchange: Exchange
    recorded: Json
    sent: Json
    request: Json


class Player:
    """Which recorded exchange answers each request. Requests are matched by content, not arrival, so a
    subagent's and its sibling's, or the three counts of `/context`, may come in any order."""

    def __init__(
        self,
        cassette: Cassette,
        *,
        lenient: bool,
        cwd: str,
        redact: Callable[[str], str],
        warn: Callable[[str], None],
        observe: Callable[[Answered], None] | None = None,
    ) -> None:
        self.cassette = cassette
        self.lenient = lenient
        self._cwd, self._redact, self._warn, self._observe = cwd, redact, warn, observe
        self._pending = [(e, comparable(e.request, cassette.cwd)) for e in cassette.exchanges]
        self._api = ApiCheck(cassette)
        self._sent = 0
        self.diverged: ReplayDiverged | None = None  # strict: the first difference, which every later request repeats
        self.differed = 0  # lenient: requests answered by position

    def answer(self, request: Json) -> Exchange:
        self._sent += 1
        if self.diverged is not None:
            raise self.diverged
        request = fmt.redacted(request, self._redact)
        sent = comparable(request, self._cwd)
        for index, (exchange, recorded) in enumerate(self._pending):
            if recorded == sent:
                del self._pending[index]
                return self._answered(exchange, recorded, sent, request)
        if not self._pending:
            return self._fail(f"request {self._sent} has no answer: the cassette recorded {self._count()}")
        exchange, recorded = self._nearest(sent)
        where = f"request {self._sent} differs from the recording (exchange {exchange.n}, line {exchange.line})"
        if not self.lenient:
            return self._fail(f"{where} at {difference_text(recorded, sent)}")
        self.differed += 1
        if self.differed == 1:
            self._warn(f"replay: {where} at {difference_text(recorded, sent)}; answering by position (lenient)")
        exchange, recorded = self._pending.pop(0)
        return self._answered(exchange, recorded, sent, request)

    def _answered(self, exchange: Exchange, recorded: Json, sent: Json, request: Json) -> Exchange:
        """The exchange, once the request is one the API would take. A recorded error answers before the API reads
        the request (an overloaded API sheds load first; a refusal is the API's own answer), so it is served as is."""
        if accepted(exchange.response) and (problems := self._api.problems(request)):
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            where = f"exchange {exchange.n}, line {exchange.line}"
            self._fail(f"request {self._sent} ({where}) is one the API would refuse: {problems[0]}{more}")
        if self._observe is not None:
            self._observe(Answered(self._sent, exchange, recorded, sent, request))
        return exchange

    def finish(self) -> None:
        """Strict: the run must have made every recorded request, and none that differs (a difference a subagent
        or a compaction swallowed still fails the run)."""
        if self.diverged is not None:
            raise self.diverged
        if self._pending and not self.lenient:
            first = self._pending[0][0]
            self._fail(
                f"the run ended with {len(self._pending)} recorded request(s) not made; the first: exchange "
                f"{first.n} (line {first.line})"
            )

    def _nearest(self, sent: Json) -> tuple[Exchange, Json]:
        """The recorded request to show a difference against: the first one of the same agent (system prompt)
        and endpoint, else the next by position."""
        for exchange, recorded in self._pending:
            same_agent = _bodies(recorded, sent) and recorded["body"].get("system") == sent["body"].get("system")
            if recorded["path"] == sent["path"] and same_agent:
                return exchange, recorded
        return self._pending[0]

    def _count(self) -> str:
        total = len(self.cassette.exchanges)
        return f"{total} request{'s' if total != 1 else ''} ({self.cassette.path})"

    def _fail(self, message: str) -> Any:
        self.diverged = Diverged(f"replay: {message}")
        raise self.diverged


class Diverged(ReplayDiverged, anthropic.AnthropicError):
    """ReplayDiverged as the SDK lets it through from inside a request: as one of its own errors, not wrapped into a
    connection error (which our retries would try again), and past our classification as what it is (exit 6)."""


def _bodies(*requests: Json) -> bool:
    return all(isinstance(r.get("body"), dict) for r in requests)


class ReplayTransport(httpx2.AsyncBaseTransport):
    """Answers from the player; nothing leaves the process."""

    def __init__(self, player: Player) -> None:
        self.player = player

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        content = await request.aread()
        try:
            body: Any = json.loads(content) if content else None
        except ValueError:
            body = content.decode("utf-8", errors="replace")
        headers = fmt.kept_headers(request.headers.multi_items(), fmt.REQUEST_HEADERS)
        path = request.url.raw_path.decode("ascii")
        answer = self.player.answer({"method": request.method, "path": path, "headers": headers, "body": body}).response
        if (error := answer.get("error")) is not None:
            kind = httpx2.ReadTimeout if error.get("kind") == "timeout" else httpx2.ConnectError
            raise kind(str(error.get("message", "recorded failure")), request=request)
        if "events" in answer:
            events = answer["events"]
            binary = is_event_stream(str(answer["headers"].get("content-type", "")))
            chunks = render_event_stream(events) if binary else fmt.render_sse(events, str(answer.get("tail") or ""))
            stream = _Events(list(chunks))
            return httpx2.Response(answer["status"], headers=answer["headers"], stream=stream, request=request)
        data = answer["body"]
        raw = data.encode() if isinstance(data, str) else json.dumps(data).encode()
        return httpx2.Response(answer["status"], headers=answer["headers"], content=raw, request=request)


class _Events(httpx2.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            await anyio.lowlevel.checkpoint()  # an interrupt lands between events, as on a real stream
            yield chunk


def replaying_client(player: Player) -> httpx2.AsyncClient:
    """The SDK's default client (timeouts, redirects) over the player instead of the network."""
    return anthropic.DefaultAsyncHttpxClient(transport=ReplayTransport(player))
