"""The conversation as plain frozen data: what the loop keeps, the store writes and model/client.py translates."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, assert_never


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class Image:
    media_type: str
    data: str  # base64


# A tool input that is not a JSON object we can send back is kept as {INVALID_INPUT_KEY: raw text}: still an
# object, so the history stays valid, and the loop answers the call with an error instead of running it.
INVALID_INPUT_KEY = "_invalid"


@dataclass(frozen=True, slots=True)
class ToolUse:
    id: str
    name: str
    input: dict[str, object]


@dataclass(frozen=True, slots=True)
class ToolResult:
    tool_use_id: str
    content: tuple[Text | Image, ...]
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class Thinking:
    """The model's reasoning with its signature; sent back byte-identical (the API verifies the signature).

    `model` is ours, never sent: a signature binds the block to the model that wrote it, so a request to
    another model leaves the block out (model/client.py) instead of earning a 400."""

    thinking: str
    signature: str
    model: str = ""


@dataclass(frozen=True, slots=True)
class RedactedThinking:
    """Reasoning the API encrypted; opaque, kept and sent back unchanged like `Thinking`."""

    data: str
    model: str = ""


@dataclass(frozen=True, slots=True)
class ServerToolUse:
    """A call the API ran itself (web_search, web_fetch): the model's input, sent back as it came."""

    id: str
    name: str
    input: dict[str, object]


@dataclass(frozen=True, slots=True)
class ServerToolResult:
    """The API's answer to a `ServerToolUse` (web_search_tool_result, web_fetch_tool_result): opaque (search
    results carry encrypted content the API checks), so the whole block is kept as the JSON it arrived as and
    sent back unchanged, like a thinking block's signature."""

    tool_use_id: str
    kind: str  # the block's type
    raw: str  # the block as JSON text, every field as received


Block = Text | Image | ToolUse | ToolResult | Thinking | RedactedThinking | ServerToolUse | ServerToolResult
ThinkingBlock = Thinking | RedactedThinking
Role = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: tuple[Block, ...]

    @property
    def tool_uses(self) -> tuple[ToolUse, ...]:
        return tuple(block for block in self.content if isinstance(block, ToolUse))

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.content if isinstance(block, Text))


def user_text(text: str) -> Message:
    return Message("user", (Text(text),))


def text_of(content: tuple[Text | Image, ...]) -> str:
    """Joins the text parts of a tool result; images are described, not dropped."""
    parts: list[str] = []
    for block in content:
        match block:
            case Text():
                parts.append(block.text)
            case Image():
                parts.append(f"[image: {block.media_type}, {len(block.data)} base64 bytes]")
            case _:
                assert_never(block)
    return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    web_searches: int = 0  # usage.server_tool_use.web_search_requests: billed per search
    web_fetches: int = 0  # web_fetch_requests: billed as tokens only

    @property
    def context_tokens(self) -> int:
        """Everything the request put in the window: fresh input plus cached reads and writes."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.web_searches + other.web_searches,
            self.web_fetches + other.web_fetches,
        )

    def __sub__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens - other.input_tokens,
            self.output_tokens - other.output_tokens,
            self.cache_read_tokens - other.cache_read_tokens,
            self.cache_write_tokens - other.cache_write_tokens,
            self.web_searches - other.web_searches,
            self.web_fetches - other.web_fetches,
        )


def invalid_input(raw: object) -> str:
    """What the model reads for a call whose input was not a JSON object (kept under INVALID_INPUT_KEY)."""
    shown = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    return f"tool input must be a JSON object of valid Unicode text (no lone surrogates); got: {shown[:200]}"


def with_calls(message: Message, calls: Mapping[str, ToolUse]) -> Message:
    """`message` with its tool_use blocks replaced by `calls` of the same id (the calls as they ran)."""
    return Message(message.role, tuple(calls.get(b.id, b) if isinstance(b, ToolUse) else b for b in message.content))
