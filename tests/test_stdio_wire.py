"""stdio_wire without a process: framing in linear time under a cap, and an answer for every broken reply."""

from __future__ import annotations

import json
import tracemalloc
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import mcp.types as types

    from sprout_agent.mcp.transports.framing import LineSplitter, Oversized
    from sprout_agent.mcp.transports.stdio_wire import Requests


CHUNK = b"x" * 65536


def lines_of(splitter: LineSplitter, *chunks: bytes) -> list[bytes | Oversized]:
    return [line for chunk in chunks for line in splitter.feed(chunk)]


def open_requests(*ids: int, method: str = "tools/call") -> Requests:
    import mcp.types as types

    from sprout_agent.mcp.transports.stdio_wire import Requests

    requests = Requests()
    for request_id in ids:
        requests.sent(types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method, params={}))
    return requests


def answer(request_id: object, text: str = "ok", **fields: Any) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}, **fields}
    return json.dumps(message).encode()


def error_text(message: types.JSONRPCMessage | None) -> str:
    import mcp.types as types

    assert isinstance(message, types.JSONRPCError), message
    return message.error.message


def test_lines_split_across_chunks_and_several_in_one_chunk_come_back_whole() -> None:
    from sprout_agent.mcp.transports.framing import LineSplitter

    splitter = LineSplitter()
    assert lines_of(splitter, b'{"a":', b'1}\n{"b"', b":2}\n\n{", b'"c":3}\n') == [
        b'{"a":1}',
        b'{"b":2}',
        b"",
        b'{"c":3}',
    ]


def test_a_100_mb_line_is_counted_not_kept_and_the_next_line_reads_whole() -> None:
    from sprout_agent.mcp.transports.framing import EDGE_BYTES, MAX_MESSAGE_BYTES, LineSplitter, Oversized

    # Was quadratic: the buffer was joined to every chunk (77 s for this line). Now each chunk is looked at
    # once, and past the cap only the edges stay: the splitter never holds more than the cap.
    splitter = LineSplitter()
    chunks = 100 * 1024 * 1024 // len(CHUNK)
    tracemalloc.start()
    try:
        seen = [line for _ in range(chunks) for line in splitter.feed(CHUNK)]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seen == [] and peak < MAX_MESSAGE_BYTES + 1024 * 1024
    (oversized, following) = lines_of(splitter, b"END\nnext\n")
    assert following == b"next"
    assert isinstance(oversized, Oversized) and oversized.size == chunks * len(CHUNK) + 3
    assert oversized.head == b"x" * EDGE_BYTES and oversized.tail.endswith(b"xEND")


def test_a_line_of_exactly_the_cap_is_kept() -> None:
    from sprout_agent.mcp.transports.framing import LineSplitter, Oversized

    splitter = LineSplitter(limit=10)
    assert lines_of(splitter, b"12345", b"67890\n", b"12345678901\n") == [
        b"1234567890",
        Oversized(11, b"12345678901", b"12345678901"),
    ]


def oversized(line: bytes) -> Oversized:
    from sprout_agent.mcp.transports.framing import LineSplitter, Oversized

    (cut,) = lines_of(LineSplitter(limit=100), line + b"\n")
    assert isinstance(cut, Oversized)
    return cut


@pytest.mark.parametrize("id_last", [False, True], ids=["id first", "id last"])
def test_an_oversized_answer_becomes_a_too_large_error_for_its_call(id_last: bool) -> None:
    import mcp.types as types

    from sprout_agent.mcp.transports.framing import MAX_MESSAGE_BYTES
    from sprout_agent.mcp.transports.stdio_wire import read_message

    body = {"result": {"content": [{"type": "text", "text": "y" * 500}]}}
    message = {**body, "jsonrpc": "2.0", "id": 7} if id_last else {"jsonrpc": "2.0", "id": 7, **body}
    line = json.dumps(message).encode()
    requests = open_requests(7)
    reply = read_message(oversized(line), requests, [])
    assert error_text(reply) == f"result too large: {len(line)} bytes, limit {MAX_MESSAGE_BYTES}"
    assert isinstance(reply, types.JSONRPCError) and reply.id == 7 and requests.find(7) is None


