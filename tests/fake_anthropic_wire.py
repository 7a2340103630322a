"""Wire details of the fake Anthropic server: prompt-cache billing and the SSE events of one reply.

Tokens are estimated as len(json) // 4. The prompt prefix is the segments tools -> system -> messages
(one segment per tool, system block, and message content block; ``cache_control`` itself is not part
of a segment's identity, the message role is). A segment carrying cache_control, or the last segment
when the body has top-level cache_control, is a breakpoint. cache_read = the longest prefix written at a
breakpoint of an earlier request, found at or up to 20 segments before any breakpoint of this request
(the API's lookback); cache_creation = the prefix up to the last breakpoint beyond that; input = the
rest. Minimum cacheable sizes, TTLs, and model or tool_choice in the cache key are not modelled.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tests.api_rules import sealed, sign

Json = dict[str, Any]
LOOKBACK = 20


def _segments(body: Json) -> list[tuple[str, bool]]:
    """The prompt prefix in API order as (identity, is_breakpoint) pairs."""
    raw: list[tuple[str, Any]] = [("tool", t) for t in body.get("tools") or []]
    system = body.get("system")
    raw += [("system", b) for b in ([{"type": "text", "text": system}] if isinstance(system, str) else system or [])]
    for m in body.get("messages") or []:
        content = m.get("content")
        raw += [
            (m.get("role", ""), b)
            for b in ([{"type": "text", "text": content}] if isinstance(content, str) else content)
        ]
    segs: list[tuple[str, bool]] = []
    for tag, item in raw:
        bare = {k: v for k, v in item.items() if k != "cache_control"} if isinstance(item, dict) else item
        segs.append((tag + json.dumps(bare, sort_keys=True), isinstance(item, dict) and "cache_control" in item))
    if body.get("cache_control") and segs:
        segs[-1] = (segs[-1][0], True)
    return segs


class PromptCache:
    """Prefix hashes written at breakpoints of earlier requests (see module docstring)."""

    def __init__(self) -> None:
        self._written: set[str] = set()

    def bill(self, body: Json) -> Json:
        segs = _segments(body)
        hashes: list[str] = []
        chars = [0]
        h = hashlib.sha256()
        for ident, _ in segs:
            h.update(hashlib.sha256(ident.encode()).digest())
            hashes.append(h.hexdigest())
            chars.append(chars[-1] + len(ident))
        breaks = [i for i, (_, bp) in enumerate(segs) if bp]
        hit = 0  # number of segments read from cache
        for b in breaks:
            for i in range(b, max(-1, b - LOOKBACK - 1), -1):
                if hashes[i] in self._written:
                    hit = max(hit, i + 1)
                    break
        end = max([b + 1 for b in breaks] + [hit])
        self._written.update(hashes[b] for b in breaks)
        read, cached = chars[hit] // 4, chars[end] // 4
        return {
            "input_tokens": chars[-1] // 4 - cached,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": cached - read,
        }


def sse(event: str, data: Json) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _chunks(s: str, n: int) -> list[str]:
    size = max(1, -(-len(s) // n))
    return [s[i : i + size] for i in range(0, len(s), size)]


def _block_events(i: int, block: Json, tool_id: str, model: str) -> list[tuple[str, Json]]:
    def delta(d: Json) -> tuple[str, Json]:
        return "content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}

    if block["type"] == "thinking":  # as the API streams it: empty start, text deltas, the signature last
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [delta({"type": "thinking_delta", "thinking": c}) for c in _chunks(block["thinking"], 3)]
        deltas.append(delta({"type": "signature_delta", "signature": sign(model, block["thinking"])}))
    elif block["type"] == "redacted_thinking":  # arrives whole in its start event
        start = {"type": "redacted_thinking", "data": sealed(model, block["secret"])}
        deltas = []
    elif block["type"] == "tool_use":
        start = {"type": "tool_use", "id": block.get("id") or tool_id, "name": block["name"], "input": {}}
        deltas = [
            delta({"type": "input_json_delta", "partial_json": c}) for c in _chunks(json.dumps(block["input"]), 2)
        ]
    elif block["type"] == "server_tool_use":  # the API streams its own call's input like a tool_use's
        start = {"type": "server_tool_use", "id": block["id"], "name": block["name"], "input": {}}
        deltas = [delta({"type": "input_json_delta", "partial_json": json.dumps(block["input"])})]
    elif block["type"].endswith("_tool_result"):  # arrives whole in its start event
        start, deltas = block, []
    else:
        start = {"type": "text", "text": ""}
        deltas = [delta({"type": "text_delta", "text": c}) for c in _chunks(block["text"], 3)]
    return [
        ("content_block_start", {"type": "content_block_start", "index": i, "content_block": start}),
        *deltas,
        ("content_block_stop", {"type": "content_block_stop", "index": i}),
    ]


def estimate_input(body: Json) -> int:
    return sum(len(ident) for ident, _ in _segments(body)) // 4


def message_events(
    blocks: list[Json], stop_reason: str | None, model: str, n: int, usage: Json
) -> list[tuple[str, Json]]:
    """A complete reply to request number `n`: message_start, ping, blocks, message_delta, message_stop."""
    content = [e for i, b in enumerate(blocks) for e in _block_events(i, b, f"toolu_fake_{n}_{i}", model)]
    stop = stop_reason or ("tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn")
    msg = {"id": f"msg_fake_{n}", "type": "message", "role": "assistant", "model": model, "content": []}
    msg |= {"stop_reason": None, "stop_sequence": None, "usage": usage | {"output_tokens": 1}}
    end = {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}}
    final: Json = {"output_tokens": usage["output_tokens"]}
    served = [b["name"] for b in blocks if b["type"] == "server_tool_use"]
    if served:  # the API counts the searches and fetches it ran, billed per use
        final["server_tool_use"] = {
            "web_search_requests": served.count("web_search"),
            "web_fetch_requests": served.count("web_fetch"),
        }
    return [
        ("message_start", {"type": "message_start", "message": msg}),
        ("ping", {"type": "ping"}),
        *content,
        ("message_delta", end | {"usage": final}),
        ("message_stop", {"type": "message_stop"}),
    ]
