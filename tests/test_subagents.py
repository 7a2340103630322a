"""Subagents in-process: the real loop, hooks, ledger and delegation (session/delegation.py) around a scripted
model and an in-memory host whose `agent__task` tool hands its calls to the delegator, as the built-in `agent`
server does (its MCP path is tested end to end in tests/test_subagents_e2e.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from sprout_agent.config.definitions import BUILTIN_AGENTS, BUILTIN_TYPES_LINE, AgentDefinition, Skill
from sprout_agent.core import subagents as sa
from sprout_agent.core.agent import Agent
from sprout_agent.core.events import Notice, SubagentEvent, SubagentFinished, SubagentStarted, ToolStarted
from sprout_agent.core.late import Late
from sprout_agent.core.messages import Text, ToolResult, Usage
from sprout_agent.core.permission_mode import PermissionMode
from sprout_agent.core.protocols import ModelRequest, ToolOutcome
from sprout_agent.session.delegation import ChildSetup, Delegator
from tests.loop_doubles import (
    Call,
    Loop,
    MemoryHost,
    build_loop,
    call,
    echo,
    reply,
    server,
    tool,
)

pytestmark = pytest.mark.anyio
TASK = {"description": {"type": "string"}, "prompt": {"type": "string"}, "subagent_type": {"type": "string"}}
READER = AgentDefinition("reader", "reads", "subagent reader", tools=("dev__read",))


def delegating(
    script: Sequence[Any],
    definitions: Sequence[AgentDefinition] = (*BUILTIN_AGENTS, READER),
    *,
    max_depth: int = 1,
    hooks: dict[str, Any] | None = None,
    dev: dict[str, Any] | None = None,
    **options: Any,
) -> tuple[Loop, MemoryHost]:
    parent: Late[Agent] = Late("the session's agent")
    setup = ChildSetup(lambda _name, _emit: loop.model, _system, lambda _child: None)
    delegator = Delegator(definitions, (), setup, parent, max_depth)

    async def task(c: Call) -> ToolOutcome:
        return await delegator.run_task(c.call_id, c.arguments)

    servers = {
        "dev": dev or server(read=echo("path"), grep=echo("pattern"), bash=echo("command"), glob="a.py"),
        "agent": server(task=tool(task, properties=TASK)),
        **({"guard": server(**hooks)} if hooks else {}),
    }
    host = MemoryHost(servers)
    loop = build_loop(script, host=host, hook_servers="guard" if hooks else None, **options)
    parent.bind(loop.agent)
    return loop, host


def unattached(definitions: Sequence[AgentDefinition], skills: Sequence[Skill] = ()) -> Delegator:
    """A delegator whose session has no agent yet: it lists its definitions and reads skills, and runs no task."""
    setup = ChildSetup(_no_model, _system, lambda _child: None)
    return Delegator(definitions, skills, setup, Late("the session's agent"))


def _no_model(name: str | None, emit: Any) -> Any:
    raise AssertionError("no child is built before the session's agent exists")


def _system(definition: AgentDefinition) -> str:
    return f"subagent {definition.name}"


def child_reply(agent: str, *parts: Any, **kw: Any) -> Any:
    """A step only a child of `agent` may take: the script proves who asked."""

    def step(request: ModelRequest) -> Any:
        assert request.system == f"subagent {agent}", request.system
        return reply(*parts, **kw)

    return step


def result_text(loop: Loop, index: int = 2) -> tuple[bool, str]:
    return next(iter(loop.results(index).values()))


async def test_a_task_runs_a_child_on_a_fresh_context_and_only_its_answer_reaches_the_parent() -> None:
    loop, _host = delegating(
        [
            reply(call("agent__task", description="find x", prompt="where is x?", subagent_type="Explore")),
            child_reply("Explore", call("dev__grep", pattern="x")),
            child_reply("Explore", "x is in a.py:3"),
            reply("done"),
        ]
    )
    result = await loop.turn("find x for me")
    assert result.text == "done"
    assert result_text(loop) == (False, "x is in a.py:3")
    child_first = loop.model.requests[1]
    assert [m.role for m in child_first.messages] == ["user"] and child_first.messages[0].text == "where is x?"
    assert sorted(spec.name for spec in child_first.tools) == ["dev__glob", "dev__grep", "dev__read"]
    parent_last = loop.model.requests[3]
    assert "dev__grep" not in str(parent_last.messages)  # the child's own calls stay in its context
    assert [type(e) for e in loop.events if isinstance(e, SubagentStarted | SubagentFinished)] == [
        SubagentStarted,
        SubagentFinished,
    ]
    nested = [e.event for e in loop.of(SubagentEvent) if isinstance(e.event, ToolStarted)]
    assert [e.name for e in nested] == ["dev__grep"]


async def test_a_child_asking_for_a_tool_it_was_not_given_is_refused() -> None:
    loop, host = delegating(
        [
            reply(call("agent__task", description="read", prompt="run ls", subagent_type="reader")),
            child_reply("reader", call("dev__bash", command="ls")),
            child_reply("reader", "I could not run it"),
            reply("ok"),
        ]
    )
    await loop.turn()
    child_results = [b for m in loop.model.requests[2].messages for b in m.content if isinstance(b, ToolResult)]
    assert child_results[0].is_error and "unknown tool" in str(child_results[0].content)
    assert not host.calls_of("bash")


async def test_children_of_one_reply_run_at_once() -> None:
    both_asked = anyio.Event()
    asked: list[str] = []

    async def meet(request: ModelRequest) -> Any:
        asked.append(request.messages[0].text)
        if len(asked) == 2:
            both_asked.set()
        await both_asked.wait()  # one child at a time never gets here twice: the test's bound ends it
        return reply(f"answer to {request.messages[0].text}")

    loop, _host = delegating(
        [
            reply(
                call("agent__task", "t1", description="a", prompt="one", subagent_type="Explore"),
                call("agent__task", "t2", description="b", prompt="two", subagent_type="Explore"),
            ),
            meet,
            meet,
            reply("both done"),
        ]
    )
    await loop.turn(timeout=10)
    assert sorted(asked) == ["one", "two"]
    assert loop.results(2) == {"t1": (False, "answer to one"), "t2": (False, "answer to two")}


async def test_a_child_stops_at_the_budget_left_and_says_so_and_its_cost_is_the_sessions() -> None:
    costly = Usage(input_tokens=400_000, output_tokens=10)  # $1.20 at Sonnet's price
    loop, _host = delegating(
        [
            reply(call("agent__task", description="a", prompt="dig", subagent_type="general-purpose")),
            child_reply("general-purpose", call("dev__glob"), usage=costly),
            reply("the child ran out"),
        ],
        max_budget_usd=1.0,
    )
    await loop.turn()
    is_error, text = result_text(loop)
    assert is_error and "budget" in text
    assert loop.ledger.cost >= 1.2
    assert len(loop.ledger.children) == 1


async def test_a_subagent_start_hook_that_blocks_refuses_the_child_with_its_reason() -> None:
    block = '{"decision": "block", "reason": "no subagents on Fridays"}'
    loop, _host = delegating(
        [reply(call("agent__task", description="a", prompt="go", subagent_type="Explore")), reply("ok")],
        hooks={"_SubagentStart": block},
    )
    await loop.turn()
    is_error, text = result_text(loop)
    assert is_error and "no subagents on Fridays" in text
    assert len(loop.model.requests) == 2  # no child request was made


async def test_a_subagent_start_hooks_context_enters_the_childs_history_after_its_prompt() -> None:
    loop, _host = delegating(
        [
            reply(call("agent__task", description="a", prompt="go", subagent_type="Explore")),
            child_reply("Explore", "done"),
            reply("ok"),
        ],
        hooks={"_SubagentStart": "the repo uses tabs"},
    )
    await loop.turn()
    child = loop.model.requests[1]
    assert child.messages[0].text == "go"
    assert "the repo uses tabs" in str(child.messages[2].content)


async def test_a_subagent_stop_hook_objects_once_and_the_child_goes_on() -> None:
    loop, _host = delegating(
        [
            reply(call("agent__task", description="a", prompt="go", subagent_type="Explore")),
            child_reply("Explore", "done early"),
            child_reply("Explore", "done properly"),
            reply("ok"),
        ],
        hooks={"_SubagentStop": tool(_objects_once())},
    )
    await loop.turn()
    assert result_text(loop) == (False, "done properly")


def _objects_once() -> Any:
    said: list[bool] = []

    async def run(_c: Call) -> ToolOutcome:
        if said:
            return ToolOutcome((Text(""),))
        said.append(True)
        return ToolOutcome((Text("check the tests first"),))

    return run


async def test_a_child_cannot_start_children_at_the_default_depth_and_can_when_it_is_raised() -> None:
    script = [
        reply(call("agent__task", description="a", prompt="go", subagent_type="general-purpose")),
        child_reply("general-purpose", "no more"),
        reply("ok"),
    ]
    loop, _host = delegating(script)
    await loop.turn()
    assert "agent__task" not in [spec.name for spec in loop.model.requests[1].tools]
    loop, _host = delegating(script, max_depth=2)
    await loop.turn()
    assert "agent__task" in [spec.name for spec in loop.model.requests[1].tools]


async def test_an_unknown_agent_type_is_an_error_naming_the_choices() -> None:
    loop, _host = delegating(
        [reply(call("agent__task", description="a", prompt="go", subagent_type="nope")), reply("ok")]
    )
    await loop.turn()
    is_error, text = result_text(loop)
    assert is_error and "general-purpose" in text and "Explore" in text


async def test_a_definition_tool_rule_with_a_specifier_gives_no_tool_and_says_so() -> None:
    git_only = AgentDefinition("git", "git", "subagent git", tools=("Bash(git:*)", "Read"))
    loop, _host = delegating(
        [
            reply(call("agent__task", description="a", prompt="go", subagent_type="git")),
            child_reply("git", "ok"),
            reply("ok"),
        ],
        definitions=(git_only,),
    )
    await loop.turn()
    assert [spec.name for spec in loop.model.requests[1].tools] == ["dev__read"]
    warnings = [e.event for e in loop.of(SubagentEvent) if isinstance(e.event, Notice)]
    assert warnings and "Bash(git:*)" in warnings[0].text


async def test_acp_shows_a_childs_calls_as_calls_of_their_own_naming_the_parent_call() -> None:
    from sprout_agent.faces.acp.updates import PARENT_META, Updates

    sent: list[dict[str, Any]] = []
    updates = Updates("s1", sent.append, "/tmp")
    loop, _host = delegating(
        [
            reply(call("agent__task", "toolu_task", description="find", prompt="go", subagent_type="Explore")),
            child_reply("Explore", call("dev__grep", "toolu_child", pattern="x")),
            child_reply("Explore", "x is in a.py"),
            reply("ok"),
        ],
        on_event=updates.emit,
    )
    updates.begin()
    await loop.turn()
    updates.end()
    calls = {u["update"]["toolCallId"]: u["update"] for u in sent if u["update"]["sessionUpdate"] == "tool_call"}
    assert set(calls) == {"toolu_task", "toolu_child"}
    assert calls["toolu_child"]["_meta"] == {PARENT_META: "toolu_task"} and "_meta" not in calls["toolu_task"]
    finished = [u["update"] for u in sent if u["update"].get("status") == "completed"]
    assert [u["toolCallId"] for u in finished] == ["toolu_child", "toolu_task"]


async def test_parallel_children_together_stop_at_the_sessions_budget_not_each_at_the_budget_left_when_it_started() -> (
    None
):
    spent = anyio.Event()

    async def waits_for_the_spend(_c: Call) -> ToolOutcome:
        with anyio.fail_after(5):
            await spent.wait()
        return ToolOutcome((Text("read"),))

    async def spends(_c: Call) -> ToolOutcome:
        spent.set()  # the costly child's reply is counted: the session is past its budget
        return ToolOutcome((Text("a.py"),))

    def child(request: ModelRequest) -> Any:
        first = len(request.messages) == 1
        if request.messages[0].text == "costly":
            return reply(call("dev__glob"), usage=Usage(input_tokens=400_000)) if first else reply("B done")
        return reply(call("dev__read", path="a.py"), usage=Usage(input_tokens=10)) if first else reply("A went on")

    loop, _host = delegating(
        [
            reply(
                call("agent__task", "ta", description="a", prompt="slow", subagent_type="general-purpose"),
                call("agent__task", "tb", description="b", prompt="costly", subagent_type="general-purpose"),
            ),
            *[child] * 4,
            reply("should not be asked"),
        ],
        dev=server(read=waits_for_the_spend, glob=spends),
        max_budget_usd=1.0,
    )
    result = await loop.turn()
    slow = [r for r in loop.model.requests if r.messages and r.messages[0].text == "slow"]
    assert len(slow) == 1, "a child went on after its sibling spent the session's budget"
    assert result.stop_reason == "budget"


async def test_a_definitions_disallowed_rule_with_a_specifier_or_claude_codes_older_name_leaves_the_tool_out() -> None:
    # Claude Code's `disallowedTools: Bash(git push:*)` narrows Bash; it cannot be checked per command here, so the
    # whole tool goes, as a --disallowedTools rule does (never silently wider). `Task` is Claude Code's older `Agent`.
    careful = AgentDefinition(
        "careful", "careful", "subagent careful", disallowed_tools=("Bash(git push:*)", "Task", "MultiEdit")
    )
    loop, _host = delegating(
        [
            reply(call("agent__task", description="a", prompt="go", subagent_type="careful")),
            child_reply("careful", "ok"),
            reply("ok"),
        ],
        definitions=(careful,),
        dev=server(read=echo("path"), bash=echo("command"), edit=echo("path")),
        max_depth=2,
    )
    await loop.turn()
    assert [spec.name for spec in loop.model.requests[1].tools] == ["dev__read"]
    warnings = [e.event for e in loop.of(SubagentEvent) if isinstance(e.event, Notice)]
    assert warnings and "Bash(git push:*)" in warnings[0].text


async def test_cancelling_the_turn_mid_child_stops_its_tool_and_the_parents_next_request_is_valid() -> None:
    from tests.loop_doubles import hangs

    loop, host = delegating(
        [
            reply(call("agent__task", "t_task", description="a", prompt="go", subagent_type="general-purpose")),
            child_reply("general-purpose", call("dev__bash", "t_child", command="sleep 100")),
            reply("after"),
        ],
        dev=server(read=echo("path"), bash=hangs()),
    )
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(loop.agent.run_turn, "go")
            await host.started("bash").wait()
            group.cancel_scope.cancel()
    (hung,) = host.calls_of("bash")
    assert hung.cancelled and hung.finished is not None
    assert loop.results() == {"t_task": (True, "interrupted: the call was cancelled")}
    assert [e.stop_reason for e in loop.of(SubagentFinished)] == ["cancelled"]
    assert (await loop.turn("again")).text == "after"  # the scripted model refuses an invalid history


class _StopsAtBash:
    """An SDK's PreToolUse callback answering `continue: false` for Bash (docs/sdk.md: the turn ends)."""

    def wants(self, event: str, subject: str | None = None) -> bool:
        return event == "PreToolUse" and subject == "Bash"

    async def run(self, event: str, fields: Any, subject: str | None = None, tool_use_id: str | None = None) -> Any:
        from sprout_agent.core.hooks.program_callbacks import CallbackAnswer

        return [CallbackAnswer(stop="no shell today")]


