"""The built-in todo server: the list, its validation, and the `_Stop`/`_PostCompact` hooks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

from tests.harness import call_tool

if TYPE_CHECKING:
    from mcp import Client

pytestmark = pytest.mark.anyio

PLAN = [
    {"content": "write the test", "status": "completed"},
    {"content": "fix the bug", "status": "in_progress", "id": "fix"},
    {"content": "update the docs", "status": "pending"},
]


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    from mcp import Client

    from sprout_agent.tools import todo

    async with Client(todo.create_server()) as c:
        yield c


async def test_todo_write_replaces_the_list_and_todo_read_returns_it(client: Client) -> None:
    assert await call_tool(client, "todo_read") == (False, "The todo list is empty.")
    rendered = "[x] write the test (completed, id 1)\n[~] fix the bug (in_progress, id fix)\n" + (
        "[ ] update the docs (pending, id 3)"
    )
    assert await call_tool(client, "todo_write", todos=PLAN) == (
        False,
        f"Todo list updated (1/3 completed):\n{rendered}",
    )
    assert await call_tool(client, "todo_read") == (False, rendered)
    assert await call_tool(client, "todo_write", todos=[{"content": "only", "status": "pending"}]) == (
        False,
        "Todo list updated (0/1 completed):\n[ ] only (pending, id 1)",
    )
    assert await call_tool(client, "todo_write", todos=[]) == (False, "Todo list cleared.")
    assert await call_tool(client, "todo_read") == (False, "The todo list is empty.")


async def test_claude_codes_todo_shape_is_accepted_and_active_form_shown_while_in_progress(client: Client) -> None:
    claude_code = [
        {"content": "Run the tests", "status": "in_progress", "activeForm": "Running the tests"},
        {"content": "Fix the bug", "status": "pending", "activeForm": "Fixing the bug"},
    ]
    assert await call_tool(client, "todo_write", todos=claude_code) == (
        False,
        "Todo list updated (0/2 completed):\n[~] Run the tests (in_progress: Running the tests, id 1)\n"
        "[ ] Fix the bug (pending, id 2)",
    )


async def test_invalid_todo_lists_are_refused_and_the_old_list_kept(client: Client) -> None:
    await call_tool(client, "todo_write", todos=PLAN)
    bad_lists: list[tuple[object, str]] = [
        ([{"content": "x", "status": "done"}],
         "todos[0].status must be one of pending, in_progress, completed, not 'done'"),
        ([{"content": " ", "status": "pending"}], "todos[0].content must be a non-empty string"),
        ([{"status": "pending"}], "todos[0].content must be a non-empty string"),
        (["just text"], "todos[0] must be an object with content and status"),
        ([{"content": "a", "status": "pending", "due": "today"}], "todos[0] has unknown field(s): due"),
        ([{"content": "a", "status": "pending", "id": "x"}, {"content": "b", "status": "pending", "id": "x"}],
         "todo ids must be unique"),
        ("not a list", "argument 'todos' of todo_write must be of type array"),
    ]  # fmt: skip
    for todos, message in bad_lists:
        assert await call_tool(client, "todo_write", todos=todos) == (True, message)
    _, text = await call_tool(client, "todo_read")
    assert text.startswith("[x] write the test")


async def test_stop_hook_objects_only_while_items_are_open(client: Client) -> None:
    assert await call_tool(client, "_Stop") == (False, "")
    await call_tool(client, "todo_write", todos=PLAN)
    error, text = await call_tool(client, "_Stop", session_id="s1", cwd="/tmp", trigger="end_turn")
    assert not error
    assert text == (
        "You have open todo items:\n- fix the bug (in_progress)\n- update the docs (pending)\n"
        "Finish them (and mark them completed with todo_write), or update the list if they no longer "
        "apply, before stopping."
    )
    done = [{**item, "status": "completed"} for item in PLAN]
    await call_tool(client, "todo_write", todos=done)
    assert await call_tool(client, "_Stop") == (False, "")


async def test_post_compact_hook_returns_the_list(client: Client) -> None:
    assert await call_tool(client, "_PostCompact") == (False, "")
    await call_tool(client, "todo_write", todos=PLAN[:1])
    assert await call_tool(client, "_PostCompact", trigger="auto") == (
        False,
        "Your todo list (kept across compaction):\n[x] write the test (completed, id 1)",
    )


async def test_each_server_keeps_its_own_list() -> None:
    from mcp import Client

    from sprout_agent.tools import todo

    async with Client(todo.create_server()) as first, Client(todo.create_server()) as second:
        await call_tool(first, "todo_write", todos=PLAN)
        assert await call_tool(second, "todo_read") == (False, "The todo list is empty.")
