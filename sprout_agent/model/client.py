"""The only importer of `anthropic`: our messages to the Messages API and back, streaming, retries, usage."""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Callable, Collection
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio

from sprout_agent.core.errors import ApiError, PromptTooLongError
from sprout_agent.core.events import ApiRetry, Event, Notice, StreamEvent, ThinkingDelta
from sprout_agent.core.messages import Message, Text
from sprout_agent.core.protocols import ModelReply, ModelRequest
from sprout_agent.model import web_tools as server_tools
from sprout_agent.model.api_errors import Failure, explain
from sprout_agent.model.api_messages import EPHEMERAL, to_api_messages, to_api_tools
from sprout_agent.model.facts import ModelFacts, Unreachable, adjusted, effort_param, fallback, thinking_param
from sprout_agent.model.rate_gate import RateGate
from sprout_agent.model.reply_stream import ReplyBuilder, StreamCut
from sprout_agent.model.silence import API_WAITING_NOTICE_S, Silence

if TYPE_CHECKING:
    import anthropic

# Statuses the API uses for "try again later"; 529 is Anthropic's overloaded.
RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
RETRYABLE_ERROR_TYPES = frozenset({"overloaded_error", "api_error", "rate_limit_error"})
# Claude 4 models think between tool calls with a budget only behind this beta (adaptive does it by itself).
INTERLEAVED_BETA = "interleaved-thinking-2025-05-14"
COUNT_TIMEOUT = 10.0  # /context waits at most this long for exact counts, then shows the estimate
MODELS_API_TIMEOUT = 3.0  # a cold start waits at most this long for the model's facts (overlapped with servers)
DEFAULT_TIMEOUT_S = 600.0  # a request's read timeout unless API_TIMEOUT_MS says otherwise (the SDK's default)


