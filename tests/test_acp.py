"""`sprout-agent acp` through the official ACP Python SDK as the editor: turns, tools, cancel, sessions.

The server runs in this process (tests/acp_pipes.py's `sdk_agent`: the SDK's own connection over two pipes), with
the built-in servers for tools; a hook shown as a `think` call is the session's events through the translator.
What only a process shows is marked e2e: a real client over a real `sprout-agent acp`, the cancel reaching an MCP
server process, one server process per session, the editor's permission answers through the SDK's callback.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.core.limits import Limits
from sprout_agent.faces.acp.session_template import AcpSetup
from tests.acp_harness import EditorClient, acp_agent, statuses, stdio_server, texts
from tests.acp_pipes import sdk_agent
from tests.fake_anthropic import FakeAnthropic, Step, hang, reply, tool_use
from tests.harness import agent_env, assert_history_valid, read_log, result_text, tool_results, wait_until, write_config
from tests.loop_doubles import SESSION_ID, MemoryHost, answers, build_loop, default_server, server
from tests.loop_doubles import reply as model_reply

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def editor(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake: FakeAnthropic | None,
    client: EditorClient,
    env: dict[str, str] | None = None,
    template: Options | None = None,
) -> AsyncIterator[Any]:
    """The SDK's connection to the server in this process, set up as `acp_agent` sets up the process: the
    environment of `agent_env` (the fake API, no built-in servers unless `env` says), transcripts under tmp_path."""
    for name, value in agent_env(tmp_path, fake, env).items():
        monkeypatch.setenv(name, value)
    locations = Locations(None, tmp_path / "data" / "sessions", tmp_path / "data", None)
    async with sdk_agent(client, AcpSetup(template or Options(), locations)) as conn:
        yield conn


async def open_session(conn: Any, cwd: Path, *servers: Any) -> str:
    from acp import PROTOCOL_VERSION

    await conn.initialize(protocol_version=PROTOCOL_VERSION)
    session = await conn.new_session(cwd=str(cwd), mcp_servers=list(servers))
    return session.session_id


async def test_initialize_answers_version_1_with_our_capabilities(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp import PROTOCOL_VERSION

    client = EditorClient()  # how fast it answers is scripts/bench's business (group acp)
    async with editor(tmp_path, monkeypatch, None, client) as conn:
        answer = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        assert answer.protocol_version == 1
        assert answer.agent_info is not None and answer.agent_info.name == "sprout-agent"
        capabilities = answer.agent_capabilities
        assert capabilities is not None and capabilities.load_session is True
        assert capabilities.prompt_capabilities is not None and capabilities.prompt_capabilities.embedded_context
        # A client asking for the version 2 draft still gets 1: we never claim what we do not speak.
        assert (await conn.initialize(protocol_version=2)).protocol_version == 1


@pytest.mark.e2e  # the real client over a real `sprout-agent acp`, with a real MCP server: all of it as shipped
async def test_a_multi_tool_prompt_streams_every_update_in_order(tmp_path: Path) -> None:
    from acp import text_block

    log = tmp_path / "calls.jsonl"
    script: list[Step] = [
        reply("Looking.", tool_use("fake__echo", {"text": "one"}, id="t1"), tool_use("fake__fail", id="t2")),
        reply("All **done**."),
    ]
    client = EditorClient()
    with FakeAnthropic(script) as fake:
        async with acp_agent(tmp_path, fake, client) as (conn, _):
            session_id = await open_session(conn, tmp_path, stdio_server("fake", log=str(log)))
            result = await conn.prompt(session_id=session_id, prompt=[text_block("go")])
    assert result.stop_reason == "end_turn"
    # The model picker's growth (tests/test_acp_pickers.py) arrives whenever the runtime is up: not a turn's.
    updates = [u for u in client.of(session_id) if u.session_update != "config_option_update"]
    # The turn's diff comes last (docs/rewind.md): the fake server's log, written in the working directory.
    changes = updates.pop()
    assert (changes.tool_call_id, changes.title) == ("turn-1-changes", "1 file changed: +2 −0")
    assert updates[0].session_update == "available_commands_update"
    names = {c.name for c in updates[0].available_commands}
    assert {"compact", "cost", "context"} <= names
    kinds = [u.session_update for u in updates[1:]]
    assert kinds[0] == "agent_message_chunk"
    assert kinds.count("usage_update") == 2  # one per model response
    assert texts(updates) == "Looking.All **done**."
    assert statuses(updates, "t1") == ["pending", "in_progress", "completed"]
    assert statuses(updates, "t2") == ["pending", "in_progress", "failed"]
    start = next(u for u in updates if u.session_update == "tool_call" and u.tool_call_id == "t1")
    assert start.title == 'fake: echo {"text": "one"}' and start.kind == "other"
    assert start.raw_input == {"text": "one"}
    done = [u for u in updates if u.session_update == "tool_call_update" and u.tool_call_id == "t1"][-1]
    assert done.content[0].content.text == "one"
    failed = [u for u in updates if u.session_update == "tool_call_update" and u.tool_call_id == "t2"][-1]
    assert "failed on purpose" in failed.content[0].content.text
    # Every tool update precedes the second response's text; a usage update closes each response.
    last_tool = max(i for i, k in enumerate(kinds) if k == "tool_call_update")
    assert texts(updates[1 + last_tool :]) == "All **done**."
    assert kinds[-1] == "usage_update" and kinds.index("usage_update") < kinds.index("tool_call")
    usage = [u for u in updates if u.session_update == "usage_update"]
    assert usage[-1].used > 0 and usage[-1].size >= usage[-1].used and usage[-1].cost.currency == "USD"
    assert sorted(entry["tool"] for entry in read_log(log)) == ["echo", "fail"]  # run at once: either may log first


@pytest.mark.e2e  # the dev server's bash runs a shell, the checkpoints git, the sandbox probe bubblewrap
async def test_builtin_tools_show_locations_diffs_and_the_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from acp import text_block

    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    todos = [{"content": "Edit notes", "status": "completed"}, {"content": "Check", "status": "in_progress"}]
    script: list[Step] = [
        reply(tool_use("dev__read", {"file_path": "notes.txt"}, id="r")),
        reply(tool_use("dev__edit", {"file_path": "notes.txt", "old_string": "beta", "new_string": "gamma"}, id="e")),
        reply(tool_use("todo__todo_write", {"todos": todos}, id="p")),
        reply(tool_use("dev__bash", {"command": "echo hi"}, id="b")),
        reply("Edited."),
    ]
    client = EditorClient()
    env = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev,todo"}
    with FakeAnthropic(script) as fake:
        async with editor(tmp_path, monkeypatch, fake, client, env) as conn:
            session_id = await open_session(conn, tmp_path)
            result = await conn.prompt(session_id=session_id, prompt=[text_block("edit it")])
    assert result.stop_reason == "end_turn"
    assert (tmp_path / "notes.txt").read_text() == "alpha\ngamma\n"
    updates = client.of(session_id)
    calls = {u.tool_call_id: u for u in updates if u.session_update == "tool_call"}
    path = str(tmp_path / "notes.txt")
    assert (calls["r"].kind, calls["r"].title, calls["r"].locations[0].path) == ("read", "Read notes.txt", path)
    assert (calls["e"].kind, calls["e"].title) == ("edit", "Edit notes.txt")
    assert (calls["b"].kind, calls["b"].title) == ("execute", "echo hi")
    assert calls["p"].kind == "think"
    edited = [u for u in updates if u.session_update == "tool_call_update" and u.tool_call_id == "e"][-1]
    assert edited.status == "completed"
    diff = edited.content[0]
    # The edit's hunk, with its context lines: the dev server's own diff read back into its two sides.
    assert (diff.type, diff.path, diff.old_text, diff.new_text) == ("diff", path, "alpha\nbeta\n", "alpha\ngamma\n")
    ran = [u for u in updates if u.session_update == "tool_call_update" and u.tool_call_id == "b"][-1]
    assert "hi" in ran.content[0].content.text
    plan = [u for u in updates if u.session_update == "plan"]
    assert [(e.content, e.status) for e in plan[-1].entries] == [("Edit notes", "completed"), ("Check", "in_progress")]
    assert statuses(updates, "e") == ["pending", "in_progress", "completed"]
    # The turn's diff from its checkpoints (docs/rewind.md): what every call changed, a command's changes too.
    turn = calls["turn-1-changes"]
    assert (turn.kind, turn.status, turn.title) == ("edit", "completed", "1 file changed: +1 −1")
    assert [(d.path, d.old_text, d.new_text) for d in turn.content] == [(path, "alpha\nbeta\n", "alpha\ngamma\n")]


@pytest.mark.e2e  # the cancel reaches a call running in an MCP server process
@pytest.mark.slow
async def test_cancel_mid_tool_answers_cancelled_and_keeps_history_valid(tmp_path: Path) -> None:
    from acp import text_block

    script: list[Step] = [reply(tool_use("fake__slow", {"seconds": 30}, id="s")), reply("after cancel")]
    client = EditorClient()
    with FakeAnthropic(script) as fake:
        async with acp_agent(tmp_path, fake, client) as (conn, _):
            session_id = await open_session(conn, tmp_path, stdio_server("fake"))
            async with anyio.create_task_group() as group:
                answers: list[Any] = []

                async def run() -> None:
                    answers.append(await conn.prompt(session_id=session_id, prompt=[text_block("wait")]))

                group.start_soon(run)
                await client.wait_for(lambda u: u.session_update == "tool_call_update" and u.status == "in_progress")
                await conn.cancel(session_id=session_id)  # the tool would run 30 s: "cancelled" is the cancel
            assert answers[0].stop_reason == "cancelled"
            seen = len(client.of(session_id))
            assert statuses(client.of(session_id), "s")[-1] == "failed"
            again = await conn.prompt(session_id=session_id, prompt=[text_block("still there?")])
    assert again.stop_reason == "end_turn"
    later = client.of(session_id)[seen:]
    assert all(getattr(u, "tool_call_id", None) != "s" for u in later), "an update of the cancelled turn came late"
    assert texts(later) == "after cancel"
    body = fake.requests[-1].body
    assert_history_valid(body)
    assert "interrupted" in result_text(tool_results(body)[-1])


async def test_a_second_prompt_on_a_busy_session_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from acp import RequestError, text_block

    client = EditorClient()
    with FakeAnthropic([hang()]) as fake:  # the first prompt's model call never answers: the session stays busy
        async with editor(tmp_path, monkeypatch, fake, client) as conn:
            session_id = await open_session(conn, tmp_path)
            answers: list[Any] = []
            async with anyio.create_task_group() as group:

                async def run() -> None:
                    answers.append(await conn.prompt(session_id=session_id, prompt=[text_block("one")]))

                group.start_soon(run)
                await wait_until(lambda: len(fake.requests) == 1, "the first prompt's model call")
                with pytest.raises(RequestError) as refused:
                    await conn.prompt(session_id=session_id, prompt=[text_block("two")])
                assert refused.value.code == -32602
                await conn.cancel(session_id=session_id)
    assert answers[0].stop_reason == "cancelled"
    assert len(fake.requests) == 1  # the refused prompt never reached the model


@pytest.mark.e2e  # each session starts its own MCP server process
@pytest.mark.slow
async def test_sessions_run_at_once_each_with_its_own_servers(tmp_path: Path) -> None:
    from acp import PROTOCOL_VERSION, text_block

    logs = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]

    def step(body: dict[str, Any]) -> Any:
        first = body["messages"][0]["content"][0]["text"]
        if body["messages"][-1]["role"] == "user" and body["messages"][-1]["content"][0].get("type") == "text":
            return reply(tool_use("fake__echo", {"text": first}))
        return reply(f"done {first}")

    client = EditorClient()
    config = write_config(tmp_path, {"fake": {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]}})
    steps: list[Step] = [step] * 4
    with FakeAnthropic(steps) as fake:
        async with acp_agent(tmp_path, fake, client, "--config", str(config)) as (conn, _):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            ids = []
            for log in logs:  # the client's "fake" replaces the config's broken one
                session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[stdio_server("fake", log=str(log))])
                ids.append(session.session_id)
            results: dict[str, str] = {}
            async with anyio.create_task_group() as group:
                for index, session_id in enumerate(ids):

                    async def run(session_id: str = session_id, text: str = f"s{index}") -> None:
                        answer = await conn.prompt(session_id=session_id, prompt=[text_block(text)])
                        results[session_id] = answer.stop_reason

                    group.start_soon(run)
    assert set(results.values()) == {"end_turn"}
    assert texts(client.of(ids[0])) == "done s0" and texts(client.of(ids[1])) == "done s1"
    first, second = read_log(logs[0]), read_log(logs[1])
    assert [e["arguments"] for e in first] == [{"text": "s0"}] and [e["arguments"] for e in second] == [{"text": "s1"}]
    assert first[0]["pid"] != second[0]["pid"]


@pytest.mark.e2e
async def test_an_unreachable_http_server_fails_alone_with_a_notice_and_relative_cwd_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp import PROTOCOL_VERSION, RequestError, text_block
    from acp.schema import HttpMcpServer

    client = EditorClient()
    with FakeAnthropic([reply("hello")]) as fake:
        async with editor(tmp_path, monkeypatch, fake, client) as conn:
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            with pytest.raises(RequestError) as relative:
                await conn.new_session(cwd="relative/dir", mcp_servers=[])
            assert relative.value.code == -32602
            remote = HttpMcpServer(type="http", name="remote", url="http://127.0.0.1:9/mcp", headers=[])
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[remote])
            result = await conn.prompt(session_id=session.session_id, prompt=[text_block("hi")])
    assert result.stop_reason == "end_turn"
    thoughts = [u.content.text for u in client.of(session.session_id, "agent_thought_chunk")]
    assert any("remote" in t and "cannot reach" in t for t in thoughts), thoughts


@pytest.mark.e2e
async def test_load_replays_the_stored_conversation_before_answering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp import PROTOCOL_VERSION, RequestError, text_block

    script: list[Step] = [
        reply("Echo first.", tool_use("dev__bash", {"command": "echo kept"}, id="k")),
        reply("First answer."),
        reply("Second."),
    ]
    first, second = EditorClient(), EditorClient()
    env = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev"}
    with FakeAnthropic(script) as fake:
        async with editor(tmp_path, monkeypatch, fake, first, env) as conn:
            session_id = await open_session(conn, tmp_path)
            await conn.prompt(session_id=session_id, prompt=[text_block("remember this")])
        kept = result_text(tool_results(fake.requests[1].body)[0])  # what the model read of the call
        async with editor(tmp_path, monkeypatch, fake, second, env) as conn:  # a new server: only the store remembers
            answer = await conn.initialize(protocol_version=PROTOCOL_VERSION)
            assert answer.agent_capabilities.load_session is True
            await conn.load_session(session_id=session_id, cwd=str(tmp_path), mcp_servers=[])
            replayed = list(second.of(session_id))  # everything that arrived before the response
            result = await conn.prompt(session_id=session_id, prompt=[text_block("and now?")])
            with pytest.raises(RequestError) as missing:
                await conn.load_session(session_id="0" * 32, cwd=str(tmp_path), mcp_servers=[])
    assert missing.value.code == -32002
    kinds = [u.session_update for u in replayed]
    assert kinds[:3] == ["user_message_chunk", "agent_message_chunk", "tool_call"]
    assert replayed[0].content.text == "remember this"
    call = replayed[2]
    assert (call.tool_call_id, call.status, call.content[0].content.text) == ("k", "completed", kept)
    assert kept.startswith("kept\n")
    assert texts(replayed) == "Echo first.First answer."
    assert result.stop_reason == "end_turn"
    body = fake.requests[-1].body  # the resumed conversation went to the model
    assert body["messages"][0]["content"][0]["text"] == "remember this"
    assert_history_valid(body)


@pytest.mark.e2e  # the real client's permission callback, over a real process
@pytest.mark.slow
async def test_permission_ask_goes_to_the_editor(tmp_path: Path) -> None:
    from acp import text_block

    log = tmp_path / "calls.jsonl"
    script: list[Step] = [
        reply(tool_use("fake__echo", {"text": "a"}, id="p1")),
        reply(tool_use("fake__add", {"a": 1, "b": 2}, id="p2")),
        reply(tool_use("fake__echo", {"text": "b"}, id="p3")),
        reply(tool_use("fake__echo", {"text": "c"}, id="p4")),
        reply(tool_use("fake__add", {"a": 2, "b": 2}, id="p5")),
        reply("finished"),
    ]
    # allow once; cancelled (a rejection); always allow echo; (echo runs unasked); reject add
    client = EditorClient(["allow_once", None, "allow_always", "reject_once"])
    with FakeAnthropic(script) as fake:
        async with acp_agent(tmp_path, fake, client, "--permission-mode", "ask") as (conn, _):
            session_id = await open_session(conn, tmp_path, stdio_server("fake", log=str(log)))
            result = await conn.prompt(session_id=session_id, prompt=[text_block("go")])
    assert result.stop_reason == "end_turn"
    asked = [tool_call.tool_call_id for tool_call, _ in client.permission_requests]
    assert asked == ["p1", "p2", "p3", "p5"]
    tool_call, options = client.permission_requests[0]
    assert {o.kind for o in options} == {"allow_once", "allow_always", "reject_once"}
    assert tool_call.title == 'fake: echo {"text": "a"}' and tool_call.kind == "other"
    updates = client.of(session_id)
    assert statuses(updates, "p1") == ["pending", "in_progress", "completed"]
    assert statuses(updates, "p2") == ["pending", "failed"]
    assert statuses(updates, "p5") == ["pending", "failed"]
    assert [(e["tool"], e["arguments"]) for e in read_log(log)] == [
        ("echo", {"text": "a"}),
        ("echo", {"text": "b"}),
        ("echo", {"text": "c"}),
    ]
    results = tool_results(fake.requests[-1].body)
    assert "denied by the user" in result_text(results[1]) and results[1]["is_error"]


async def test_a_hook_objection_is_shown_as_a_think_tool_call(tmp_path: Path) -> None:
    from sprout_agent.faces.acp.updates import Updates

    host = MemoryHost({"fake": {**default_server(), **server(_Stop=answers("Run the tests first."))}})
    loop = build_loop([model_reply("Done?"), model_reply("Tests pass. Done.")], host=host, hook_servers="fake")
    assert (await loop.turn("work")).stop_reason == "end_turn"
    assert len(loop.model.requests) == 2
    sent: list[dict[str, Any]] = []
    translator = Updates(SESSION_ID, sent.append, str(tmp_path))  # what the ACP session renders the events into
    translator.begin()
    for event in loop.events:
        translator.emit(event)
    translator.end()
    updates = [u["update"] for u in sent]
    thinks = [u for u in updates if u["sessionUpdate"] == "tool_call" and u["kind"] == "think"]
    assert len(thinks) == 1 and "_Stop" in thinks[0]["title"] and thinks[0]["status"] == "completed"
    assert thinks[0]["content"][0]["content"]["text"] == "Run the tests first."
    chunks = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(chunks) == "Done?Tests pass. Done."


async def test_slash_commands_run_as_prompts_without_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from acp import text_block

    client = EditorClient()
    with FakeAnthropic([reply("hello")]) as fake:
        async with editor(tmp_path, monkeypatch, fake, client) as conn:
            session_id = await open_session(conn, tmp_path)
            await conn.prompt(session_id=session_id, prompt=[text_block("hi")])
            seen = len(client.of(session_id))
            cost = await conn.prompt(session_id=session_id, prompt=[text_block("/cost")])
            cost_text = texts(client.of(session_id)[seen:])
            seen = len(client.of(session_id))
            context = await conn.prompt(session_id=session_id, prompt=[text_block("/context")])
            context_text = texts(client.of(session_id)[seen:])
    assert cost.stop_reason == context.stop_reason == "end_turn"
    assert "cost $" in cost_text
    assert context_text.startswith("context: ") and "2 messages" in context_text  # counted by the API, as the REPL's
    assert [r.path for r in fake.requests if r.path == "/v1/messages"] == ["/v1/messages"]  # the model: once


async def test_stop_reasons_map_to_acp_and_an_api_failure_is_an_error_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp import RequestError, text_block

    from tests.fake_anthropic import error

    script: list[Step] = [
        reply("cut short", stop_reason="max_tokens"),
        reply("no", stop_reason="refusal"),
        reply(tool_use("todo__todo_read", {})),
        error(400, message="bad request on purpose"),
        reply("recovered"),
    ]
    client = EditorClient()
    env = {"SPROUT_AGENT_BUILTIN_SERVERS": "todo"}
    with FakeAnthropic(script) as fake:
        async with editor(tmp_path, monkeypatch, fake, client, env, Options(limits=Limits(max_requests=1))) as conn:
            session_id = await open_session(conn, tmp_path)

            async def ask(text: str) -> str:
                return (await conn.prompt(session_id=session_id, prompt=[text_block(text)])).stop_reason

            assert await ask("one") == "max_tokens"
            assert await ask("two") == "refusal"
            assert await ask("three") == "max_turn_requests"
            with pytest.raises(RequestError) as failed:
                await ask("four")
            assert failed.value.code == -32603 and "bad request on purpose" in str(failed.value.data or failed.value)
            assert await ask("five") == "end_turn"
    assert_history_valid(fake.requests[-1].body)


async def test_a_projects_custom_command_is_announced_and_runs_as_its_expanded_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp import text_block

    commands = tmp_path / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "fix.md").write_text("---\ndescription: Fix an issue\nargument-hint: NUMBER\n---\nFix issue #$1.\n")
    client = EditorClient()
    with FakeAnthropic([reply("Fixed.")]) as fake:
        async with editor(tmp_path, monkeypatch, fake, client) as conn:
            session_id = await open_session(conn, tmp_path)
            result = await conn.prompt(session_id=session_id, prompt=[text_block("/fix 42")])
    assert result.stop_reason == "end_turn"
    announced = next(u for u in client.of(session_id) if u.session_update == "available_commands_update")
    fix = next(c for c in announced.available_commands if c.name == "fix")
    assert fix.description == "Fix an issue" and fix.input is not None and fix.input.root.hint == "NUMBER"
    assert fake.requests[0].body["messages"][0]["content"][0]["text"].strip() == "Fix issue #42."