def test_an_oversized_message_that_answers_no_open_request_ends_the_server() -> None:
    from sprout_agent.mcp.transports.stdio_wire import Fatal, read_message

    # An id inside the result is not taken for the answer's: only an open request's id at an edge counts.
    line = json.dumps({"result": {"id": 3, "text": "y" * 500}}).encode()
    with pytest.raises(Fatal, match=r"sent a \d+-byte message .* answers no open request"):
        read_message(oversized(line), open_requests(7), [])


def test_a_reply_with_a_wrong_jsonrpc_version_is_an_error_for_its_call_not_a_hang() -> None:
    from sprout_agent.mcp.transports.stdio_wire import read_message

    reply = read_message(answer(4, jsonrpc="1.0"), open_requests(4), [])
    assert error_text(reply) == 'the server\'s answer is not valid JSON-RPC: "jsonrpc" is "1.0", not "2.0"'


def test_a_reply_with_a_lone_surrogate_is_an_error_for_its_call_not_a_hang() -> None:
    import mcp.types as types

    from sprout_agent.mcp.transports.stdio_wire import read_message

    line = answer("5", text="half a pair: \ud800")  # json.dumps writes it as the escape "\ud800"
    reply = read_message(line, open_requests(5), [])
    assert isinstance(reply, types.JSONRPCError) and reply.id == 5  # matched like the SDK matches: 5 == "5"
    assert "lone surrogate" in error_text(reply)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"not json at all", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (json.dumps({"jsonrpc": "1.0", "result": {}}).encode(), "answers no open request"),
        (answer(99, jsonrpc="1.0"), "answers no open request"),
        (json.dumps({"jsonrpc": "1.0", "id": 1, "method": "roots/list"}).encode(), "answers no open request"),
    ],
    ids=["not json", "not an object", "no id", "unknown id", "broken request"],
)
def test_a_broken_message_whose_id_cannot_be_read_ends_the_server_with_the_reason(line: bytes, reason: str) -> None:
    from sprout_agent.mcp.transports.stdio_wire import Fatal, read_message

    with pytest.raises(Fatal, match=reason):
        read_message(line, open_requests(1), [])


def test_a_broken_notification_is_dropped_because_it_answers_nothing() -> None:
    from sprout_agent.mcp.transports.stdio_wire import read_message

    line = json.dumps({"jsonrpc": "1.0", "method": "notifications/message", "params": {}}).encode()
    assert read_message(line, open_requests(1), []) is None


def test_a_cancelled_request_is_no_longer_open() -> None:
    import mcp.types as types

    from sprout_agent.mcp.transports.stdio_wire import Fatal, read_message

    requests = open_requests(2)
    params = {"requestId": 2}
    requests.sent(types.JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params=params))
    with pytest.raises(Fatal):
        read_message(answer(2, jsonrpc="1.0"), requests, [])


def test_a_tool_with_an_invalid_input_schema_is_dropped_from_its_page_with_the_reason() -> None:
    import mcp.types as types

    from sprout_agent.mcp.transports.stdio_wire import read_message

    tools = [{"name": "good", "inputSchema": {"type": "object"}}, {"name": "bad", "inputSchema": {"type": "string"}}]
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}).encode()
    skipped: list[str] = []
    reply = read_message(line, open_requests(1, method="tools/list"), skipped)
    assert isinstance(reply, types.JSONRPCResponse)
    assert [tool["name"] for tool in reply.result["tools"]] == ["good"]
    assert skipped == ["skipped tool 'bad': invalid inputSchema.type: Input should be 'object'"]


def test_a_line_fed_in_two_byte_reads_is_held_at_about_its_size_not_per_piece() -> None:
    from sprout_agent.mcp.transports.framing import LineSplitter

    # Each tiny read was kept as its own bytes object (~35 bytes of object per 2 bytes of line).
    splitter = LineSplitter()
    size = 256 * 1024  # 2 bytes a read: kept per piece, it would be held ~20 times over
    tracemalloc.start()
    try:
        seen = [line for _ in range(size // 2) for line in splitter.feed(b"ab")]
        seen += list(splitter.feed(b"\n"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seen == [b"ab" * (size // 2)] and peak < 3 * size
