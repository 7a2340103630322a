"""The seam to tracing (telemetry/ implements it with OpenTelemetry): spans around a turn, a model request, a tool
call, a hook call, a compaction and a subagent. Off, it is `NO_TRACER`: one shared object per call site, nothing
recorded, nothing imported.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from sprout_agent.core.messages import Usage
    from sprout_agent.core.protocols import Model, ModelReply
    from sprout_agent.core.stop_reasons import TurnStop

Attribute = str | int | float | bool | Sequence[str]
# What a tracer keeps of a text (a prompt, a tool's input or result): cut by the tracer, after its secret filter (cut
# first, a key at the end would lose its tail and no longer match).
CONTENT_CHARS = 4096
Attributes = Mapping[str, Attribute]


class TraceSpan(Protocol):
    def set(self, attributes: Attributes) -> None: ...


class Tracer(Protocol):
    """Spans for the loop. `content`: prompts, answers and tool inputs and results may be recorded (the user turned
    it on); without it, only names, sizes, counts and outcomes are."""

    content: bool

    def span(self, name: str, attributes: Attributes) -> AbstractContextManager[TraceSpan]: ...

    def event(self, name: str, attributes: Attributes) -> None:
        """Something that happened at a moment, on the current span (a hook budget spent)."""
        ...


class _NoSpan:
    def set(self, attributes: Attributes) -> None:
        del attributes

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        return None


class _NoTracer:
    content = False
    _span = _NoSpan()

    def span(self, name: str, attributes: Attributes) -> AbstractContextManager[TraceSpan]:
        return self._span

    def event(self, name: str, attributes: Attributes) -> None:
        del name, attributes


NO_TRACER: Tracer = _NoTracer()


def tracing_usage(usage: Usage) -> dict[str, Attribute]:
    """Tokens by kind, in the GenAI semantic conventions' names."""
    return {
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
    }


def reply_attributes(reply: ModelReply, first_token_seconds: float) -> dict[str, Attribute]:
    """A model request's span, once its reply is in."""
    attributes = tracing_usage(reply.usage)
    attributes |= {"gen_ai.response.model": reply.model, "gen_ai.response.finish_reasons": [reply.stop_reason]}
    attributes |= {"gen_ai.response.id": reply.id, "sprout.time_to_first_token_s": round(first_token_seconds, 4)}
    return attributes


def turn_attributes(session_id: str, fields: Mapping[str, object], prompt: str, content: bool) -> dict[str, Attribute]:
    """A user turn's span (a subagent's names its agent); the prompt itself only with `content`."""
    attributes: dict[str, Attribute] = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "sprout-agent"}
    attributes |= {"gen_ai.conversation.id": session_id, "sprout.prompt_chars": len(prompt)}
    if agent := fields.get("agent_type"):
        attributes |= {"gen_ai.agent.name": str(agent), "gen_ai.agent.id": str(fields.get("agent_id"))}
    if content:
        attributes["sprout.prompt"] = prompt
    return attributes


def turn_end_attributes(
    usage: Usage, stop_reason: TurnStop, requests: int, cost_usd: float, files_changed: int
) -> dict[str, Attribute]:
    """A user turn's span, once the turn has ended."""
    attributes = tracing_usage(usage) | {"sprout.stop_reason": stop_reason, "sprout.requests": requests}
    return attributes | {"sprout.cost_usd": cost_usd, "sprout.files_changed": files_changed}


def request_attributes(model: Model) -> dict[str, Attribute]:
    """A model request's span; the provider in OpenTelemetry's names (aws.bedrock, gcp.vertex_ai: the SDK's own)."""
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": model.gen_ai_provider,
        "gen_ai.request.model": model.name,
    }


class FirstToken:
    """Passes each text delta on, noting when the first came (a request's time to first token)."""

    def __init__(self, started: float, on_text: Callable[[str], None]) -> None:
        self._started = started
        self._on_text = on_text
        self._first: float | None = None

    def __call__(self, text: str) -> None:
        if self._first is None:
            self._first = time.monotonic()
        self._on_text(text)

    def seconds(self) -> float:
        return (self._first if self._first is not None else time.monotonic()) - self._started
