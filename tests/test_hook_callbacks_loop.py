"""Hook callbacks (core.hooks.program_callbacks) at the loop's hook points, in-process with a scripted model and
MCP hooks
in memory: an MCP hook and a callback on the same point both run, MCP first; they share `_Stop`'s budget; a call
whose input a callback changed is recorded as it ran. The SDK side (matchers, wire, output fields) is
tests/test_sdk_hooks.py."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from sprout_agent.core.hooks.program_callbacks import CallbackAnswer
from sprout_agent.core.messages import ToolUse
from tests.loop_doubles import (
    Behaviour,
    MemoryHost,
    answers,
    build_loop,
    call,
    default_server,
    hook_data,
    reply,
    server,
    tool,
)

pytestmark = pytest.mark.anyio
Answer = Callable[[Mapping[str, object]], CallbackAnswer]


class Callbacks:
    """A `HookCallbacks` answering each event with its function; every call is kept as (event, fields)."""

    def __init__(self, **events: Answer) -> None:
        self.events = events
        self.calls: list[tuple[str, dict[str, object]]] = []

    def wants(self, event: str, subject: str | None = None) -> bool:
        return event in self.events

    async def run(
        self, event: str, fields: Mapping[str, object], subject: str | None = None, tool_use_id: str | None = None
    ) -> list[CallbackAnswer]:
        self.calls.append((event, dict(fields)))
        return [self.events[event](fields)]


def with_hooks(**hooks: Behaviour) -> MemoryHost:
    made = {name: tool(value) for name, value in hooks.items()}
    return MemoryHost({"fake": {**default_server(), **server(**made)}})


async def test_an_mcp_hook_and_a_callback_on_one_point_both_run_and_the_mcp_hooks_answer_comes_first() -> None:
    host = with_hooks(_UserPromptSubmit=answers("from the server"))
    loop = build_loop([reply("ok")], host=host, hook_servers="*")
    loop.hooks.callbacks = Callbacks(UserPromptSubmit=lambda _: CallbackAnswer(context="from the sdk"))
    await loop.turn("hello")
    assert [(d["server"], d["text"]) for d in hook_data(loop.model.bodies[0])] == [
        ("fake", "from the server"),
        ("sdk", "from the sdk"),
    ]


async def test_stop_objections_from_a_server_and_a_callback_count_as_one_round_of_the_shared_budget() -> None:
    host = with_hooks(_Stop=answers(then="tests fail"))
    script = [reply("done"), reply(call("fake__echo", text="x")), reply("done again"), reply("unused")]
    loop = build_loop(script, host=host, hook_servers="*", stop_max_rejections=1)
    callbacks = Callbacks(Stop=lambda _: CallbackAnswer(block="lint fails"))
    loop.hooks.callbacks = callbacks
    result = await loop.turn()
    assert result.text == "done again" and len(loop.model.bodies) == 3  # the budget of one round was spent
    assert [(d["server"], d["text"]) for d in hook_data(loop.model.bodies[1])] == [
        ("fake", "tests fail"),
        ("sdk", "lint fails"),
    ]
    assert [fields["stop_hook_active"] for event, fields in callbacks.calls if event == "Stop"] == [False]


async def test_continue_false_at_stop_stops_even_when_an_mcp_hook_objects() -> None:
    host = with_hooks(_Stop=answers(then="not yet"))
    loop = build_loop([reply("done"), reply("unused")], host=host, hook_servers="*")
    loop.hooks.callbacks = Callbacks(Stop=lambda _: CallbackAnswer(stop="enough"))
    result = await loop.turn()
    assert result.stop_reason == "end_turn" and len(loop.model.bodies) == 1


async def test_a_callbacks_updated_input_runs_and_the_recorded_history_shows_the_call_as_it_ran() -> None:
    changed: dict[str, object] = {"text": "as changed"}
    loop = build_loop([reply(call("fake__echo", "t1", text="as asked")), reply("ok")])
    loop.hooks.callbacks = Callbacks(
        PreToolUse=lambda _: CallbackAnswer(updated_input=changed), PostToolUse=lambda _: CallbackAnswer()
    )
    await loop.turn()
    (ran,) = loop.host.calls_of("echo")
    assert ran.arguments == changed
    uses = [b for m in loop.recorder.history for b in m.content if isinstance(b, ToolUse)]
    assert uses == [ToolUse("t1", "fake__echo", changed)] and loop.recorder.resets == ["tool input updated"]
    post = next(fields for event, fields in loop.hooks.callbacks.calls if event == "PostToolUse")  # type: ignore[union-attr]
    assert post["tool_input"] == changed and post["tool_use_id"] == "t1"


async def test_pre_compact_callbacks_hear_the_trigger_and_the_focus_before_a_manual_compaction() -> None:
    loop = build_loop([reply("first"), reply("summary")])
    callbacks = Callbacks(PreCompact=lambda _: CallbackAnswer())
    loop.hooks.callbacks = callbacks
    await loop.turn()
    await loop.agent.compact("manual", focus="the tests")
    assert callbacks.calls == [("PreCompact", {"trigger": "manual", "custom_instructions": "the tests"})]


async def test_a_stop_callback_is_called_again_with_stop_hook_active_after_its_objection_until_it_lets_go() -> None:
    # As Claude Code does (programs block until their tests pass); the reply after the objection made no tool call.
    def until_active(fields: Mapping[str, object]) -> CallbackAnswer:
        return CallbackAnswer() if fields["stop_hook_active"] else CallbackAnswer(block="run the tests first")

    loop = build_loop([reply("done"), reply("really done"), reply("unused")], stop_max_rejections=3)
    loop.hooks.callbacks = callbacks = Callbacks(Stop=until_active)
    result = await loop.turn()
    assert result.text == "really done" and len(loop.model.bodies) == 2
    assert [fields["stop_hook_active"] for event, fields in callbacks.calls if event == "Stop"] == [False, True]


async def test_a_stop_callback_that_always_objects_is_bounded_by_the_objection_budget() -> None:
    loop = build_loop([reply(f"done {n}") for n in range(6)], stop_max_rejections=2)
    loop.hooks.callbacks = callbacks = Callbacks(Stop=lambda _: CallbackAnswer(block="never good enough"))
    result = await loop.turn()
    assert result.text == "done 2" and len(loop.model.bodies) == 3  # two objections honoured, then the end is taken
    assert len([event for event, _ in callbacks.calls if event == "Stop"]) == 2


async def test_an_mcp_stop_hook_is_not_asked_again_right_after_its_objection_the_specs_rule() -> None:
    host = with_hooks(_Stop=answers(then="keep going"))
    loop = build_loop([reply("done"), reply("done again"), reply("unused")], host=host, hook_servers="*")
    result = await loop.turn()
    assert result.text == "done again" and len(loop.model.bodies) == 2
