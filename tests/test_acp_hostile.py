"""One malformed message never ends the ACP server: each gets the JSON-RPC error the spec names (or, as a
notification, nothing), and every other session goes on. In-process, over pipes (tests/acp_pipes.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sprout_agent.config.locations import Locations
from sprout_agent.faces.acp.lines import decode, encode
from sprout_agent.faces.acp.session_template import AcpSetup
from tests.acp_pipes import PipeClient, new_session, notification, pipe_agent, prompt_line, session_env
from tests.fake_anthropic import FakeAnthropic, hang, reply
from tests.harness import fake_server, wait_until

pytestmark = pytest.mark.anyio

INITIALIZE = {"protocolVersion": 1}


async def still_serving(client: PipeClient, ident: object = 999) -> None:
    assert (await client.request(ident, "initialize", INITIALIZE))["result"]["protocolVersion"] == 1


async def error_code(client: PipeClient, line: str | bytes, ident: object = None) -> int:
    await client.send(line)
    return (await client.answer(ident))["error"]["code"]


async def test_a_deeply_nested_line_is_a_parse_error_not_a_crash() -> None:
    async with pipe_agent() as client:
        assert await error_code(client, "[" * 100_000) == -32700
        assert await error_code(client, '{"jsonrpc": "2.0", "id": 1, "method": "x", "params": ' + "[" * 5000) == -32700
        await still_serving(client)


async def test_a_cancel_request_with_an_unhashable_id_is_ignored_not_a_crash() -> None:
    async with pipe_agent() as client:
        await client.send(
            notification("$/cancel_request", {"requestId": [1]}),
            notification("$/cancel_request", {"requestId": {"a": 1}}),
            notification("$/cancel_request", {"requestId": True}),
            notification("$/cancel_request", [1]),
        )
        await still_serving(client)
    assert [m.get("id") for m in client.messages] == [], "a notification got an answer"


async def test_a_lone_surrogate_in_an_id_or_a_session_id_is_echoed_escaped_not_a_crash() -> None:
    async with pipe_agent() as client:
        await client.send('{"jsonrpc": "2.0", "id": "\\ud800", "method": "nope", "params": {}}')
        assert (await client.answer("\ud800"))["error"]["code"] == -32601
        prompt = {"sessionId": "\ud800", "prompt": [{"type": "text", "text": "hi"}]}
        assert (await client.request(2, "session/prompt", prompt))["error"]["code"] == -32002
        await still_serving(client)
    assert all(b"\\ud800" in line for line in client.raw[:2])  # valid UTF-8 on the wire, the same id back


async def test_float_ids_are_answered_with_the_same_id_not_refused_with_null() -> None:
    """JSON-RPC 2.0 allows any number as an id; refusing it with a null id left the client nothing to match."""
    async with pipe_agent() as client:
        await still_serving(client, 1.5)
        await still_serving(client, -0.25)


async def test_numbers_that_are_not_json_are_parse_errors_never_echoed() -> None:
    """Python reads NaN, Infinity and 1e400 (as inf); echoed in an id they would make our own output invalid."""
    async with pipe_agent() as client:
        for number in ("NaN", "Infinity", "-Infinity", "1e400", "9" * 5000):
            line = f'{{"jsonrpc": "2.0", "id": {number}, "method": "initialize", "params": {{"protocolVersion": 1}}}}'
            assert await error_code(client, line) == -32700, number
        await still_serving(client)


async def test_bad_bytes_and_bad_shapes_get_the_named_error_and_the_server_stays_up(tmp_path: Path) -> None:
    async with pipe_agent() as client:
        assert (
            await error_code(client, b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "x": "\xff\xfe"}') == -32700
        )
        assert await error_code(client, "this is not json") == -32700
        assert await error_code(client, b'{"jsonrpc": "2.0", "id": 7, "method": "initialize"') == -32700
        assert await error_code(client, "[1, 2]") == -32600
        assert await error_code(client, '"just a string"') == -32600
        for bad_id in ("true", "{}", "[1]"):
            assert await error_code(client, f'{{"jsonrpc": "2.0", "id": {bad_id}, "method": "initialize"}}') == -32600
        assert await error_code(client, '{"jsonrpc": "1.0", "id": 3, "method": "initialize"}', 3) == -32600
        assert await error_code(client, '{"jsonrpc": "2.0", "id": 4, "method": 5}', 4) == -32600
        assert await error_code(client, '{"jsonrpc": "2.0", "id": 12, "params": {}}', 12) == -32600
        assert (await client.request(5, "session/fork", {}))["error"]["code"] == -32601
        for params in ([1], "x", 3):
            assert (await client.request(6, "initialize", params))["error"]["code"] == -32602
        for version in ("1", 1.0, True, -1, None):
            assert (await client.request(7, "initialize", {"protocolVersion": version}))["error"]["code"] == -32602
        for cwd in (None, 3, ["/"], "rel", "/tmp/\x00x", str(tmp_path / "missing")):
            answer = await client.request(8, "session/new", {"cwd": cwd, "mcpServers": []})
            assert answer["error"]["code"] == -32602, cwd
        for servers in ("x", [1], [{"name": "x"}], [{"name": "x", "command": "c", "args": [1]}], [{"name": {}}]):
            answer = await client.request(9, "session/new", {"cwd": str(tmp_path), "mcpServers": servers})
            assert answer["error"]["code"] == -32602, servers
        for session_id in (None, 3, ["a"], {"a": 1}, "nope"):
            prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}
            assert (await client.request(10, "session/prompt", prompt))["error"]["code"] in (-32602, -32002)
        assert (await client.request(11, "session/load", {"sessionId": ["a"], "cwd": "/"}))["error"]["code"] in (
            -32601,
            -32602,
        )
        await client.send(notification("_sprout/unknown_notification", {}), notification("initialize", "odd"))
        await still_serving(client)


async def test_a_client_server_that_cannot_be_executed_is_refused_at_session_new(tmp_path: Path) -> None:
    """It used to be accepted, and then the session never started: every prompt got an internal error."""
    true = {"name": "s", "command": "/bin/true"}
    unusable = [
        {**true, "env": [{"name": "A=B", "value": "1"}]},
        {**true, "env": [{"name": "", "value": "1"}]},
        {**true, "env": [{"name": "A", "value": "\x00"}]},
        {**true, "command": "/bin/tr\x00ue"},
        {**true, "args": ["\ud800"]},
    ]
    async with pipe_agent() as client:
        for number, server in enumerate(unusable):
            answer = await client.request(number, "session/new", {"cwd": str(tmp_path), "mcpServers": [server]})
            assert answer["error"]["code"] == -32602, server


async def test_a_malformed_session_cancel_prints_no_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    async with pipe_agent() as client:
        await client.send(*(notification("session/cancel", {"sessionId": s}) for s in ([1], {"a": 1}, 3, None, "nope")))
        await client.send(notification("session/cancel", {}), notification("session/cancel", "x"))
        await still_serving(client)
    assert capsys.readouterr().err == ""
    assert [m for m in client.messages if "id" in m] == [], "a notification got an answer"


async def test_a_line_over_the_cap_is_answered_once_and_the_next_line_is_served() -> None:
    async with pipe_agent(max_line_bytes=1000) as client:
        big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"pad": "x" * 200_000}})
        assert await error_code(client, big) == -32600
        assert await error_code(client, "y" * 1001) == -32600  # over by one byte, in one read
        await still_serving(client)
        assert [m for m in client.messages if "id" in m] == []  # the 200 kB (read in pieces) were one line: one answer
        await client.send_raw(b"z" * 3000)  # a last line over the cap, ended by end-of-input, not a newline
        client.close_input()
        assert (await client.answer(None))["error"]["code"] == -32600


async def test_the_answer_to_a_last_line_without_a_newline_is_not_lost() -> None:
    """End-of-input cancelled the writer just after it was handed that answer, and the answer went with it."""
    async with pipe_agent() as client:
        await client.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": "nope"}')
        client.close_input()
        assert (await client.answer(1))["error"]["code"] == -32601


async def test_a_cancel_right_behind_its_prompt_cancels_it_before_the_model_is_called(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cancel used to be read before the prompt's task started, found no turn, and was dropped."""
    with FakeAnthropic([reply("the second prompt's answer")]) as fake:
        session_env(monkeypatch, fake)
        async with pipe_agent() as client:
            session_id = await new_session(client, tmp_path)  # its runtime may still be starting: the prompt waits
            await client.send(
                prompt_line(1, session_id, "go"), notification("session/cancel", {"sessionId": session_id})
            )
            assert (await client.answer(1))["result"] == {"stopReason": "cancelled"}
            assert fake.requests == []
            again = await client.request(2, "session/prompt", json.loads(prompt_line(2, session_id, "again"))["params"])
    assert again["result"] == {"stopReason": "end_turn"}
    assert len(fake.requests) == 1