async def test_a_callbacks_continue_false_for_a_childs_call_ends_the_sessions_turn_not_only_the_childs() -> None:
    loop, host = delegating(
        [
            reply(call("agent__task", description="a", prompt="go", subagent_type="general-purpose")),
            child_reply("general-purpose", call("dev__bash", command="rm -rf build")),
            reply("the parent went on"),
        ]
    )
    loop.hooks.callbacks = _StopsAtBash()
    result = await loop.turn()
    assert not host.calls_of("bash")
    assert result.stop_reason == "hook_stopped" and len(loop.model.requests) == 2


def test_hundreds_of_agent_definitions_with_long_descriptions_keep_the_task_tools_description_bounded() -> None:
    # The task tool's description is sent with every request: 400 definitions at their 1 KB maximum (two
    # directories' worth) were ~400 KB there, ~100k tokens a request.
    many = [AgentDefinition(f"agent-{n}", "x" * 1024, "prompt") for n in range(400)]
    described = unattached(many).task_description()
    assert len(described) <= sa.TASK_LISTING_MAX_CHARS + sa.TASK_NAMES_MAX_CHARS + 500
    assert f"- agent-0: {'x' * 1024}" in described.splitlines()  # the first ones whole: the model picks by them
    rest = described.splitlines()[-1]
    assert "more, by name only" in rest and "agent-399" not in described and rest.endswith("…")
    assert unattached(many[:3]).task_description().count("\n") == 4  # intro, heading, a line each