class AnthropicModel:
    """Implements `protocols.Model` over the anthropic SDK, with our own retry policy and events."""

    def __init__(
        self,
        *,
        model: str,
        max_tokens: int,
        emit: Callable[[Event], None],
        api_key: str | None,
        base_url: str | None,
        retries: int = 4,
        on_attempt: Callable[[], None] | None = None,
        facts: ModelFacts | None = None,
        thinking: str | None = None,
        effort: str | None = None,
        thinking_budget: int = 16_000,
        web: bool = False,
        fallback_model: str | None = None,
        partial_messages: bool = False,
        rate_gate: Path | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        waiting_notice: float = API_WAITING_NOTICE_S,
    ) -> None:
        import anthropic  # lazy: costs ~2 s, paid once, overlapped with server start-up

        self._model = model
        self._max_tokens = max_tokens
        self._emit = emit
        self._waiting_notice = waiting_notice
        self._retries = retries
        self._base_url = base_url
        self._on_attempt = on_attempt  # the ledger counts requests actually sent, failed ones included
        # The SDK's own retries would be invisible to the user; ours emit events and also cover cut streams.
        # No spans of the SDK's own, and no trace context in requests to the API: with telemetry on, our `chat`
        # span is the request's (docs/telemetry.md), and a trace id is nothing Anthropic's servers need.
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            timeout=anthropic.Timeout(timeout, connect=min(10.0, timeout)),  # API_TIMEOUT_MS, as Claude Code's
            open_telemetry={"traces": False, "propagation": False},
        )
        self._anthropic = anthropic
        self.facts = facts or fallback(model)
        self.thinking = thinking  # adaptive | on | off | None (the model's default, from its capabilities)
        self.effort = effort
        self._thinking_budget = thinking_budget
        self.web = web  # --web: offer the API's web search and fetch where the model supports them
        self._warned: set[str] = set()
        self._spare = fallback_model if fallback_model != model else None  # --fallback-model, used once
        self._partial = partial_messages  # every raw stream event out as a StreamEvent (--include-partial-messages)
        self._gate = RateGate(rate_gate) if rate_gate is not None else None  # a batch's shared 429 back-off

    @property
    def name(self) -> str:
        return self._model

    async def aclose(self) -> None:
        """Closes the HTTP client on the loop that used it (left to the garbage collector, it would close on
        whichever loop runs then, or a closed one)."""
        await self._client.close()

    @name.setter
    def name(self, model: str) -> None:
        """`/model NAME`: the next request goes to this model (the conversation is kept; its thinking is
        left out of requests to the new model, which cannot verify another model's signatures)."""
        self._model = model
        if self.facts.model != model:
            self.facts = fallback(model)

    def switch(self, model: str, facts: ModelFacts) -> list[str]:
        """`/model NAME` with the new model's facts: settings it does not support are dropped, one line each."""
        self._model = model
        self.facts = facts
        self.thinking, self.effort, notes = adjusted(self.thinking, self.effort, facts)
        self._warned.clear()
        return notes

    def derived(self, model: str, emit: Callable[[Event], None]) -> AnthropicModel:
        """The same client (its connections, key, retries) for a subagent, emitting its events to `emit`: on
        another model (`model: haiku`), or on this one (its facts and the warnings already given kept)."""
        clone = copy.copy(self)
        clone._emit = emit
        if model != self._model:  # on this model, --fallback-model stays the child's as it is the session's
            clone._warned, clone._spare = set(), None
            clone.switch(model, fallback(model))  # the table's facts: no Models API request before a child starts
        return clone

    def use_http_client(self, http_client: Any) -> None:
        """--record / --replay (model/cassettes/): every request from now on, the session's and its subagents',
        goes through the cassette's HTTP client, whichever provider's client this is."""
        self._client = self._client.with_options(http_client=http_client)

    def thinking_config(self, max_tokens: int) -> dict[str, Any] | None:
        return thinking_param(self.thinking, self.facts, max_tokens, self._thinking_budget)

    async def complete(self, request: ModelRequest, on_text: Callable[[str], None]) -> ModelReply:
        attempt = 0
        while True:
            if self._gate is not None and (wait := self._gate.wait_seconds()) > 0:
                await anyio.sleep(wait)  # another run of the batch hit a rate limit: back off with it
            try:
                return await self._stream_once(request, on_text)
            except Exception as error:  # classified below; anything unknown is re-raised
                if self._spare is not None and self._overloaded(error):
                    self._fall_back()
                    continue
                retry_after = self._retry_delay(error, attempt)
                if self._gate is not None and getattr(error, "status_code", None) == 429:
                    self._gate.close_for(retry_after if retry_after is not None else 1.0)
                if retry_after is None or attempt >= self._retries:
                    raise self._as_api_error(error, attempt + 1) from error
                attempt += 1
                self._emit(ApiRetry(attempt, _retry_reason(error, self._anthropic), retry_after))
                await anyio.sleep(retry_after)

    async def _stream_once(self, request: ModelRequest, on_text: Callable[[str], None]) -> ModelReply:
        # our accumulation: the SDK's raises on a tool input it cannot parse
        lines = server_tools.CallLines(self._emit)  # web searches and fetches as tool lines, as they happen
        builder = ReplyBuilder(on_text, lambda text: self._emit(ThinkingDelta(text)), lines.seen)
        if self._on_attempt is not None:
            self._on_attempt()
        with Silence(self._emit, self._waiting_notice) as silence:
            stream = await self._client.messages.create(**self._params(request), stream=True)
            async with stream:
                partial = self._partial and request.partial  # not a compaction summary's or a server's sampling
                async for event in stream:
                    silence.heard()
                    builder.add(event)
                    if partial:
                        self._emit(StreamEvent(event.to_dict(mode="json")))
        return builder.reply()

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        cap = self.facts.max_output
        max_tokens = min(request.max_tokens or self._max_tokens, cap or self._max_tokens)
        thinking = self.thinking_config(max_tokens)
        thinking_on = thinking is not None and thinking["type"] in ("adaptive", "enabled")
        web = request.web and self._web()
        messages = to_api_messages(
            request.messages, tools_offered=bool(request.tools), model=self._model, thinking=thinking_on, web=web
        )
        params: dict[str, Any] = {"model": self._model, "messages": messages, "max_tokens": max_tokens}
        if thinking is not None:
            params["thinking"] = thinking
            if thinking["type"] == "enabled" and request.tools:
                params["extra_headers"] = {"anthropic-beta": INTERLEAVED_BETA}
        if (effort := self._effort()) is not None:
            params["output_config"] = {"effort": effort}
        if request.system:
            # A breakpoint on the system prompt caches tools + system: the stable prefix.
            params["system"] = [{"type": "text", "text": request.system, "cache_control": EPHEMERAL}]
        if request.tools or web:  # the server tools first: the breakpoint stays on the last MCP tool
            strict = self.facts.structured_outputs is True  # unknown: not sent (a refusal would fail every request)
            params["tools"] = (server_tools.definitions() if web else []) + to_api_tools(request.tools, strict=strict)
        return params

    async def count_tokens(self, request: ModelRequest) -> tuple[int, int, int] | None:
        """(system, tools, messages) tokens as the API counts them, or None when it cannot (offline, a proxy
        without the endpoint): three counts at once, since the endpoint answers only a total."""
        history = list(request.messages) or [Message("user", (Text("."),))]  # the endpoint wants a message
        full = ModelRequest(request.system, history, request.tools, web=request.web)
        parts = (full, ModelRequest("", history, request.tools, web=request.web), ModelRequest("", history, web=False))
        counts: list[int] = [0, 0, 0]

        async def count(index: int, part: ModelRequest) -> None:
            params = self._params(part)
            for key in ("max_tokens", "extra_headers"):
                params.pop(key, None)
            counts[index] = (await self._client.messages.count_tokens(**params)).input_tokens

        try:
            with anyio.fail_after(COUNT_TIMEOUT):
                async with anyio.create_task_group() as group:
                    for index, part in enumerate(parts):
                        group.start_soon(count, index, part)
        except (self._anthropic.APIError, TimeoutError, ExceptionGroup):
            return None
        total, without_system, messages = counts
        return total - without_system, without_system - messages, messages if request.messages else 0

    def _web(self) -> bool:
        """--web, unless the model's capabilities say it has no web search (a line says so, once)."""
        if not self.web:
            return False
        if self.facts.web_search is False:
            if "web" not in self._warned:
                self._warned.add("web")
                self._emit(Notice(f"{self._model} does not support web search: --web is off for it"))
            return False
        return True

    def _effort(self) -> str | None:
        effort = effort_param(self.effort, self.facts)
        if self.effort is not None and effort is None and self.effort not in self._warned:
            self._warned.add(self.effort)
            listed = ", ".join(sorted(self.facts.effort_levels or ())) or "none"
            self._emit(Notice(f"{self._model} does not list effort {self.effort!r} (it lists: {listed}); not sent"))
        return effort

    def _overloaded(self, error: Exception) -> bool:
        """529, or an `overloaded_error` in the middle of a stream: what --fallback-model is for."""
        sdk = self._anthropic
        return isinstance(error, sdk.APIStatusError) and (
            error.status_code == 529 or _error_type(error) == "overloaded_error"
        )

    def _fall_back(self) -> None:
        """--fallback-model (as Claude Code's): the rest of the session goes to it, at once, with a notice."""
        spare, self._spare = self._spare, None
        assert spare is not None
        self._emit(Notice(f"{self._model} is overloaded: switching to the fallback model {spare}"))
        for note in self.switch(spare, fallback(spare)):
            self._emit(Notice(note))

    def _retry_delay(self, error: Exception, attempt: int) -> float | None:
        """Seconds to wait before retrying `error`, or None if it must not be retried."""
        sdk = self._anthropic
        backoff = min(8.0, 0.5 * 2**attempt) * (0.75 + random.random() / 2)
        if isinstance(error, StreamCut | sdk.APIConnectionError) or _is_transport_error(error):
            return backoff
        if isinstance(error, sdk.APIStatusError):
            if error.status_code == 200:  # an `event: error` in the middle of the stream
                return backoff if _error_type(error) in RETRYABLE_ERROR_TYPES else None
            if error.status_code not in RETRYABLE_STATUSES:
                return None
            return _retry_after_header(error) or backoff
        return None

    def _as_api_error(self, error: Exception, attempts: int) -> Exception:
        sdk = self._anthropic
        if isinstance(error, sdk.BadRequestError) and "prompt is too long" in str(error).lower():
            return PromptTooLongError(_describe(error))
        if isinstance(error, StreamCut | sdk.APIError) or _is_transport_error(error):
            status: int | None = error.status_code if isinstance(error, sdk.APIStatusError) else None
            if isinstance(error, sdk.APITimeoutError):
                kind = "timeout"
            elif isinstance(error, StreamCut):
                kind = "cut"
            elif status is None:
                kind = "connection"
            else:
                kind = _error_type(error) if isinstance(error, sdk.APIStatusError) else ""
            message = _api_message(error) if isinstance(error, sdk.APIStatusError) else _describe(error)
            return ApiError(explain(Failure(status, kind, message, attempts, self._model, self._base_url)), status)
        return error


