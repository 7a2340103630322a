"""The editor's files and terminals for the built-in dev tools, through the official ACP SDK's client over pipes
(tests/acp_editor.py: buffers with unsaved text, terminals that run real processes).

Reads see unsaved buffers, an edit is made on the buffer's text and written back whole, and every path rule of
the dev server holds on this route too (checked by what the editor is asked, not by our state). Commands run
in the editor's terminal under the same bubblewrap command line, with the dev server's scrubbed environment."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from sprout_agent.trust.sandbox import BWRAP, Policy, Sandbox
from tests.acp_editor import BufferEditor, capabilities
from tests.fake_anthropic import FakeAnthropic, Step, reply, tool_use
from tests.harness import tool_results
from tests.test_acp import editor

pytestmark = pytest.mark.anyio

DEV = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev"}


@asynccontextmanager
async def buffer_editor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakeAnthropic, files: bool = True, terminal: bool = True
) -> AsyncIterator[tuple[Any, BufferEditor, str]]:
    """(connection, editor, session id) for a session in tmp_path/work, the editor offering files and terminals."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    async with anyio.create_task_group() as group:
        client = BufferEditor(group)
        async with editor(tmp_path, monkeypatch, fake, client, DEV) as conn:
            await conn.initialize(protocol_version=1, client_capabilities=capabilities(files, terminal))
            session = await conn.new_session(cwd=str(work), mcp_servers=[])
            yield conn, client, session.session_id
        group.cancel_scope.cancel()
    await client.aclose()


def result_texts(fake: FakeAnthropic) -> list[str]:
    """Each tool result's text, as the model got them, in order."""
    last = [r for r in fake.requests if r.path.startswith("/v1/messages")][-1]
    return ["".join(part["text"] for part in result["content"]) for result in tool_results(last.body)]


@pytest.mark.e2e
async def test_reads_see_unsaved_buffers_and_edits_are_made_on_them_and_written_back_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp import text_block

    notes = tmp_path / "work" / "notes.txt"
    script: list[Step] = [
        reply(tool_use("dev__read", {"file_path": "notes.txt"}, id="r")),
        reply(tool_use("dev__edit", {"file_path": "notes.txt", "old_string": "beta", "new_string": "BETA"}, id="e")),
        reply(tool_use("dev__write", {"file_path": "sub/new.txt", "content": "hello\n"}, id="w")),
        reply("Done."),
    ]
    with FakeAnthropic(script) as fake:
        async with buffer_editor(tmp_path, monkeypatch, fake) as (conn, client, session_id):
            notes.write_text("alpha\nbeta\n")
            client.buffers[str(notes)] = "alpha\nbeta\ngamma (unsaved)\n"
            result = await conn.prompt(session_id=session_id, prompt=[text_block("edit")])
    assert result.stop_reason == "end_turn"
    read, edited, written = result_texts(fake)
    assert "gamma (unsaved)" in read and read.splitlines()[0] == "     1\talpha"
    assert edited.startswith("Edited notes.txt: 1 replacement(s)") and "+BETA" in edited
    assert written == "Created sub/new.txt (1 lines, 6 bytes)"
    # The whole buffer went back, the unsaved line kept: the edit was made on the editor's text, not the disk's.
    writes = [(Path(a["path"]).name, a["content"]) for kind, a in client.asked if kind == "write"]
    assert writes == [("notes.txt", "alpha\nBETA\ngamma (unsaved)\n"), ("new.txt", "hello\n")]
    assert client.kinds() == ["read", "read", "write", "write"]
    assert (tmp_path / "work" / "sub" / "new.txt").read_text() == "hello\n"
    updates = client.of(session_id)
    diff = [u for u in updates if u.session_update == "tool_call_update" and u.tool_call_id == "e"][-1].content[0]
    assert (diff.type, diff.old_text, diff.new_text) == (
        "diff",
        "alpha\nbeta\ngamma (unsaved)\n",
        "alpha\nBETA\ngamma (unsaved)\n",
    )