def test_with_only_the_built_in_agent_types_the_task_tool_names_them_in_one_line_and_a_users_type_is_listed() -> None:
    # Every request carries the task tool: two built-in types need no per-type listing (issue 46, tokens).
    plain = unattached(BUILTIN_AGENTS).task_description()
    assert plain.splitlines()[-1] == BUILTIN_TYPES_LINE and plain.count("\n") == 1
    assert "general-purpose" in BUILTIN_TYPES_LINE and "Explore" in BUILTIN_TYPES_LINE
    mine = AgentDefinition("reviewer", "Reviews a diff for bugs.", "prompt")
    listed = unattached([mine, *BUILTIN_AGENTS]).task_description()
    assert "- reviewer: Reviews a diff for bugs." in listed.splitlines() and "- Explore: " in listed


class _StopsAtSubagentStart:
    def wants(self, event: str, subject: str | None = None) -> bool:
        return event == "SubagentStart"

    async def run(self, event: str, fields: Any, subject: str | None = None, tool_use_id: str | None = None) -> Any:
        from sprout_agent.core.hooks.program_callbacks import CallbackAnswer

        return [CallbackAnswer(stop="enough")]


async def test_a_subagent_start_callbacks_continue_false_starts_no_child_and_ends_the_turn() -> None:
    loop, _host = delegating(
        [
            reply(call("agent__task", description="a", prompt="go", subagent_type="general-purpose")),
            child_reply("general-purpose", "the child ran anyway"),
            reply("the parent went on"),
        ]
    )
    loop.hooks.callbacks = _StopsAtSubagentStart()
    result = await loop.turn()
    assert result.stop_reason == "hook_stopped" and len(loop.model.requests) == 1
    is_error, text = result_text(loop)
    assert is_error and "enough" in text