async def test_a_cancel_request_right_behind_its_request_cancels_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeAnthropic([reply("after the cancel")]) as fake:
        session_env(monkeypatch, fake)
        async with pipe_agent() as client:
            session_id = await new_session(client, tmp_path)
            await client.send(prompt_line(1, session_id, "go"), notification("$/cancel_request", {"requestId": 1}))
            assert (await client.answer(1))["error"]["code"] == -32800
            answer = await client.request(2, "session/prompt", json.loads(prompt_line(2, session_id, "x"))["params"])
    assert answer["result"] == {"stopReason": "end_turn"}  # the cancelled prompt left the session free
    assert len(fake.requests) == 1


async def test_a_prompt_and_a_cancel_pipelined_behind_session_load_find_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = AcpSetup(locations=Locations(None, tmp_path / "sessions", tmp_path / "data", None))
    with FakeAnthropic([reply("first"), reply("after the load")]) as fake:
        session_env(monkeypatch, fake)
        async with pipe_agent(options) as client:
            session_id = await new_session(client, tmp_path)
            await client.send(prompt_line(1, session_id, "go"))
            assert (await client.answer(1))["result"] == {"stopReason": "end_turn"}
        load = {"sessionId": session_id, "cwd": str(tmp_path), "mcpServers": []}
        async with pipe_agent(options) as client:
            await client.send(
                json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/load", "params": load}),
                prompt_line(2, session_id, "cancelled at once"),
                notification("session/cancel", {"sessionId": session_id}),
                prompt_line(3, session_id, "refused: the cancelled turn still holds the session"),
            )
            assert set((await client.answer(1))["result"]) <= {"_meta", "modes", "configOptions"}  # and no sessionId
            assert (await client.answer(2))["result"] == {"stopReason": "cancelled"}
            assert (await client.answer(3))["error"]["code"] == -32602
            again = await client.request(4, "session/prompt", json.loads(prompt_line(4, session_id, "x"))["params"])
    assert again["result"] == {"stopReason": "end_turn"}
    assert len(fake.requests) == 2