@pytest.mark.e2e
async def test_every_path_rule_of_the_dev_server_holds_before_the_editor_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp import text_block

    work = tmp_path / "work"
    (work / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", work / "link")
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "id_rsa").write_text("SECRET KEY\n")  # HOME is tmp_path: the deny list's ~/.ssh
    (work / "notes.txt").write_text("one\n")
    calls = [
        ("dev__write", {"file_path": "../escape.txt", "content": "x"}),
        ("dev__write", {"file_path": "link/through.txt", "content": "x"}),
        ("dev__write", {"file_path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}),
        ("dev__read", {"file_path": str(tmp_path / ".ssh" / "id_rsa")}),
        ("dev__edit", {"file_path": "notes.txt", "old_string": "one", "new_string": "two"}),  # never read
        ("dev__write", {"file_path": "notes.txt", "content": "overwritten"}),  # never read either
        ("dev__read", {"file_path": "notes.txt", "offset": -1}),
        ("dev__read", {"file_path": "notes.txt", "bogus": 1}),
    ]
    script: list[Step] = [reply(tool_use(name, args, id=f"c{n}")) for n, (name, args) in enumerate(calls)]
    script.append(reply("refused, all of it"))
    with FakeAnthropic(script) as fake:
        async with buffer_editor(tmp_path, monkeypatch, fake) as (conn, client, session_id):
            await conn.prompt(session_id=session_id, prompt=[text_block("try")])
    texts = result_texts(fake)
    assert "refusing to write" in texts[0] and "refusing to write" in texts[1]
    assert "refusing to write" in texts[2] and ".git" in texts[2]
    hidden = Sandbox(Policy.from_env({}, str(work))).active()
    assert "SECRET" not in texts[3] and (not hidden or "deny list" in texts[3])
    assert "has not been read in this session" in texts[4] and "has not been read in this session" in texts[5]
    assert "offset and limit must be positive" in texts[6] and "unknown argument(s) for read: bogus" in texts[7]
    # The editor was asked for nothing but the text the freshness rule compares: no write, no secret read.
    assert [(kind, Path(a["path"]).name) for kind, a in client.asked] == [("read", "notes.txt"), ("read", "notes.txt")]
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "outside" / "through.txt").exists()
    assert (work / "notes.txt").read_text() == "one\n"


@pytest.mark.e2e
async def test_a_buffer_changed_in_the_editor_after_the_read_is_not_edited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp import text_block

    notes = tmp_path / "work" / "notes.txt"
    edit = {"file_path": "notes.txt", "old_string": "one", "new_string": "two"}
    script: list[Step] = [reply(tool_use("dev__read", {"file_path": "notes.txt"})), reply("read"),
                          reply(tool_use("dev__edit", edit)), reply("stopped")]  # fmt: skip
    with FakeAnthropic(script) as fake:
        async with buffer_editor(tmp_path, monkeypatch, fake) as (conn, client, session_id):
            notes.write_text("one\n")
            await conn.prompt(session_id=session_id, prompt=[text_block("read")])
            client.buffers[str(notes)] = "one\nthe user typed this\n"  # unsaved, after the model's read
            await conn.prompt(session_id=session_id, prompt=[text_block("edit")])
    assert "changed in the editor since it was last read" in result_texts(fake)[-1]
    assert "write" not in client.kinds() and notes.read_text() == "one\n"


def bubblewrap_works(root: Path) -> bool:
    sandbox = Sandbox(Policy.from_env({}, str(root)))
    return sandbox.active() and sandbox.mechanism() == BWRAP


@pytest.mark.e2e
async def test_commands_run_in_the_editors_terminal_inside_the_same_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp import text_block

    if not bubblewrap_works(tmp_path):
        pytest.skip("the editor's terminals are used under bubblewrap only (docs/editors.md)")
    (tmp_path / "work" / ".git").mkdir(parents=True)  # read-only in the sandbox, though inside the workspace
    command = 'echo made > made.txt; echo "key=${ANTHROPIC_API_KEY:-gone}"; touch .git/escape'
    script: list[Step] = [
        reply(tool_use("dev__bash", {"command": command}, id="b1")),
        reply(tool_use("dev__bash", {"command": "sleep 30", "timeout": 0.5}, id="b2")),
        reply("ran"),
    ]
    with FakeAnthropic(script) as fake:
        async with buffer_editor(tmp_path, monkeypatch, fake, files=False) as (conn, client, session_id):
            result = await conn.prompt(session_id=session_id, prompt=[text_block("run")])
    assert result.stop_reason == "end_turn"
    ran, slept = result_texts(fake)
    assert (tmp_path / "work" / "made.txt").read_text() == "made\n"  # the workspace is writable
    assert not (tmp_path / "work" / ".git" / "escape").exists() and "[exit code: 1]" in ran  # .git is not
    assert "key=gone" in ran  # the dev server's environment, not the editor's: no secrets
    assert "timed out after 0.5 s" in slept
    argv = client.asked[0][1]["argv"]
    assert os.path.basename(argv[0]) == "env" and argv[1] == "-i" and any("bwrap" in a for a in argv)
    assert all(t.released for t in client.terminals.values()) and client.terminals["term-2"].killed
    updates = client.of(session_id)
    done = [u for u in updates if u.session_update == "tool_call_update" and u.tool_call_id == "b1"][-1]
    assert done.status == "failed" and done.content[0].type == "terminal" and done.content[0].terminal_id == "term-1"


class CarelessEditor(BufferEditor):
    """Fails every read and keeps far more output than it was asked to."""

    async def read_text_file(self, path: str, session_id: str, **kwargs: Any) -> Any:
        raise RuntimeError("the buffer is gone")

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        from acp.schema import TerminalOutputResponse

        return TerminalOutputResponse(output="x" * 200_000 + "END", truncated=False)


@pytest.mark.e2e
async def test_a_failing_or_careless_editor_gives_tool_errors_and_bounded_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp import text_block

    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "notes.txt").write_text("one\n")
    script: list[Step] = [reply(tool_use("dev__read", {"file_path": "notes.txt"}))]
    terminal = bubblewrap_works(tmp_path)
    if terminal:
        script.append(reply(tool_use("dev__bash", {"command": "echo hi"})))
    script.append(reply("went on"))
    with FakeAnthropic(script) as fake:
        async with anyio.create_task_group() as group:
            client = CarelessEditor(group)
            async with editor(tmp_path, monkeypatch, fake, client, DEV) as conn:
                await conn.initialize(protocol_version=1, client_capabilities=capabilities())
                session = await conn.new_session(cwd=str(tmp_path / "work"), mcp_servers=[])
                result = await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
            group.cancel_scope.cancel()
        await client.aclose()
    assert result.stop_reason == "end_turn"
    texts = result_texts(fake)
    assert texts[0].startswith("the editor could not do it")
    if terminal:
        assert texts[1].endswith("END\n[exit code: 0]") and len(texts[1]) < 31_000
        assert "earlier output omitted" in texts[1]