def _is_transport_error(error: Exception) -> bool:
    """A read timeout or reset in the middle of a stream escapes the SDK as a raw httpx2/httpcore2 error."""
    return type(error).__module__.startswith(("httpx", "httpcore"))


def _error_type(error: anthropic.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if isinstance(inner, dict):
            return str(inner.get("type", ""))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    return ""


def _api_message(error: anthropic.APIStatusError) -> str:
    """The API's own `error.message`, one line; the SDK's text (with the whole body) when there is none."""
    body = error.body
    inner = body.get("error") if isinstance(body, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    message = inner.get("message") if isinstance(inner, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return " ".join(str(message if message else error.message).split())  # pyright: ignore[reportUnknownArgumentType]


def _retry_after_header(error: anthropic.APIStatusError) -> float | None:
    headers = error.response.headers
    try:
        if (ms := headers.get("retry-after-ms")) is not None:
            return min(60.0, float(ms) / 1000)
        if (seconds := headers.get("retry-after")) is not None:
            return min(60.0, float(seconds))
    except ValueError:
        return None
    return None


def _describe(error: Exception) -> str:
    status = getattr(error, "status_code", None)
    message = getattr(error, "message", None) or str(error) or type(error).__name__
    text = " ".join(str(message).split())
    return f"{status}: {text}" if status else text


def _retry_reason(error: Exception, sdk: Any) -> str:
    """Why a request is retried, as a person reads it: `500 (internal server error)`, `529 (overloaded)`,
    `connection failed`; never a Python repr (the final failure, if it comes, says what the API said)."""
    status = getattr(error, "status_code", None)
    if isinstance(error, sdk.APIStatusError) and status != 200:
        try:
            return f"{status} ({HTTPStatus(status).phrase.lower()})"
        except ValueError:
            kind = _error_type(cast(Any, error)).removesuffix("_error").replace("_", " ")
            return f"{status} ({kind or 'error'})"
    if isinstance(error, StreamCut):
        return "the reply stream was cut"
    name = type(error).__name__.lower()
    if "timeout" in name:
        return "timed out"
    return "connection failed" if _is_transport_error(error) or "connection" in name else "the reply stream failed"


def retrieve_model_info(model: str, api_key: str | None, base_url: str | None) -> dict[str, Any] | None:
    """`models.retrieve` as JSON; None when the API has no entry (404, or a proxy without /v1/models)."""
    import anthropic

    client = anthropic.Anthropic(
        api_key=api_key,
        base_url=base_url,
        max_retries=0,
        timeout=MODELS_API_TIMEOUT,
        open_telemetry={"traces": False, "propagation": False},  # as the session's client: no spans of its own
    )
    try:
        return client.models.retrieve(model).model_dump(mode="json")
    except (anthropic.NotFoundError, anthropic.BadRequestError, anthropic.PermissionDeniedError):
        return None
    except anthropic.APIError as error:  # offline, timeout, 5xx: ask again next time
        raise Unreachable(str(error)) from error
    finally:
        client.close()


def known_models() -> tuple[str, ...]:
    """The model ids the anthropic SDK names (its `ModelParam`), without dated snapshots and the ones it warns
    are deprecated: an editor's model picker, kept current by the SDK's upgrades rather than by hand."""
    from typing import get_args

    from anthropic.types.model_param import ModelParam

    try:  # private to the SDK (it warns with it on every request): without it, nothing is left out for it
        from anthropic._data import deprecated_models  # pyright: ignore[reportPrivateImportUsage]

        deprecated: Collection[str] = deprecated_models.DEPRECATED_MODELS
    except (ImportError, AttributeError):
        deprecated = ()
    names = (name for literal in get_args(ModelParam) for name in get_args(literal) if isinstance(name, str))
    return tuple(name for name in names if not _DATED.search(name) and name not in deprecated)


_DATED = re.compile(r"-\d{8}$")

__all__ = ["EPHEMERAL", "AnthropicModel", "known_models", "retrieve_model_info", "to_api_messages", "to_api_tools"]
