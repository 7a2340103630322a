"""Compaction: when the window fills, summarise the history and go on in a fresh context.

Pure trigger math and history building, plus `Compactor`, a thin async driver with the safety
rails (circuit breaker, thrash guard, per-session cap, oldest-turn truncation as the fallback).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import assert_never

from sprout_agent.core.errors import SproutError, UsageError
from sprout_agent.core.events import CompactionFinished, CompactionStarted, Event, Notice
from sprout_agent.core.messages import (
    Block,
    Image,
    Message,
    RedactedThinking,
    ServerToolResult,
    ServerToolUse,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Usage,
)
from sprout_agent.core.model_names import canonical
from sprout_agent.core.protocols import Model, ModelRequest

# Context windows by model-name prefix, longest prefix first; SPROUT_AGENT_MAX_CONTEXT_TOKENS overrides.
CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (("claude-", 200_000),)
DEFAULT_WINDOW = 200_000
DEFAULT_THRESHOLD_FRACTION = 0.8
SUMMARY_MAX_TOKENS = 8_192
CHARS_PER_TOKEN = 4  # a deliberately simple estimate for text appended since the last reported usage
IMAGE_TOKENS = 1_600  # the API bills a full-size image at about this much
TRANSCRIPT_RESULT_MAX_CHARS = 8_000
VERBATIM_PROMPTS_MAX_CHARS = 8_000
FAILURES_BEFORE_BREAKER = 3

SUMMARY_SYSTEM = """You write handoff summaries for a coding agent whose context window is full. \
Another instance of the agent will continue the work from your summary alone, so be complete and exact."""

SUMMARY_INSTRUCTIONS = """Write a handoff summary of the conversation above with these sections:
1. Task: the original task and the current request.
2. Instructions and constraints from the user (verbatim where short).
3. Done so far: files touched, commands run and their results, what was verified.
4. Decisions and why.
5. Remaining work.
6. Next step: exactly what to do next.
Output only the summary."""


def context_window(model: str, override: int | None) -> int:
    if override is not None:
        return override
    name = canonical(model)  # a Bedrock or Vertex id has its model's window
    return next((size for prefix, size in CONTEXT_WINDOWS if name.startswith(prefix)), DEFAULT_WINDOW)


def parse_threshold(raw: str | None, window: int, reserve: int) -> int | None:
    """Tokens past which the next request compacts; None = compaction off.

    Unset: 80 % of the window less the output reservation. A value ≤ 1 is a fraction of that; a larger
    integer is a token count; `0` or `off` disables.
    """
    usable = max(1, window - reserve)
    if raw is None or not raw.strip():
        return int(usable * DEFAULT_THRESHOLD_FRACTION)
    text = raw.strip().lower()
    if text in ("0", "off"):
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value <= 0:  # float() takes "nan" and "1e400" (inf); int() of them crashes
        raise UsageError(f"SPROUT_AGENT_COMPACT_THRESHOLD must be a fraction, a token count or off, got {raw!r}")
    return int(usable * value) if value <= 1 else int(value)


def estimate_tokens(messages: Sequence[Message]) -> int:
    chars = 0
    images = 0
    for message in messages:
        for block in message.content:
            block_chars, block_images = _size(block)
            chars += block_chars
            images += block_images
    return chars // CHARS_PER_TOKEN + images * IMAGE_TOKENS


def _size(block: Block) -> tuple[int, int]:
    """(characters, images) the block puts in a request."""
    match block:
        case Text():
            return len(block.text), 0
        case Image():
            return 0, 1
        case ToolResult():
            images = sum(1 for part in block.content if isinstance(part, Image))
            return sum(len(part.text) for part in block.content if isinstance(part, Text)) + 40, images
        case ToolUse():
            return len(block.name) + len(json.dumps(block.input)) + 40, 0
        case Thinking():  # sent back, so it takes room (the signature too)
            return len(block.thinking) + len(block.signature), 0
        case RedactedThinking():
            return len(block.data), 0
        case ServerToolUse():
            return len(json.dumps(block.input)) + 40, 0
        case ServerToolResult():
            return len(block.raw), 0
        case _:
            assert_never(block)


def render_transcript(history: Sequence[Message], budget_tokens: int) -> tuple[str, int]:
    """The newest messages that fit `budget_tokens`, as plain text; returns it and how many were left out."""
    rendered: list[str] = []
    used = 0
    for message in reversed(history):
        text = _render(message)
        cost = len(text) // CHARS_PER_TOKEN + 1
        if used + cost > budget_tokens:
            break
        rendered.append(text)
        used += cost
    omitted = len(history) - len(rendered)
    return "\n\n".join(reversed(rendered)), omitted


def _render(message: Message) -> str:
    parts: list[str] = []
    for block in message.content:
        match block:
            case Text():
                parts.append(block.text)
            case Image():
                parts.append("[image]")
            case ToolUse():
                parts.append(f"[tool call {block.name} {json.dumps(block.input, ensure_ascii=False)}]")
            case Thinking() | RedactedThinking():
                continue  # the summary is of what was said and done; reasoning is the model's own scratch space
            case ServerToolUse():
                parts.append(f"[{block.name} {json.dumps(block.input, ensure_ascii=False)}]")
            case ServerToolResult():  # search results are encrypted; the reply that used them says what mattered
                parts.append(f"[{block.kind}]")
            case ToolResult():
                body = "\n".join(_render_part(part) for part in block.content)
                if len(body) > TRANSCRIPT_RESULT_MAX_CHARS:
                    cut = len(body) - TRANSCRIPT_RESULT_MAX_CHARS
                    body = body[:TRANSCRIPT_RESULT_MAX_CHARS] + f"\n[… {cut} chars cut]"
                parts.append(f"[tool result{' (error)' if block.is_error else ''}]\n{body}")
            case _:
                assert_never(block)
    return f"{message.role.capitalize()}: " + "\n".join(parts)


def _render_part(part: Text | Image) -> str:
    match part:
        case Text():
            return part.text
        case Image():
            return "[image]"
        case _:
            assert_never(part)


def user_prompts(history: Sequence[Message]) -> list[str]:
    """What the user typed, newest last: user messages with text (tool results are not prompts)."""
    return [m.text for m in history if m.role == "user" and m.text.strip()]


def summary_request(history: Sequence[Message], window: int, focus: str | None) -> ModelRequest:
    instructions = SUMMARY_INSTRUCTIONS + (f"\nFocus especially on: {focus}" if focus else "")
    budget = window - SUMMARY_MAX_TOKENS - estimate_tokens([Message("user", (Text(instructions),))]) - 1_000
    transcript, omitted = render_transcript(history, max(1_000, budget))
    note = f"[{omitted} earlier messages did not fit and are left out; say so in the summary]\n\n" if omitted else ""
    text = f"{note}<conversation>\n{transcript}\n</conversation>\n\n{instructions}"
    return ModelRequest(SUMMARY_SYSTEM, (Message("user", (Text(text),)),), (), SUMMARY_MAX_TOKENS, web=False)


def handoff_history(summary: str, prompts: Sequence[str], current: str | None) -> list[Message]:
    """The fresh context: the summary, the user's own words verbatim, and the current request."""
    blocks = [Text(f"[Context handoff: the conversation so far was summarised to fit the window]\n\n{summary}")]
    earlier = [p for p in prompts if p != current]
    kept: list[str] = []
    for prompt in reversed(earlier):
        if sum(map(len, kept)) + len(prompt) > VERBATIM_PROMPTS_MAX_CHARS:
            break
        kept.insert(0, prompt)
    if kept:
        blocks.append(Text("[The user's earlier messages, verbatim]\n" + "\n---\n".join(kept)))
    if current:
        blocks.append(Text(current))
    else:
        blocks.append(Text("[Continue from the summary.]"))
    return [Message("user", tuple(blocks))]


