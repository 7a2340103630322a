"""Server features through the real pool and loop, in-process with an SDK-built server (tests/feature_server.py):
a tool list that changes mid-session, the resource tools, prompts, logging and cancellation."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from sprout_agent.config.files import ServerConfig
from sprout_agent.config.settings import child_environment
from sprout_agent.core.events import Event, ListChanged, ServerLog, ToolProgress
from sprout_agent.core.messages import Image, ToolResult
from sprout_agent.faces.acp.commands import available_commands, prompt_turn
from sprout_agent.faces.terminal.input import MentionCompleter
from sprout_agent.faces.terminal.prompt_attach import attach_mentions, mentions
from sprout_agent.mcp.pool import ServerPool
from sprout_agent.mcp.prompts import PromptFailed, attach_resources, command_name, mention, prompt_text
from tests.bounds import bounded
from tests.loop_doubles import build_loop, call, reply

pytestmark = pytest.mark.anyio
MAX_BYTES = 51_200


@asynccontextmanager
async def feature_pool(tmp_path: Path, events: list[Event]) -> AsyncIterator[ServerPool]:
    config = ServerConfig("feat", "", cwd=str(tmp_path), transport="in-process", in_process="tests.feature_server")
    pool = ServerPool(
        [config],
        emit=events.append,
        start_timeout=bounded(10),
        tool_timeout=bounded(10),
        result_max_bytes=MAX_BYTES,
        child_env=lambda env: child_environment(dict(os.environ), env),
    )
    with anyio.fail_after(bounded(20)):
        async with pool:
            yield pool


def tool_names(body: dict[str, object]) -> list[str]:
    return [tool["name"] for tool in body["tools"]]  # type: ignore[index, union-attr]


async def test_a_tool_list_change_reaches_the_next_request_and_the_one_after_keeps_the_same_tools_block(
    tmp_path: Path,
) -> None:
    events: list[Event] = []
    async with feature_pool(tmp_path, events) as pool:
        script = [reply(call("feat__grow")), reply(call("feat__extra", "t_extra")), reply("done")]
        loop = build_loop(script, host=pool)
        assert (await loop.turn()).text == "done"
    first, second, third = loop.model.bodies
    assert "feat__extra" not in tool_names(first)
    assert "feat__extra" in tool_names(second)  # the change landed at the request boundary
    assert second["tools"] == third["tools"]  # and the tools block is byte-stable after it
    assert loop.results(-2)["t_extra"] == (False, "extra ran")
    changed = [e for e in events if isinstance(e, ListChanged)]  # the pool's events
    assert [(e.server, e.kind, e.added) for e in changed] == [("feat", "tools", ("extra",))]


async def test_a_list_changed_that_changes_nothing_is_not_reported(tmp_path: Path) -> None:
    events: list[Event] = []
    async with feature_pool(tmp_path, events) as pool:
        loop = build_loop([reply(call("feat__announce")), reply("done")], host=pool)
        assert (await loop.turn()).text == "done"
    assert not [e for e in events if isinstance(e, ListChanged)]  # the list was re-read, and it was the same


async def test_a_server_with_resources_gives_the_model_the_list_and_read_tools(tmp_path: Path) -> None:
    from tests.feature_server import HUGE

    async with feature_pool(tmp_path, []) as pool:
        names = [spec.name for spec in pool.tools()]
        assert names[-2:] == ["ListMcpResourcesTool", "ReadMcpResourceTool"]  # after every server tool
        script = [
            reply(
                call("ListMcpResourcesTool", "t_list"),
                call("ReadMcpResourceTool", "t_text", server="feat", uri="note://readme"),
                call("ReadMcpResourceTool", "t_img", server="feat", uri="img://dot"),
                call("ReadMcpResourceTool", "t_bin", server="feat", uri="bin://blob"),
                call("ReadMcpResourceTool", "t_big", server="feat", uri="note://big"),
                call("ReadMcpResourceTool", "t_none", server="nope", uri="note://readme"),
            ),
            reply("read"),
        ]
        loop = build_loop(script, host=pool)
        await loop.turn()
    results = loop.results(-2)
    listed = json.loads(results["t_list"][1])
    assert {row["uri"] for row in listed} == {"note://readme", "img://dot", "bin://blob", "note://big"}
    assert results["t_text"] == (False, "read me first")
    assert results["t_bin"] == (False, "[resource bin://blob, application/octet-stream, 300 bytes]")
    big = results["t_big"][1]
    assert len(big.encode()) <= MAX_BYTES and "bytes elided" in big and HUGE > MAX_BYTES  # the tool results' cap
    assert results["t_none"][0] and "no MCP server named 'nope'" in results["t_none"][1]
    image = next(b for b in loop.history[-2].content if isinstance(b, ToolResult) and b.tool_use_id == "t_img")
    assert [type(part) for part in image.content] == [Image]  # an image blob the API takes goes as an image


async def test_a_server_prompt_is_listed_with_its_arguments_and_its_messages_come_back_as_text(
    tmp_path: Path,
) -> None:
    async with feature_pool(tmp_path, []) as pool:
        [prompt] = pool.prompts()
        assert (prompt.server, prompt.name, prompt.arguments) == ("feat", "review", (("file", True), ("focus", False)))
        text = await pool.get_prompt("feat", "review", {"file": "a.py", "focus": "errors"})
    assert text == "Review a.py focusing on errors"


async def test_a_server_log_message_becomes_a_server_log_event(tmp_path: Path) -> None:
    events: list[Event] = []
    async with feature_pool(tmp_path, events) as pool:
        loop = build_loop([reply(call("feat__log", text="disk \x1b[31mfull")), reply("ok")], host=pool)
        await loop.turn()
    logs = [e for e in events if isinstance(e, ServerLog)]
    assert [(e.server, e.level, e.text) for e in logs] == [("feat", "warning", "feat: disk \x1b[31mfull")]


async def test_a_cancelled_call_sends_notifications_cancelled_to_its_server(tmp_path: Path) -> None:
    turn = anyio.CancelScope()

    def on_event(event: Event) -> None:
        if isinstance(event, ToolProgress):  # the server is inside the call: cancel as Esc or session/cancel do
            turn.cancel()

    async with feature_pool(tmp_path, []) as pool:
        loop = build_loop([reply(call("feat__hang", "t_hang")), reply("never")], host=pool, on_event=on_event)
        with turn:
            await loop.turn()
        assert turn.cancelled_caught
        # The server's handler was interrupted by the client's notifications/cancelled, the session still up.
        spec = next(spec for spec in pool.tools() if spec.tool == "cancelled")
        with anyio.fail_after(bounded(5)):
            outcome = await pool.call(spec, {})
    assert not outcome.is_error and outcome.content[0].text.startswith("cancelled request ")  # type: ignore[union-attr]


async def test_a_prompt_command_takes_its_arguments_in_order_or_by_name_and_names_what_is_missing(
    tmp_path: Path,
) -> None:
    async with feature_pool(tmp_path, []) as pool:
        assert await prompt_text(pool, "feat:review", "a.py errors") == "Review a.py focusing on errors"
        assert await prompt_text(pool, "feat:review", "focus=style 'b c.py'") == "Review b c.py focusing on style"
        assert await prompt_text(pool, "feat:nope", "") is None  # not a server prompt: the REPL says unknown
        with pytest.raises(PromptFailed, match=r"missing file; usage: /feat:review FILE \[FOCUS\]"):
            await prompt_text(pool, "feat:review", "")
        with pytest.raises(PromptFailed, match="too many arguments"):
            await prompt_text(pool, "feat:review", "a b c")
        # ACP: the editor's list gains the prompt; a prompt naming it becomes the turn's text.
        listed = available_commands(pool.prompts())["availableCommands"]
        assert listed[-1] == {  # type: ignore[index]
            "name": "feat:review",
            "description": "Review a file",
            "input": {"hint": "file [focus] (or name=value)"},
        }
        assert await prompt_turn(pool, "/feat:review x.py") == "Review x.py focusing on everything"
        assert await prompt_turn(pool, "just text") is None


async def test_a_resource_mention_attaches_its_text_and_completes_after_at(tmp_path: Path) -> None:
    async with feature_pool(tmp_path, []) as pool:
        skip = {mention(item) for item in pool.resources()}
        attached = attach_mentions("see @feat:note://readme and @feat:img://dot.", tmp_path, skip=skip)
        assert attached.notes == ()  # not taken for missing files
        text, notes = await attach_resources(pool, attached.text, mentions(attached.text))
        completer = MentionCompleter(tmp_path)
        completer.resources = lambda: sorted(skip)
        completer.commands = lambda: [f"/{command_name(prompt)}" for prompt in pool.prompts()]
        commands = [c.text for c in completer.get_completions(Document("/feat:"), CompleteEvent())]
    assert commands == ["/feat:review"]
    assert text.endswith('<resource server="feat" uri="note://readme">\nread me first\n</resource>')
    assert notes == ["@feat:img://dot: not attached (an image: ask the model to read it)"]
    words = [c.text for c in completer.get_completions(Document("look at @feat:no"), CompleteEvent())]
    assert words == ["@feat:note://big", "@feat:note://readme"]
