"""MCP tool results as our message blocks: content mapped, resources described, big text cut in the middle;
a file change's diff from the result's `_meta`, and progress messages cut to what a face shows."""

from __future__ import annotations

import json
from typing import assert_never

import mcp.types as types

from sprout_agent.core.images import API_MEDIA_TYPES, checked
from sprout_agent.core.messages import Image, Text
from sprout_agent.core.protocols import ToolOutcome
from sprout_agent.trust.sandbox import SANDBOX_DENIED_META

DIFF_META = "sprout-agent/diff"  # the built-in dev server's key (tools/_server.py)
MAX_DIFF_CHARS = 64 * 1024  # of a diff from any server: faces clip further
PROGRESS_LINES = 5
PROGRESS_CHARS = 400


def to_outcome(result: types.CallToolResult, max_bytes: int) -> ToolOutcome:
    """Our blocks from an MCP result; text over `max_bytes` keeps its head and tail."""
    blocks: list[Text | Image] = [_block(item) for item in result.content]
    # MCPServer wraps a Python None as {"result": null}: that is no output, not the text "null".
    structured = result.structured_content
    if not blocks and structured is not None and any(value is not None for value in structured.values()):
        blocks.append(Text(json.dumps(result.structured_content, ensure_ascii=False)))
    if not blocks and result.is_error:
        blocks.append(Text("the tool reported an error"))
    texts = [block.text for block in blocks if isinstance(block, Text)]
    if sum(len(text.encode()) for text in texts) > max_bytes:
        images = [block for block in blocks if isinstance(block, Image)]
        blocks = [Text(cut_middle("\n".join(texts), max_bytes)), *images]
    denied = (result.meta or {}).get(SANDBOX_DENIED_META)
    sandbox_denied = denied if isinstance(denied, str) else None
    return ToolOutcome(tuple(blocks), is_error=bool(result.is_error), sandbox_denied=sandbox_denied, diff=_diff(result))


def resource_outcome(result: types.ReadResourceResult, max_bytes: int) -> ToolOutcome:
    """A resource's contents as a tool result, under the same caps and image checks as a tool's: text as text,
    an image blob the API takes as an image, any other blob as one line naming its type and size."""
    blocks: list[Text | Image] = []
    for item in result.contents:
        if isinstance(item, types.TextResourceContents):
            blocks.append(Text(f"{item.uri}\n{item.text}" if len(result.contents) > 1 else item.text))
        elif (item.mime_type or "") in API_MEDIA_TYPES:
            blocks.append(checked(Image(item.mime_type or "", item.blob)))
        else:
            size = len(item.blob) * 3 // 4
            blocks.append(Text(f"[resource {item.uri}, {item.mime_type or 'unknown type'}, {size} bytes]"))
    if not blocks:
        blocks.append(Text("the resource is empty"))
    texts = [block.text for block in blocks if isinstance(block, Text)]
    if sum(len(text.encode()) for text in texts) > max_bytes:
        blocks = [Text(cut_middle("\n".join(texts), max_bytes)), *(b for b in blocks if isinstance(b, Image))]
    return ToolOutcome(tuple(blocks))


def _diff(result: types.CallToolResult) -> str:
    diff = (result.meta or {}).get(DIFF_META)
    if not isinstance(diff, str) or result.is_error:
        return ""
    return diff if len(diff) <= MAX_DIFF_CHARS else diff[:MAX_DIFF_CHARS] + "\n… [diff cut]\n"


def progress_text(message: str) -> str:
    """A progress message as the loop passes it on: its last PROGRESS_LINES lines, at most PROGRESS_CHARS
    characters (the dev server already sends no more; another server may send anything)."""
    if len(message) <= PROGRESS_CHARS and message.count("\n") < PROGRESS_LINES:
        return message
    return "\n".join(message[-PROGRESS_CHARS * 4 :].split("\n")[-PROGRESS_LINES:])[-PROGRESS_CHARS:]


def _block(item: types.ContentBlock) -> Text | Image:
    match item:
        case types.TextContent():
            return Text(item.text)
        case types.ImageContent():
            return checked(Image(item.mime_type, item.data))  # one the API would refuse would poison the session
        case types.AudioContent():
            return Text(f"[audio: {item.mime_type}, {len(item.data)} base64 bytes]")
        case types.ResourceLink():
            about = f" - {item.description}" if item.description else ""
            return Text(f"[resource link {item.name}: {item.uri}{about}]")
        case types.EmbeddedResource():
            return _embedded(item.resource)
        case _:
            assert_never(item)


def _embedded(resource: types.TextResourceContents | types.BlobResourceContents) -> Text:
    match resource:
        case types.TextResourceContents():
            return Text(f"{resource.uri}\n{resource.text}")
        case types.BlobResourceContents():
            size = len(resource.blob) * 3 // 4
            return Text(f"[resource {resource.uri}, {resource.mime_type or 'unknown type'}, {size} bytes]")
        case _:
            assert_never(resource)


def cut_middle(text: str, max_bytes: int) -> str:
    """Keeps the head and the tail of `text` within `max_bytes` UTF-8 bytes, marker included."""
    data = text.encode()
    if len(data) <= max_bytes:
        return text
    # Sized for the largest possible count, so the real marker can only be shorter.
    room = max_bytes - len(_marker(len(data)).encode())
    if room <= 0:
        return data[:max_bytes].decode(errors="ignore")
    head = data[: (room + 1) // 2].decode(errors="ignore")
    tail = data[len(data) - room // 2 :].decode(errors="ignore")
    elided = len(data) - len(head.encode()) - len(tail.encode())
    return f"{head}{_marker(elided)}{tail}"


def _marker(elided: int) -> str:
    return f"\n… [{elided} bytes elided] …\n"