async def test_a_continue_false_for_one_childs_call_ends_its_running_siblings_turn_too() -> None:
    stopped = anyio.Event()

    class StopsAtBash(_StopsAtBash):
        async def run(self, event: str, fields: Any, subject: str | None = None, tool_use_id: str | None = None) -> Any:
            stopped.set()
            return await super().run(event, fields, subject, tool_use_id)

    async def read_after_the_stop(_c: Call) -> ToolOutcome:
        with anyio.fail_after(5):
            await stopped.wait()
        return ToolOutcome((Text("read"),))

    def child(request: ModelRequest) -> Any:
        if len(request.messages) > 1:
            return reply(f"{request.messages[0].text} went on")
        if request.messages[0].text == "shell":
            return reply(call("dev__bash", command="ls"))
        return reply(call("dev__read", path="a.py"))

    loop, _host = delegating(
        [
            reply(
                call("agent__task", "ta", description="a", prompt="shell", subagent_type="general-purpose"),
                call("agent__task", "tb", description="b", prompt="reader", subagent_type="general-purpose"),
            ),
            *[child] * 4,
        ],
        dev=server(read=read_after_the_stop, bash=echo("command")),
    )
    loop.hooks.callbacks = StopsAtBash()
    result = await loop.turn()
    assert result.stop_reason == "hook_stopped"
    assert [r.messages[0].text for r in loop.model.requests[1:]].count("reader") == 1, "the sibling went on"