@pytest.mark.e2e  # the MCP server is a process (it exits before its slow imports)
async def test_a_prompt_for_a_session_still_being_created_waits_and_a_cancel_ends_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = fake_server(hang_on_start="1")  # never answers initialize: the session's runtime never opens
    entry = {"name": "slow", "command": server["command"], "args": server["args"]}
    entry["env"] = [{"name": k, "value": v} for k, v in server["env"].items()]
    with FakeAnthropic([]) as fake:
        session_env(monkeypatch, fake)
        async with pipe_agent() as client:
            created = await client.request(100, "session/new", {"cwd": str(tmp_path), "mcpServers": [entry]})
            session_id = created["result"]["sessionId"]
            await client.send(prompt_line(1, session_id, "go"))
            await still_serving(client)  # the prompt waits for the session; the server does not
            await client.send(notification("session/cancel", {"sessionId": session_id}))
            assert (await client.answer(1))["result"] == {"stopReason": "cancelled"}
    assert fake.requests == []


async def test_hostile_lines_during_a_prompt_leave_it_in_flight_and_cancellable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The unhashable cancel id and the deep nesting used to end the agent with the prompt unanswered."""
    with FakeAnthropic([hang()]) as fake:
        session_env(monkeypatch, fake)
        async with pipe_agent() as client:
            session_id = await new_session(client, tmp_path)
            await client.send(prompt_line(1, session_id, "wait"))
            await wait_until(lambda: len(fake.requests) == 1, "the model call")
            await client.send(notification("$/cancel_request", {"requestId": [1]}), "[" * 100_000)
            assert (await client.answer(None))["error"]["code"] == -32700
            await client.send('{"jsonrpc": "2.0", "id": NaN, "method": "initialize"}', b"\xff\n{")
            await still_serving(client)
            other = await new_session(client, tmp_path, ident=101)  # another session starts meanwhile
            assert other != session_id
            await client.send(notification("session/cancel", {"sessionId": session_id}))
            assert (await client.answer(1))["result"] == {"stopReason": "cancelled"}


async def test_a_lone_surrogate_in_the_prompt_reaches_the_model_as_a_replacement_character(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It used to fail the prompt with an internal error (and a traceback): the text has no UTF-8."""
    with FakeAnthropic([reply("ok")]) as fake:
        session_env(monkeypatch, fake)
        async with pipe_agent() as client:
            session_id = await new_session(client, tmp_path)
            await client.send(prompt_line(1, session_id, "a\ud800b"))
            assert (await client.answer(1))["result"] == {"stopReason": "end_turn"}
    assert "a\ufffdb" in json.dumps(fake.requests[0].body["messages"], ensure_ascii=False)


def test_what_cannot_be_json_is_refused_on_the_way_out_and_escaped_when_it_can() -> None:
    unencodable_messages: list[dict[str, object]] = [{"x": float("nan")}, {"x": {1, 2}}]
    for unencodable in unencodable_messages:
        with pytest.raises(ValueError):
            encode(unencodable)
    line = encode({"id": "\udc80", "text": "é"})
    assert b"\\udc80" in line and line.endswith(b"}\n")
    assert decode(line) == {"id": "\udc80", "text": "é"}
