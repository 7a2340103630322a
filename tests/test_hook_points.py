"""The hook points beyond `_Stop`/`_PostCompact`, through the real loop in-process: `_SessionStart`,
`_UserPromptSubmit`, `_PreToolUse`/`_PostToolUse` (behind SPROUT_AGENT_TOOL_HOOKS=1) and `_SessionEnd`.
Every request the scripted model sees is checked against the API's rules (tests/api_rules.py)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from sprout_agent.core.events import (
    HookAnswered,
    HookBudgetSpent,
    HookInjected,
    HookObjected,
    HookServerKilled,
    HookTimedOut,
)
from sprout_agent.core.messages import ToolResult, ToolUse
from sprout_agent.faces.slash_commands import clear_command
from tests.bounds import bounded
from tests.loop_doubles import (
    CWD,
    SESSION_ID,
    Behaviour,
    MemoryHost,
    answers,
    build_loop,
    call,
    default_server,
    echo,
    hangs,
    hook_data,
    reply,
    server,
    tool,
)

pytestmark = pytest.mark.anyio
EVERY = {name: {} for name in ("session_id", "cwd", "source", "prompt", "reason", "tool_name", "arguments")}
TOOL_FIELDS = {name: {} for name in ("tool_name", "arguments", "result_text", "is_error")}


def with_hooks(**hooks: Behaviour) -> MemoryHost:
    """Server "fake" (echo, add, fail, read_only) plus the given hooks, each declaring every context field."""
    made = {name: tool(value, properties=EVERY) for name, value in hooks.items()}
    return MemoryHost({"fake": {**default_server(), **server(**made)}})


def roles(body: dict[str, Any]) -> list[tuple[str, list[str]]]:
    return [(m["role"], [b["type"] for b in m["content"]]) for m in body["messages"]]


def without_cache_marks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {**m, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]} for m in messages
    ]


# ---------------------------------------------------------------- _SessionStart / _UserPromptSubmit


async def test_session_start_text_enters_right_after_the_first_prompt_as_a_json_tool_result_pair() -> None:
    loop = build_loop([reply("hi")], host=with_hooks(_SessionStart=answers("branch main, CI green")), hook_servers="*")
    with anyio.fail_after(bounded(5)):
        await loop.agent.start_session("startup")
    assert loop.history == []  # the history must open with a user turn: it waits for the prompt
    await loop.turn("what now?")
    body = loop.model.bodies[0]
    assert roles(body) == [("user", ["text"]), ("assistant", ["tool_use"]), ("user", ["tool_result"])]
    assert hook_data(body) == [{"hook": "_SessionStart", "server": "fake", "text": "branch main, CI green"}]
    (started,) = loop.host.calls_of("_SessionStart")
    assert started.arguments == {"session_id": SESSION_ID, "cwd": CWD, "source": "startup"}
    assert [e.hook for e in loop.of(HookInjected)] == ["_SessionStart"]


async def test_clear_ends_the_session_then_starts_one_with_source_clear_and_drops_what_was_pending() -> None:
    host = with_hooks(_SessionStart=answers("first", "second"), _SessionEnd=answers("bye"))
    loop = build_loop([reply("ok")], host=host, hook_servers="*")
    with anyio.fail_after(bounded(5)):
        await loop.agent.start_session("startup")
        await loop.agent.clear_session()
    assert [c.arguments["source"] for c in loop.host.calls_of("_SessionStart")] == ["startup", "clear"]
    assert [c.arguments["reason"] for c in loop.host.calls_of("_SessionEnd")] == ["clear"]
    await loop.turn()
    assert [h["text"] for h in hook_data(loop.model.bodies[0])] == ["second"]


async def test_user_prompt_submit_adds_after_the_prompt_every_turn_and_earlier_requests_stay_a_byte_prefix() -> None:
    host = with_hooks(_UserPromptSubmit=answers("docs for one", "docs for two"))
    loop = build_loop([reply("one done"), reply("two done")], host=host, hook_servers="*")
    await loop.turn("one")
    await loop.turn("two")
    first, second = loop.model.bodies
    assert [c.arguments["prompt"] for c in loop.host.calls_of("_UserPromptSubmit")] == ["one", "two"]
    assert [h["text"] for h in hook_data(second)] == ["docs for one", "docs for two"]
    # The cache reads what the previous request sent: nothing before the new prompt changes.
    assert without_cache_marks(second["messages"])[: len(first["messages"])] == without_cache_marks(first["messages"])
    assert second["messages"][-3]["content"][-1] == {"type": "text", "text": "two"}  # the prompt, then the pair


async def test_several_servers_inject_in_config_order_and_an_empty_answer_injects_nothing() -> None:
    host = MemoryHost(
        {
            "b": server(_UserPromptSubmit=answers("from b")),
            "quiet": server(_UserPromptSubmit=answers("")),
            "a": server(_UserPromptSubmit=answers("from a"), echo=echo()),
        }
    )
    loop = build_loop([reply("ok")], host=host, hook_servers="*")
    await loop.turn()
    assert [h["server"] for h in hook_data(loop.model.bodies[0])] == ["b", "a"]


# ---------------------------------------------------------------- _PreToolUse / _PostToolUse


async def test_tool_hooks_are_not_called_without_the_opt_in() -> None:
    host = with_hooks(_PreToolUse=answers("no"), _PostToolUse=answers("note"))
    loop = build_loop([reply(call("fake__echo", text="x")), reply("ok")], host=host, hook_servers="*")
    await loop.turn()
    assert loop.host.calls_of("_PreToolUse") == [] and loop.host.calls_of("_PostToolUse") == []
    assert loop.results(-2) and list(loop.results(-2).values()) == [(False, "x")]


async def test_a_pre_tool_use_objection_keeps_the_call_from_running_and_the_model_reads_it_as_json() -> None:
    host = with_hooks(_PreToolUse=answers("rm -rf is destructive", then=""))
    script = [
        reply(call("fake__echo", "toolu_a", text="rm -rf /")),
        reply(call("fake__echo", "toolu_b", text="ls")),
        reply("ok"),
    ]
    loop = build_loop(script, host=host, hook_servers="*", tool_hooks=True)
    await loop.turn()
    assert [c.arguments for c in loop.host.calls_of("echo")] == [{"text": "ls"}]  # the first never ran
    is_error, text = loop.results(2)["toolu_a"]
    assert is_error and text.startswith("not run: a _PreToolUse hook objected")
    objection = json.loads(text.split("\n", 1)[1])
    assert objection == {"hook": "_PreToolUse", "server": "fake", "text": "rm -rf is destructive"}
    first = loop.host.calls_of("_PreToolUse")[0].arguments
    assert first["tool_name"] == "fake__echo" and first["arguments"] == {"text": "rm -rf /"}
    assert [(e.hook, e.server) for e in loop.of(HookObjected)] == [("_PreToolUse", "fake")]


async def test_a_pre_tool_use_hook_runs_after_the_permission_policy_and_only_for_allowed_calls() -> None:
    class Refuse:
        async def decide(self, spec: Any, use: ToolUse, hook: Any = None, *, answered: bool = False) -> str | None:
            return "denied by policy"

    refuse = Refuse()

    host = with_hooks(_PreToolUse=answers("objection"))
    loop = build_loop(
        [reply(call("fake__echo", text="x")), reply("ok")], host=host, hook_servers="*", tool_hooks=True, permit=refuse
    )
    await loop.turn()
    assert loop.host.calls_of("_PreToolUse") == []
    assert list(loop.results(-2).values()) == [(True, "denied by policy")]


async def test_a_pre_tool_use_timeout_lets_the_call_run_and_the_second_in_a_row_kills_the_server() -> None:
    host = MemoryHost({"guard": server(_PreToolUse=hangs()), "fake": default_server()})
    script = [
        reply(call("fake__echo", text="1")),
        reply(call("fake__echo", text="2")),
        reply(call("fake__echo", text="3")),
        reply("ok"),
    ]
    loop = build_loop(script, host=host, hook_servers="*", tool_hooks=True, hook_timeout_ms=int(bounded(50)))
    await loop.turn()
    assert [c.arguments["text"] for c in loop.host.calls_of("echo")] == ["1", "2", "3"]
    assert [e.consecutive for e in loop.of(HookTimedOut)] == [1, 2]
    assert [e.server for e in loop.of(HookServerKilled)] == ["guard"]
    assert len(loop.host.calls_of("_PreToolUse")) == 2  # a killed server's hooks are no longer called


@pytest.mark.parametrize(("budget", "checked"), [(1, 1), (0, 0), (None, 3)])
async def test_the_pre_tool_use_budget_counts_objections_and_zero_turns_it_off(
    budget: int | None, checked: int
) -> None:
    host = with_hooks(_PreToolUse=answers(then="no"))
    script = [reply(call("fake__echo", text=str(n))) for n in range(3)] + [reply("ok")]
    loop = build_loop(script, host=host, hook_servers="*", tool_hooks=True, pre_tool_max_objections=budget)
    await loop.turn()
    assert len(loop.host.calls_of("_PreToolUse")) == checked
    assert len(loop.host.calls_of("echo")) == 3 - checked
    spent = loop.of(HookBudgetSpent)
    assert spent == ([HookBudgetSpent("_PreToolUse", 1)] if budget == 1 else [])


async def test_post_tool_use_adds_a_json_block_to_that_result_and_sees_the_result() -> None:
    host = MemoryHost(
        {
            "fake": {
                **default_server(),
                **server(_PostToolUse=tool(answers("lint: 2 warnings", then=""), properties=TOOL_FIELDS)),
            }
        }
    )
    script = [reply(call("fake__echo", "toolu_a", text="hello"), call("fake__fail", "toolu_b")), reply("ok")]
    loop = build_loop(script, host=host, hook_servers="*", tool_hooks=True)
    await loop.turn()
    message = loop.history[2]
    by_id = {b.tool_use_id: b for b in message.content if isinstance(b, ToolResult)}
    texts = [getattr(part, "text", "") for part in by_id["toolu_a"].content]
    assert texts[0] == "hello" and json.loads(texts[1]) == {
        "hook": "_PostToolUse",
        "server": "fake",
        "text": "lint: 2 warnings",
    }
    contexts = sorted(
        (c.arguments["tool_name"], c.arguments["result_text"], c.arguments["is_error"])
        for c in loop.host.calls_of("_PostToolUse")
    )
    assert contexts == [("fake__echo", "hello", False), ("fake__fail", "this tool failed on purpose", True)]
    assert [e.hook for e in loop.of(HookInjected)] == ["_PostToolUse"]


# ---------------------------------------------------------------- _SessionEnd


async def test_session_end_is_logged_once_and_adds_nothing_to_the_history() -> None:
    loop = build_loop([reply("ok")], host=with_hooks(_SessionEnd=answers("saved notes")), hook_servers="*")
    await loop.agent.start_session("startup")
    await loop.turn()
    before = list(loop.history)
    with anyio.fail_after(bounded(5)):
        await loop.agent.end_session("exit")
        await loop.agent.end_session("exit")
    assert [c.arguments["reason"] for c in loop.host.calls_of("_SessionEnd")] == ["exit"]
    assert loop.of(HookAnswered) == [HookAnswered("_SessionEnd", "fake", "saved notes")]
    assert loop.history == before


async def test_a_hanging_session_end_costs_the_timeout_at_most_and_kills_nobody() -> None:
    host = MemoryHost({"slow": server(_SessionEnd=hangs()), "fake": default_server()})
    loop = build_loop([], host=host, hook_servers="*", hook_timeout_ms=int(bounded(100)))
    await loop.agent.start_session("startup")
    with anyio.fail_after(bounded(5)):  # the hang never answers: only its timeout ends the wait
        await loop.agent.end_session("exit")
    assert [e.hook for e in loop.of(HookTimedOut)] == ["_SessionEnd"] and loop.host.kills == []
    (hung,) = loop.host.calls_of("_SessionEnd")
    assert hung.cancelled  # given up on at the timeout, not waited for


async def test_without_session_end_hooks_ending_a_session_costs_nothing() -> None:
    loop = build_loop([], hook_servers="*")
    await loop.agent.start_session("startup")
    await loop.agent.end_session("exit")  # no hook: not even a task group is opened (hooks.call returns first)
    assert loop.host.calls == [] and loop.events == []


async def test_clear_in_acp_and_the_repl_ends_the_session_and_starts_one_with_source_clear() -> None:
    host = with_hooks(_SessionStart=answers("fresh"), _SessionEnd=answers(""))
    loop = build_loop([], host=host, hook_servers="*")
    await loop.agent.start_session("startup")
    assert await clear_command(loop.agent) == [("new conversation", "dim")]  # the command both faces run
    made = [(c.tool, c.arguments.get("source", c.arguments.get("reason"))) for c in loop.host.calls]
    assert made == [("_SessionStart", "startup"), ("_SessionEnd", "clear"), ("_SessionStart", "clear")]
    assert loop.history == []