def drop_oldest(history: Sequence[Message], target_tokens: int) -> list[Message]:
    """Drops the oldest whole exchanges after the first message until the estimate fits.

    A cut lands only where an assistant message follows a user message, so no tool_result is
    separated from its tool_use and roles still alternate.
    """
    for cut in range(2, len(history)):
        if history[cut].role != "assistant" or history[cut - 1].role != "user":
            continue
        kept = [_with_drop_note(history[0], cut - 1), *history[cut:]]
        if estimate_tokens(kept) <= target_tokens:
            return kept
    return list(history)


def _with_drop_note(first: Message, dropped: int) -> Message:
    note = Text(f"[{dropped} earlier messages were dropped to fit the context window]")
    return Message(first.role, (*first.content, note))


@dataclass
class CompactionOutcome:
    history: list[Message]
    summarised: bool  # False: the fallback truncation ran


class Compactor:
    """Decides when to compact and does it; keeps the session's breaker, thrash and cap state."""

    def __init__(
        self,
        *,
        model: Model,
        window: int,
        threshold: int | None,
        max_compactions: int,
        emit: Callable[[Event], None],
        on_usage: Callable[[Usage], object],
    ) -> None:
        self.model = model
        self.on_usage = on_usage
        self.window = window
        self.threshold = threshold
        self.max_compactions = max_compactions
        self.emit = emit
        self.count = 0
        self.failures_in_row = 0
        self.auto_enabled = threshold is not None and max_compactions > 0
        self._last_auto_request: int | None = None
        self._said_fixed_too_big = False

    def due(self, estimate: int, request_number: int, fixed: int = 0) -> bool:
        """True when the next request would pass the threshold (strictly more tokens than it).

        `estimate` counts the whole request; `fixed` is its part no summary can shrink (tool definitions and
        the system prompt): when that alone reaches the threshold, compacting cannot help and is skipped.
        """
        if self.threshold is None or estimate <= self.threshold:
            return False
        if fixed >= self.threshold:
            if not self._said_fixed_too_big:
                self._said_fixed_too_big = True
                self.emit(
                    Notice(
                        f"the tool definitions and system prompt alone take ~{fixed} tokens, over the compaction "
                        f"threshold (~{self.threshold}): compacting the history cannot help, so it is skipped",
                        "warning",
                    )
                )
            return False
        if self._last_auto_request is not None and request_number - self._last_auto_request <= 1:
            # Compacted for the previous request and still over: another summary makes no progress.
            self.emit(Notice("compaction made no progress; dropping the oldest turns instead", "warning"))
            self.auto_enabled = False
        self._last_auto_request = request_number
        return True

    async def compact(
        self, history: Sequence[Message], current: str | None, *, reason: str, focus: str | None = None
    ) -> CompactionOutcome:
        before = estimate_tokens(history)
        self.emit(CompactionStarted(reason, before))
        target = self.threshold if self.threshold is not None else int(self.window * DEFAULT_THRESHOLD_FRACTION)
        manual = reason == "manual"
        if not manual and (not self.auto_enabled or self.count >= self.max_compactions):
            return self._truncate(history, before, target, "automatic compaction is off for this session")
        try:
            reply = await self.model.complete(summary_request(history, self.window, focus), lambda _text: None)
            self.on_usage(reply.usage)
            summary = "".join(b.text for b in reply.content if isinstance(b, Text)).strip()
            if reply.stop_reason not in ("end_turn", "max_tokens") or not summary:
                raise SproutError(f"the summary request ended with {reply.stop_reason} and no summary")
        except SproutError as error:
            return self._failed(history, before, target, str(error))
        self.failures_in_row = 0
        self.count += 1
        fresh = handoff_history(summary, user_prompts(history), current)
        self.emit(CompactionFinished(before, estimate_tokens(fresh), True))
        return CompactionOutcome(fresh, True)

    def _failed(self, history: Sequence[Message], before: int, target: int, detail: str) -> CompactionOutcome:
        self.failures_in_row += 1
        self.emit(CompactionFinished(before, before, False, detail))
        if self.failures_in_row >= FAILURES_BEFORE_BREAKER and self.auto_enabled:
            self.auto_enabled = False
            self.emit(Notice("3 compactions failed in a row: automatic compaction is off for this session", "warning"))
        return self._truncate(history, before, target, "the summary failed")

    def _truncate(self, history: Sequence[Message], before: int, target: int, why: str) -> CompactionOutcome:
        kept = drop_oldest(history, target)
        after = estimate_tokens(kept)
        self.emit(Notice(f"{why}: dropped {len(history) - len(kept)} oldest messages (~{before} → ~{after} tokens)"))
        return CompactionOutcome(kept, False)