async def test_a_task_runs_unasked_in_read_only_mode_and_its_childs_calls_still_meet_the_mode() -> None:
    from sprout_agent.core.permissions import Policy

    loop, host = delegating(
        [
            reply(call("agent__task", description="a", prompt="go", subagent_type="general-purpose")),
            child_reply("general-purpose", call("dev__bash", command="rm -rf build")),
            child_reply("general-purpose", "refused"),
            reply("ok"),
        ],
        permit=Policy(PermissionMode.PLAN),
    )
    await loop.turn()
    assert result_text(loop) == (False, "refused")
    child_results = [b for m in loop.model.requests[2].messages for b in m.content if isinstance(b, ToolResult)]
    assert child_results[0].is_error and "read-only" in str(child_results[0].content)
    assert not host.calls_of("bash")


async def test_a_definitions_mcp_server_rule_names_all_of_that_servers_tools_as_in_claude_code() -> None:
    # `mcp__server` is the whole server in Claude Code's rules: in `disallowedTools` it was silently ignored.
    no_guard = AgentDefinition("no-guard", "d", "subagent no-guard", disallowed_tools=("mcp__guard",))
    only_guard = AgentDefinition("only-guard", "d", "subagent only-guard", tools=("mcp__guard",))
    for definition, expected in ((no_guard, ["dev__read"]), (only_guard, ["guard__lookup"])):
        loop, _host = delegating(
            [
                reply(call("agent__task", description="a", prompt="go", subagent_type=definition.name)),
                child_reply(definition.name, "ok"),
                reply("ok"),
            ],
            definitions=(definition,),
            dev=server(read=echo("path")),
            hooks={"lookup": echo("q")},
        )
        await loop.turn()
        assert [spec.name for spec in loop.model.requests[1].tools] == expected


async def test_the_apis_web_tools_reach_a_child_only_when_its_definition_names_them_or_names_no_tools() -> None:
    # With --web the API searches and fetches for the model: a reader limited to Read must not fetch URLs.
    searcher = AgentDefinition("searcher", "d", "subagent searcher", tools=("Read", "WebFetch"))
    offline = AgentDefinition("offline", "d", "subagent offline", disallowed_tools=("WebSearch",))
    web = {}
    for definition in (READER, searcher, offline, BUILTIN_AGENTS[0]):
        loop, _host = delegating(
            [
                reply(call("agent__task", description="a", prompt="go", subagent_type=definition.name)),
                child_reply(definition.name, "ok"),
                reply("ok"),
            ],
            definitions=(definition,),
        )
        await loop.turn()
        web[definition.name] = loop.model.requests[1].web
        assert not [e for e in loop.of(SubagentEvent) if isinstance(e.event, Notice)]  # WebFetch is no unknown tool
    assert web == {"reader": False, "searcher": True, "offline": False, BUILTIN_AGENTS[0].name: True}
