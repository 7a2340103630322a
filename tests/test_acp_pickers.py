"""What Zed reads beyond turns: session modes (our permission modes), config options (the mode and the model
picker), `session/list` over the recorded sessions and `session/close`, through the official ACP SDK's client.

The server runs in this process (tests/acp_pipes.py); the permission mode and the model are checked by what the
agent does next (a write refused, the model the fake API was asked for), not by reading our own state."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from sprout_agent.config.options import Options
from sprout_agent.core.messages import Message, Text
from sprout_agent.core.permission_mode import PermissionMode
from sprout_agent.faces.acp import listing
from sprout_agent.session.store import SessionStore
from tests.acp_harness import EditorClient, stdio_server, texts
from tests.fake_anthropic import FakeAnthropic, Step, reply, tool_use
from tests.harness import pid_alive, read_log, tool_results, wait_until
from tests.test_acp import editor, open_session

pytestmark = pytest.mark.anyio

DEV = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev"}


async def test_new_session_offers_our_modes_and_a_model_picker_that_grows_to_the_known_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp import PROTOCOL_VERSION

    client = EditorClient()
    # Claude Code's `default` on the command line is shown as the mode that behaves the same: ours, ask.
    async with editor(
        tmp_path, monkeypatch, None, client, template=Options(permission_mode=PermissionMode.DEFAULT)
    ) as conn:
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        capabilities = init.agent_capabilities.session_capabilities
        assert capabilities.list is not None and capabilities.close is not None
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        assert session.modes.current_mode_id == "ask"
        assert [m.id for m in session.modes.available_modes] == ["ask", "acceptEdits", "read-only", "auto"]
        mode, model = (option for option in session.config_options)
        assert (mode.id, mode.category, mode.current_value) == ("mode", "mode", "ask")
        assert (model.id, model.category, model.type) == ("model", "model", "select")
        current = model.current_value
        assert model.options[0].value == current
        # Once the runtime is up, every model the anthropic SDK names joins the picker (one update).
        update = await client.wait_for(lambda u: u.session_update == "config_option_update")
        grown = update.config_options[1]
        values = [o.value for o in grown.options]
        assert values[0] == current and "claude-opus-4-8" in values and len(values) > len(model.options)
        assert not [v for v in values if v[-8:].isdigit()]  # dated snapshots stay out of the menu


async def test_a_mode_switched_from_the_editor_applies_to_the_next_call_and_is_announced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp import text_block
    from acp.exceptions import RequestError

    write = {"file_path": "out.txt", "content": "x\n"}
    script: list[Step] = [reply(tool_use("dev__write", write, id="w1")), reply("refused."), reply("ok")]
    client = EditorClient()
    with FakeAnthropic(script) as fake:
        async with editor(
            tmp_path, monkeypatch, fake, client, DEV, Options(permission_mode=PermissionMode.AUTO)
        ) as conn:
            session_id = await open_session(conn, tmp_path)
            await conn.set_session_mode(session_id=session_id, mode_id="read-only")
            announced = await client.wait_for(lambda u: u.session_update == "current_mode_update")
            assert announced.current_mode_id == "read-only"
            options = await client.wait_for(
                lambda u: u.session_update == "config_option_update" and u.config_options[0].current_value != "auto"
            )
            assert options.config_options[0].current_value == "read-only"
            await conn.prompt(session_id=session_id, prompt=[text_block("write it")])
            assert not (tmp_path / "out.txt").exists()
            assert "read-only" in tool_results(fake.requests[1].body)[0]["content"][0]["text"]
            # The same switch as a config option, answered with the options as they now stand.
            answer = await conn.set_config_option(session_id=session_id, config_id="mode", value="auto")
            assert answer.config_options[0].current_value == "auto"
            modes = [u.current_mode_id for u in client.of(session_id, "current_mode_update")]
            assert modes == ["read-only", "auto"]
            with pytest.raises(RequestError) as refused:
                await conn.set_session_mode(session_id=session_id, mode_id="yolo")
            assert refused.value.code == -32602
            with pytest.raises(RequestError):
                await conn.set_config_option(session_id=session_id, config_id="colour", value="red")


async def test_the_model_picker_switches_the_next_request_and_refuses_a_model_it_did_not_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp import text_block
    from acp.exceptions import RequestError

    client = EditorClient()
    with FakeAnthropic([reply("one"), reply("two")]) as fake:
        async with editor(tmp_path, monkeypatch, fake, client) as conn:
            session_id = await open_session(conn, tmp_path)
            await client.wait_for(lambda u: u.session_update == "config_option_update")
            await conn.prompt(session_id=session_id, prompt=[text_block("hi")])
            answer = await conn.set_config_option(session_id=session_id, config_id="model", value="claude-opus-4-8")
            assert answer.config_options[1].current_value == "claude-opus-4-8"
            await conn.prompt(session_id=session_id, prompt=[text_block("again")])
            with pytest.raises(RequestError) as refused:
                await conn.set_config_option(session_id=session_id, config_id="model", value="gpt-4")
            assert refused.value.code == -32602
            # /model in the prompt switches it too, and the picker follows.
            await conn.prompt(session_id=session_id, prompt=[text_block("/model claude-haiku-4-5")])
            last = client.of(session_id, "config_option_update")[-1]
            assert last.config_options[1].current_value == "claude-haiku-4-5"
    models = [r.body["model"] for r in fake.requests if r.path.startswith("/v1/messages")]
    assert models[0] != "claude-opus-4-8" and models[1] == "claude-opus-4-8"


def _record(directory: Path, cwd: Path, prompt: str) -> str:
    session_id = str(uuid.uuid4())
    store = SessionStore.new(directory, session_id, str(cwd), "claude-test")
    store.appended(Message("user", (Text(prompt),)))
    store.close()
    return session_id


async def test_session_list_pages_the_recorded_sessions_of_a_directory_newest_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp import PROTOCOL_VERSION
    from acp.exceptions import RequestError

    directory = tmp_path / "data" / "sessions"
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    mine = [_record(directory, here, f"prompt {n}") for n in range(listing.PAGE_SIZE + 2)]
    other = _record(directory, there, "elsewhere")
    client = EditorClient()
    async with editor(tmp_path, monkeypatch, None, client) as conn:
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        first = await conn.list_sessions(cwd=str(here))
        assert len(first.sessions) == listing.PAGE_SIZE and first.next_cursor
        second = await conn.list_sessions(cwd=str(here), cursor=first.next_cursor)
        assert len(second.sessions) == 2 and second.next_cursor is None
        listed = [s.session_id for s in (*first.sessions, *second.sessions)]
        assert sorted(listed) == sorted(mine)  # each exactly once, across the pages
        times = [s.updated_at for s in (*first.sessions, *second.sessions)]
        assert times == sorted(times, reverse=True) and all(t.endswith("Z") for t in times)
        entry = next(s for s in first.sessions if s.session_id == mine[-1])
        assert (entry.title, entry.cwd) == (f"prompt {listing.PAGE_SIZE + 1}", str(here))
        everywhere = await conn.list_sessions()
        assert other in [s.session_id for s in everywhere.sessions]
        for cursor in ("not-ours", "W10="):  # garbage, and base64 of []
            with pytest.raises(RequestError) as refused:
                await conn.list_sessions(cursor=cursor)
            assert refused.value.code == -32602


@pytest.mark.e2e  # it starts an MCP server as a process
async def test_close_ends_the_sessions_servers_and_it_is_unknown_afterwards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp import text_block
    from acp.exceptions import RequestError

    log = tmp_path / "calls.jsonl"
    client = EditorClient()
    with FakeAnthropic([reply(tool_use("fake__echo", {"text": "x"})), reply("done")]) as fake:
        async with editor(tmp_path, monkeypatch, fake, client) as conn:
            session_id = await open_session(conn, tmp_path, stdio_server("fake", log=str(log)))
            await conn.prompt(session_id=session_id, prompt=[text_block("go")])
            pid = read_log(log)[0]["pid"]
            assert pid_alive(pid)
            await conn.close_session(session_id=session_id)
            await wait_until(lambda: not pid_alive(pid), "the closed session's server to end", 10)
            with pytest.raises(RequestError) as unknown:
                await conn.prompt(session_id=session_id, prompt=[text_block("more")])
            assert unknown.value.code == -32002
            with pytest.raises(RequestError):
                await conn.close_session(session_id=session_id)
    assert texts(client.of(session_id)) == "done"
