"""Permissions. The rules (modes, patterns, once/always/deny, nobody to ask) are tested in-process in
tests/test_loop.py; here the policy on its own, the built-in servers' annotations through the real server pool
(in-process), and on a real pseudo-terminal the question a person answers, Ctrl-C included.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from sprout_agent.core.events import Event
from sprout_agent.core.messages import ToolUse
from sprout_agent.core.permission_mode import PermissionMode
from sprout_agent.core.permissions import Decision, Policy
from sprout_agent.core.protocols import ToolSpec
from tests.api_rules import assert_valid_request
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import (
    agent_command,
    agent_env,
    fake_server,
    read_log,
    result_text,
    tool_results,
    write_config,
)
from tests.loop_doubles import build_loop, builtin_pool, call
from tests.loop_doubles import reply as model_reply
from tests.test_repl import ANSI, Terminal


def results_by_id(fake: FakeAnthropic, request: int = 1) -> dict[str, tuple[bool, str]]:
    body = fake.requests[request].body
    assert_valid_request(body)
    return {block["tool_use_id"]: (bool(block.get("is_error")), result_text(block)) for block in tool_results(body)}


@pytest.mark.anyio
async def test_builtin_todo_write_counts_as_read_only_but_bash_does_not(tmp_path: Path) -> None:
    todos = [{"content": "plan", "status": "pending"}]
    script = [
        model_reply(
            call("todo__todo_write", "t_todo", todos=todos),
            call("dev__bash", "t_bash", command="touch made-by-bash"),
        ),
        model_reply("done"),
    ]
    events: list[Event] = []
    with anyio.fail_after(bounded(30)):
        async with builtin_pool(tmp_path, events) as pool:
            loop = build_loop(script, host=pool, permit=Policy(PermissionMode.READ_ONLY))
            assert (await loop.turn("plan")).text == "done"
    results = loop.results(-2)
    assert not results["t_todo"][0], results["t_todo"]
    assert results["t_bash"][0] and "dev__bash may write or execute" in results["t_bash"][1]
    assert not (tmp_path / "made-by-bash").exists()


class Screen:
    """Reads a `Terminal` (bounded) and finds text after a marker, as a person reads the latest question."""

    def __init__(self, term: Terminal) -> None:
        self.term = term

    @property
    def text(self) -> str:
        return ANSI.sub("", self.term.seen)

    def count(self, text: str) -> int:
        return self.text.count(text)

    def wait(self, predicate: Callable[[str], bool], what: str, timeout: float = 30) -> None:
        self.term.wait_until(lambda: predicate(self.text), f"seeing {what}", timeout)  # the terminal answers CPRs

    def question(self, tool: str, times: int) -> None:
        """Waits until the `times`-th "Run <tool>?" is on screen with its answer prompt (raw mode is on then)."""
        marker = f"Run {tool}?"

        def asked(screen: str) -> bool:
            return screen.count(marker) >= times and "(Esc: no) ›" in screen.rsplit(marker, 1)[1]

        self.wait(asked, f"question {times} for {tool}")

    def after_last(self, marker: str, text: str) -> None:
        self.wait(lambda screen: marker in screen and text in screen.rsplit(marker, 1)[1], f"{text!r} after {marker!r}")


@pytest.mark.e2e
@pytest.mark.slow
def test_ask_in_a_terminal_once_always_deny_with_a_reason_and_ctrl_c_cancels_the_turn(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    config = write_config(tmp_path, {"fake": fake_server(log=str(log))})
    script = [
        reply(tool_use("fake__echo", {"text": "one"}, id="t1")),
        reply(tool_use("fake__echo", {"text": "two"}, id="t2")),
        reply(tool_use("fake__echo", {"text": "three"}, id="t3")),
        reply(tool_use("fake__add", {"a": 1, "b": 2}, id="t4")),
        reply("finished"),
        reply(tool_use("fake__add", {"a": 3, "b": 4}, id="t5")),
        reply("second answer"),
    ]
    with FakeAnthropic(script) as fake:
        args = agent_command(["--config", str(config), "--permission-mode", "ask"])
        term = Terminal(args, agent_env(tmp_path, fake), tmp_path)
        screen = Screen(term)
        try:
            term.expect("›")
            term.send("go\r")
            screen.question("fake__echo", 1)
            term.send("y")  # once: one key answers
            screen.question("fake__echo", 2)
            term.send("a")  # always: the third echo runs without a question
            screen.question("fake__add", 1)
            term.send("t")  # no, and tell the model why
            screen.after_last("Run fake__add?", "why not?")
            term.send("use mental arithmetic\r")
            screen.after_last("Run fake__add?", "finished")
            term.send("add more\r")
            screen.question("fake__add", 2)
            term.send("\x03")  # raw mode: Ctrl-C is a key here, not a signal
            screen.after_last("Run fake__add?", "cancelled")
            term.send("again\r")
            screen.after_last("Run fake__add?", "second answer")
            term.send("/exit\r")
        finally:
            code = term.close()
    assert code == 0, ANSI.sub("", term.seen)[-2000:]
    assert screen.count("Run fake__echo?") == 2
    assert [(e["tool"], e["arguments"]) for e in read_log(log)] == [
        ("echo", {"text": "one"}),
        ("echo", {"text": "two"}),
        ("echo", {"text": "three"}),
    ]
    denied = results_by_id(fake, request=4)
    assert denied["t3"] == (False, "three")
    assert denied["t4"] == (True, "denied by the user: use mental arithmetic")
    interrupted = results_by_id(fake, request=6)["t5"]
    assert interrupted[0] and "interrupted" in interrupted[1]


# ---------------------------------------------------------------- the policy on its own


def use_of(name: str) -> ToolUse:
    return ToolUse(f"call_{name}", name, {})


def spec(name: str, read_only: bool | None = None) -> ToolSpec:
    server, tool = name.split("__", 1)
    return ToolSpec(name, server, tool, "", {}, read_only)


@pytest.mark.anyio
async def test_parallel_questions_come_one_at_a_time_and_always_answers_the_waiting_ones() -> None:
    asked: list[str] = []
    open_questions = 0
    answers = iter([Decision("always"), Decision("deny", "no shell today")])

    async def ask(spec: ToolSpec, use: ToolUse, *, outside_sandbox: str | None = None) -> Decision:
        nonlocal open_questions
        open_questions += 1
        assert open_questions == 1, "two questions at once"
        asked.append(spec.name)
        for _ in range(3):  # let every other call run as far as it can: a second question would open now
            await anyio.lowlevel.checkpoint()
        open_questions -= 1
        return next(answers)

    policy = Policy(PermissionMode.ASK, ask=ask)
    outcomes: dict[int, str | None] = {}

    async def call(index: int, name: str) -> None:
        outcomes[index] = await policy(spec(name), use_of(name))

    with anyio.fail_after(bounded(10)):
        async with anyio.create_task_group() as group:
            for index, name in enumerate(["dev__read", "dev__read", "dev__read"]):
                group.start_soon(call, index, name)
        assert await policy(spec("dev__bash"), use_of("dev__bash")) == "denied by the user: no shell today"
    assert asked == ["dev__read", "dev__bash"]  # the two waiting reads were covered by "always"
    assert outcomes == {0: None, 1: None, 2: None}


@pytest.mark.anyio
async def test_policy_order_deny_then_allow_then_mode() -> None:
    policy = Policy(PermissionMode.READ_ONLY, allow=["git__*"], deny=["git__push"])
    assert await policy(spec("git__status"), use_of("git__status")) is None  # allowed although not declared read-only
    assert "denied by --deny-tools git__push" in (await policy(spec("git__push"), use_of("git__push")) or "")
    assert await policy(spec("dev__read", read_only=True), use_of("dev__read")) is None
    assert "may write or execute" in (await policy(spec("dev__bash", read_only=False), use_of("dev__bash")) or "")
    assert "not declared read-only" in (await policy(spec("other__thing"), use_of("other__thing")) or "")


@pytest.mark.anyio
async def test_claude_code_mode_names_map_onto_ours_and_switch_from_the_next_call() -> None:
    policy = Policy(PermissionMode.ACCEPT_EDITS)  # ask, with the edit tools allowed on top; nobody to ask here
    assert await policy(spec("dev__edit", read_only=False), use_of("dev__edit")) is None
    assert "not approved" in (await policy(spec("dev__bash", read_only=False), use_of("dev__bash")) or "")
    policy.set_mode("bypassPermissions")
    assert await policy(spec("dev__bash", read_only=False), use_of("dev__bash")) is None
    policy.set_mode("plan")
    assert "read-only" in (await policy(spec("dev__edit", read_only=False), use_of("dev__edit")) or "")
    with pytest.raises(ValueError, match="unknown permission mode 'yolo'"):
        policy.set_mode("yolo")
    assert policy.mode == "read-only"  # an unknown name changes nothing


@pytest.mark.anyio
async def test_the_time_a_person_takes_to_answer_is_not_the_tools_time() -> None:
    answered: list[float] = []

    async def slow_person(spec: ToolSpec, use: ToolUse, *, outside_sandbox: str | None = None) -> Decision:
        await anyio.sleep(0.2)  # a person thinking, not a synchronisation
        answered.append(time.monotonic())
        return Decision("once")

    loop = build_loop(
        [model_reply(call("fake__echo", "t1", text="hi")), model_reply("ok")],
        permit=Policy(PermissionMode.ASK, ask=slow_person),
    )
    await loop.turn()
    ended = time.monotonic()
    (finished,) = [e for e in loop.events if type(e).__name__ == "ToolFinished"]
    # Readings of one clock in order, not a speed: a tool clock started once the person answered fits between
    # the answer and the turn's end, however slow the machine; one started before the question would hold the
    # person's 0.2 s as well.
    assert answered and finished.seconds <= ended - answered[0]  # type: ignore[attr-defined]
