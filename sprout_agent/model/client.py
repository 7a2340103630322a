"""The only importer of `anthropic`: our messages to the Messages API and back, streaming, retries, usage."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from sprout_agent.config.provider import INTERLEAVED_THINKING, Provider
from sprout_agent.core.errors import ApiError, PromptTooLongError
from sprout_agent.core.events import ApiRetry, Event, Notice, StreamEvent, ThinkingDelta
from sprout_agent.core.messages import Message, Text
from sprout_agent.core.protocols import ModelReply, ModelRequest
from sprout_agent.model import lazy_sdk
from sprout_agent.model import web_tools as server_tools
from sprout_agent.model.api_errors import Failure, explain
from sprout_agent.model.api_messages import EPHEMERAL, to_api_messages, to_api_tools
from sprout_agent.model.catalog import known_models, retrieve_model_info
from sprout_agent.model.credentials import Renewal
from sprout_agent.model.facts import ModelFacts, adjusted, effort_param, fallback, thinking_param
from sprout_agent.model.providers import async_client, regional
from sprout_agent.model.rate_gate import RateGate
from sprout_agent.model.reply_stream import ReplyBuilder, StreamCut
from sprout_agent.model.sdk_errors import (
    api_message,
    describe,
    error_type,
    failure_kind,
    is_transport_error,
    retry_after_header,
    retry_reason,
)
from sprout_agent.model.silence import API_WAITING_NOTICE_S, Silence
from sprout_agent.trust.secrets import redactor

if TYPE_CHECKING:
    pass

# Statuses the API uses for "try again later"; 529 is Anthropic's overloaded.
RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
RETRYABLE_ERROR_TYPES = frozenset({"overloaded_error", "api_error", "rate_limit_error"})
# Claude 4 models think between tool calls with a budget only behind this beta (adaptive does it by itself).
INTERLEAVED_BETA = INTERLEAVED_THINKING
COUNT_TIMEOUT = 10.0  # /context waits at most this long for exact counts, then shows the estimate
GEN_AI_PROVIDERS = {
    "anthropic": "anthropic",
    "bedrock": "aws.bedrock",
    "vertex": "gcp.vertex_ai",
    "foundry": "azure.ai.foundry",
}
_TOKENS = ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_FOUNDRY_API_KEY", "ANTHROPIC_FOUNDRY_AUTH_TOKEN")  # never in an error
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
        provider: Provider | None = None,
        credentials: Renewal | None = None,  # your commands that fetch and refresh the credentials
        env: Mapping[str, str] | None = None,
        http_client: Any = None,  # --record / --replay: the cassette's (model/cassettes/); None: the SDK's own
    ) -> None:
        lazy_sdk.install()  # the SDK's types load as the requests use them (model/lazy_sdk.py)
        import anthropic  # lazy: costs ~1 s, paid once, overlapped with server start-up

        self._model = model
        self._max_tokens = max_tokens
        self._emit = emit
        self._waiting_notice = waiting_notice
        self._retries = retries
        self._provider = provider or Provider(base_url=base_url)
        self._base_url = self._provider.base_url or base_url
        self._on_attempt = on_attempt  # the ledger counts requests actually sent, failed ones included
        self._credentials = credentials or Renewal(self._provider)
        self._key = self._credentials.start(api_key)  # a helper's key, else the variable's (blocking: off the loop)
        self._tokens = {name: value for name in _TOKENS if (value := (env or {}).get(name))}  # for the error filter
        # The SDK's own retries would be invisible to the user; ours emit events and also cover cut streams.
        # No spans of the SDK's own, and no trace context in requests to the API: with telemetry on, our `chat`
        # span is the request's (docs/telemetry.md), and a trace id is nothing Anthropic's servers need.
        self._client = async_client(
            self._provider, api_key=self._key, env=env or {}, timeout=timeout, http_client=http_client,
            options=self._credentials.client_options(),
        )  # fmt: skip
        self._regional: dict[str, Any] = {}  # Vertex: a client per VERTEX_REGION_CLAUDE_… region
        self._refused_betas: set[str] = set()  # betas a 400 named: never sent again this session (shared by clones)
        self._betas_sent: tuple[str, ...] = ()
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

    @property
    def provider(self) -> Provider:
        return self._provider

    @property
    def gen_ai_provider(self) -> str:
        """The provider as telemetry's `gen_ai.provider.name` says it (the SDK's names for the clouds)."""
        return GEN_AI_PROVIDERS[self._provider.kind]

    async def aclose(self) -> None:
        """Closes the HTTP client on the loop that used it (left to the garbage collector, it would close on
        whichever loop runs then, or a closed one)."""
        for client in (*self._regional.values(), self._client):
            await client.close()

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

    def thinking_config(self, max_tokens: int) -> dict[str, Any] | None:
        return thinking_param(self.thinking, self.facts, max_tokens, self._thinking_budget)

    async def complete(self, request: ModelRequest, on_text: Callable[[str], None]) -> ModelReply:
        attempt = 0
        recoveries: set[str] = set()  # each at most once per request: a renewal of the credentials
        while True:
            if self._gate is not None and (wait := self._gate.wait_seconds()) > 0:
                await anyio.sleep(wait)  # another run of the batch hit a rate limit: back off with it
            try:
                return await self._stream_once(request, on_text)
            except Exception as error:  # classified below; anything unknown is re-raised
                if await self._recovered(error, recoveries):
                    continue
                retry_after = self._retry_delay(error, attempt)
                if self._gate is not None and getattr(error, "status_code", None) == 429:
                    self._gate.close_for(retry_after if retry_after is not None else 1.0)
                if retry_after is None or attempt >= self._retries:
                    raise self._as_api_error(error, attempt + 1) from error
                attempt += 1
                self._emit(ApiRetry(attempt, retry_reason(error, self._anthropic), retry_after))
                await anyio.sleep(retry_after)

    async def _recovered(self, error: Exception, done: set[str]) -> bool:
        """Whether the request goes again at once: to --fallback-model after an overload, without a beta a 400
        named, or with renewed credentials after a 401/403 (once per request, with a notice, the turn kept)."""
        if self._spare is not None and self._overloaded(error):
            self._fall_back()
            return True
        if refused := self._refused(error):
            self._refused_betas.update(refused)
            where = self._provider.name
            self._emit(
                Notice(f"{where} refused the beta {', '.join(refused)}: sent again without it (and from now on)")
            )
            return True
        if getattr(error, "status_code", None) in (401, 403) and "renew" not in done:
            done.add("renew")
            return await self._renew()
        return False

    def _refused(self, error: Exception) -> list[str]:
        """The betas of the last request when a 400 names one, or speaks of a beta flag (Bedrock's and the
        gateways' "invalid beta flag" names none)."""
        if not self._betas_sent or not isinstance(error, self._anthropic.BadRequestError):
            return []
        said = str(error).lower()
        named = [beta for beta in self._betas_sent if beta in said]
        return named or (list(self._betas_sent) if "beta" in said else [])

    async def _renew(self) -> bool:
        """New credentials: your refresh command run, the key or keys fetched again, or the cloud's chain re-read."""
        if not await self._credentials.after_refusal(self._client):
            return False
        self._regional.clear()  # each copy holds the old credentials
        self._emit(Notice(f"{self._provider.name} refused the credentials: renewed them, sending the request again"))
        return True

    async def _stream_once(self, request: ModelRequest, on_text: Callable[[str], None]) -> ModelReply:
        # our accumulation: the SDK's raises on a tool input it cannot parse
        lines = server_tools.CallLines(self._emit)  # web searches and fetches as tool lines, as they happen
        builder = ReplyBuilder(on_text, lambda text: self._emit(ThinkingDelta(text)), lines.seen)
        await self._credentials.before_request(self._client)  # a TTL passed, keys about to expire: fresh ones
        params = self._params(request)
        sent = params.get("extra_headers", {}).get("anthropic-beta", "")
        self._betas_sent = tuple(beta for beta in sent.split(",") if beta)  # what a 400 may name
        if self._on_attempt is not None:
            self._on_attempt()
        with Silence(self._emit, self._waiting_notice) as silence:
            stream = await self._client_for(self._model).messages.create(**params, stream=True)
            async with stream:
                partial = self._partial and request.partial  # not a compaction summary's or a server's sampling
                async for event in stream:
                    silence.heard()
                    builder.add(event)
                    if partial:
                        self._emit(StreamEvent(event.to_dict(mode="json")))
        return builder.reply()

    def _client_for(self, model: str) -> Any:
        region = self._provider.region_for(model) or ""
        if region == (self._provider.region or ""):
            return self._client
        if region not in self._regional:
            self._regional[region] = regional(self._client, self._provider, model)
        return self._regional[region]

    def _beta(self, beta: str) -> bool:
        """Whether `beta` may be sent: the provider has been shown to take it (config/provider.py), no 400 named it,
        and CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS is off."""
        return self._provider.allows_beta(beta) and beta not in self._refused_betas

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
            if thinking["type"] == "enabled" and request.tools and self._beta(INTERLEAVED_BETA):
                params["extra_headers"] = {"anthropic-beta": INTERLEAVED_BETA}
        if (effort := self._effort()) is not None:
            params["output_config"] = {"effort": effort}
        if request.system:
            # A breakpoint on the system prompt caches tools + system: the stable prefix.
            params["system"] = [{"type": "text", "text": request.system, "cache_control": EPHEMERAL}]
        if request.tools or web:  # the server tools first: the breakpoint stays on the last MCP tool
            strict = self.facts.structured_outputs is True  # unknown: not sent (a refusal would fail every request)
            offered = server_tools.definitions(self._provider.features.web_fetch) if web else []
            params["tools"] = offered + to_api_tools(request.tools, strict=strict)
        return params

    async def count_tokens(self, request: ModelRequest) -> tuple[int, int, int] | None:
        """(system, tools, messages) tokens as the API counts them, or None when it cannot (offline, a proxy
        without the endpoint, a provider without it): three counts at once, since the endpoint answers only a total."""
        if not self._provider.features.count_tokens:
            return None
        history = list(request.messages) or [Message("user", (Text("."),))]  # the endpoint wants a message
        full = ModelRequest(request.system, history, request.tools, web=request.web)
        parts = (full, ModelRequest("", history, request.tools, web=request.web), ModelRequest("", history, web=False))
        counts: list[int] = [0, 0, 0]

        async def count(index: int, part: ModelRequest) -> None:
            params = self._params(part)
            for key in ("max_tokens", "extra_headers"):
                params.pop(key, None)
            counts[index] = (await self._client_for(self._model).messages.count_tokens(**params)).input_tokens

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
        if not self._provider.features.web_search:
            if "web" not in self._warned:
                self._warned.add("web")
                self._emit(Notice(f"{self._provider.name} has no web search: --web is off"))
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
            error.status_code == 529 or error_type(error) == "overloaded_error"
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
        if isinstance(error, StreamCut | sdk.APIConnectionError) or is_transport_error(error):
            return backoff
        if isinstance(error, sdk.APIStatusError):
            if error.status_code == 200:  # an `event: error` in the middle of the stream
                return backoff if error_type(error) in RETRYABLE_ERROR_TYPES else None
            if error.status_code not in RETRYABLE_STATUSES:
                return None
            return retry_after_header(error) or backoff
        return None

    def _as_api_error(self, error: Exception, attempts: int) -> Exception:
        sdk = self._anthropic
        if isinstance(error, sdk.BadRequestError) and "prompt is too long" in str(error).lower():
            return PromptTooLongError(describe(error))
        kind = failure_kind(error, sdk)
        if kind is None:
            return error
        status: int | None = error.status_code if isinstance(error, sdk.APIStatusError) else None
        message = api_message(error) if isinstance(error, sdk.APIStatusError) else describe(error)
        # A gateway or a cloud may quote what it was sent; the key or the helper's output is never shown.
        known = {"ANTHROPIC_API_KEY": self._key or "", **self._tokens, **self._credentials.known()}
        where = self._provider
        failure = Failure(status, kind, redactor(known)(message), attempts, self._model, self._base_url, where)
        return ApiError(explain(failure), status)


__all__ = ["EPHEMERAL", "AnthropicModel", "known_models", "retrieve_model_info", "to_api_messages", "to_api_tools"]
