"""The only importer of `anthropic`: our messages to the Messages API and back, streaming, retries, usage."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from sprout_agent.api_errors import Failure, explain
from sprout_agent.errors import ApiError, PromptTooLongError
from sprout_agent.events import ApiRetry, Event, Notice, ThinkingDelta
from sprout_agent.messages import Block, Image, Message, RedactedThinking, Text, Thinking, ToolResult, ToolUse
from sprout_agent.model_facts import ModelFacts, Unreachable, adjusted, effort_param, fallback, thinking_param
from sprout_agent.protocols import ModelReply, ModelRequest, ToolSpec
from sprout_agent.reply_stream import ReplyBuilder, StreamCut

if TYPE_CHECKING:
    import anthropic

# Statuses the API uses for "try again later"; 529 is Anthropic's overloaded.
RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
RETRYABLE_ERROR_TYPES = frozenset({"overloaded_error", "api_error", "rate_limit_error"})
EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
# Claude 4 models think between tool calls with a budget only behind this beta (adaptive does it by itself).
INTERLEAVED_BETA = "interleaved-thinking-2025-05-14"
MODELS_API_TIMEOUT = 3.0  # a cold start waits at most this long for the model's facts (overlapped with servers)


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
    ) -> None:
        import anthropic  # lazy: costs ~2 s, paid once, overlapped with server start-up

        self._model = model
        self._max_tokens = max_tokens
        self._emit = emit
        self._retries = retries
        self._base_url = base_url
        self._on_attempt = on_attempt  # the ledger counts requests actually sent, failed ones included
        # The SDK's own retries would be invisible to the user; ours emit events and also cover cut streams.
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, max_retries=0, timeout=anthropic.Timeout(600, connect=10)
        )
        self._anthropic = anthropic
        self.facts = facts or fallback(model)
        self.thinking = thinking  # adaptive | on | off | None (the model's default, from its capabilities)
        self.effort = effort
        self._thinking_budget = thinking_budget
        self._warned: set[str] = set()

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

    def thinking_config(self, max_tokens: int) -> dict[str, Any] | None:
        return thinking_param(self.thinking, self.facts, max_tokens, self._thinking_budget)

    async def complete(self, request: ModelRequest, on_text: Callable[[str], None]) -> ModelReply:
        attempt = 0
        while True:
            try:
                return await self._stream_once(request, on_text)
            except Exception as error:  # classified below; anything unknown is re-raised
                retry_after = self._retry_delay(error, attempt)
                if retry_after is None or attempt >= self._retries:
                    raise self._as_api_error(error, attempt + 1) from error
                attempt += 1
                self._emit(ApiRetry(attempt, _describe(error), retry_after))
                await anyio.sleep(retry_after)

    async def _stream_once(self, request: ModelRequest, on_text: Callable[[str], None]) -> ModelReply:
        # our accumulation: the SDK's raises on a tool input it cannot parse
        builder = ReplyBuilder(on_text, lambda text: self._emit(ThinkingDelta(text)))
        if self._on_attempt is not None:
            self._on_attempt()
        stream = await self._client.messages.create(**self._params(request), stream=True)
        async with stream:
            async for event in stream:
                builder.add(event)
        return builder.reply()

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        cap = self.facts.max_output
        max_tokens = min(request.max_tokens or self._max_tokens, cap or self._max_tokens)
        thinking = self.thinking_config(max_tokens)
        thinking_on = thinking is not None and thinking["type"] in ("adaptive", "enabled")
        messages = to_api_messages(
            request.messages, tools_offered=bool(request.tools), model=self._model, thinking=thinking_on
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
        if request.tools:
            params["tools"] = to_api_tools(request.tools)
        return params

    def _effort(self) -> str | None:
        effort = effort_param(self.effort, self.facts)
        if self.effort is not None and effort is None and self.effort not in self._warned:
            self._warned.add(self.effort)
            listed = ", ".join(sorted(self.facts.effort_levels or ())) or "none"
            self._emit(Notice(f"{self._model} does not list effort {self.effort!r} (it lists: {listed}); not sent"))
        return effort

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
            return ApiError(explain(Failure(status, kind, message, attempts, self._model, self._base_url)))
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


def to_api_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    api_tools: list[dict[str, Any]] = [
        {
            "name": spec.name,
            "description": spec.description,
            "input_schema": spec.input_schema or {"type": "object"},
        }
        for spec in tools
    ]
    if api_tools:
        api_tools[-1]["cache_control"] = EPHEMERAL
    return api_tools


def retrieve_model_info(model: str, api_key: str | None, base_url: str | None) -> dict[str, Any] | None:
    """`models.retrieve` as JSON; None when the API has no entry (404, or a proxy without /v1/models)."""
    import anthropic

    client = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=MODELS_API_TIMEOUT)
    try:
        return client.models.retrieve(model).model_dump(mode="json")
    except (anthropic.NotFoundError, anthropic.BadRequestError, anthropic.PermissionDeniedError):
        return None
    except anthropic.APIError as error:  # offline, timeout, 5xx: ask again next time
        raise Unreachable(str(error)) from error
    finally:
        client.close()


def to_api_messages(
    history: Sequence[Message], *, tools_offered: bool = True, model: str = "", thinking: bool = False
) -> list[dict[str, Any]]:
    """Serialises history for the API: merges same-role neighbours, drops empty text and empty turns.

    The API rejects empty text blocks and empty turns, and a rejected history would fail every retry;
    merging keeps hook objections (assistant tool_use after an assistant reply) a valid alternation.
    A request without tools may not carry tool blocks (hook pairs when only hook servers are configured),
    so there they become text. Thinking blocks go back verbatim when thinking is on and `model` wrote them;
    otherwise they are left out, which the API allows for earlier turns (and a foreign signature fails).
    """
    history = [_kept_thinking(message, model, thinking) for message in history]
    unsigned = _unsigned_hook_turn(history) if thinking else 0
    merged: list[dict[str, Any]] = []
    for index, message in enumerate(history):
        as_text = not tools_offered or (unsigned and index >= len(history) - unsigned)
        content = _tool_blocks_as_text(message.content) if as_text else message.content
        blocks = [_to_api_block(block) for block in content if not _is_empty_text(block)]
        if not blocks:
            continue
        if merged and merged[-1]["role"] == message.role:
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": message.role, "content": blocks})
    if merged and merged[-1]["content"][-1]["type"] not in _THINKING_TYPES:  # thinking takes no cache_control
        # The newest turn carries a breakpoint so the next round of a tool loop reads it from cache.
        merged[-1]["content"][-1] = {**merged[-1]["content"][-1], "cache_control": EPHEMERAL}
    return merged


_THINKING_TYPES = ("thinking", "redacted_thinking")


def _kept_thinking(message: Message, model: str, thinking: bool) -> Message:
    def kept(block: Block) -> bool:
        if isinstance(block, Thinking | RedactedThinking):
            return thinking and block.model in ("", model)
        return True

    return Message(message.role, tuple(filter(kept, message.content)))


def _unsigned_hook_turn(history: Sequence[Message]) -> int:
    """How many trailing messages form a hook pair with no thinking before it (0: none).

    With thinking on, the API wants the assistant turn that tool results answer to start with its thinking;
    a `_PostCompact` pair after a handoff has none (our hook wrote it, not the model), so it goes as text.
    """
    end = len(history)  # the trailing user messages merge into one turn: the one the API checks
    while end > 0 and history[end - 1].role == "user":
        end -= 1
    answers = any(isinstance(b, ToolResult) for message in history[end:] for b in message.content)
    if end == 0 or end == len(history) or not answers:
        return 0
    start = end
    while start > 0 and history[start - 1].role == "assistant":
        start -= 1
    turn = [block for message in history[start:end] for block in message.content if not _is_empty_text(block)]
    if not turn or isinstance(turn[0], Thinking | RedactedThinking):
        return 0
    uses = [block for block in turn if isinstance(block, ToolUse)]
    hooks_only = bool(uses) and all(use.name.partition("__")[2].startswith("_") for use in uses)
    return len(history) - start if hooks_only else 0


def _tool_blocks_as_text(content: tuple[Block, ...]) -> tuple[Block, ...]:
    blocks: list[Block] = []
    for block in content:
        if isinstance(block, ToolUse):
            blocks.append(Text(f"[tool call {block.name} {json.dumps(block.input, ensure_ascii=False)}]"))
        elif isinstance(block, ToolResult):
            blocks.append(Text(f"[tool result{' (error)' if block.is_error else ''}]"))
            blocks.extend(block.content)
        elif isinstance(block, Thinking | RedactedThinking):
            continue  # thinking may only precede real tool calls; with them as text it has no place
        else:
            blocks.append(block)
    return tuple(blocks)


def _is_empty_text(block: Block) -> bool:
    return isinstance(block, Text) and not block.text.strip()


def _to_api_block(block: Block) -> dict[str, Any]:
    if isinstance(block, Text):
        return {"type": "text", "text": block.text}
    if isinstance(block, Image):
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": block.media_type, "data": block.data},
        }
    if isinstance(block, ToolUse):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, Thinking):
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if isinstance(block, RedactedThinking):
        return {"type": "redacted_thinking", "data": block.data}
    return _tool_result_block(block)


def _tool_result_block(block: ToolResult) -> dict[str, Any]:
    content = [_to_api_block(part) for part in block.content if not _is_empty_text(part)]
    if not content:
        content = [{"type": "text", "text": "(no output)"}]
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_use_id, "content": content}
    if block.is_error:
        result["is_error"] = True
    return result
