"""Permissions through the real CLI: --permission-mode auto | read-only | ask, --allow-tools, --deny-tools."""

from __future__ import annotations

import os
import select
import subprocess
import time
from pathlib import Path

import anyio
import pytest

from sprout_agent.messages import ToolUse
from sprout_agent.permissions import Decision, Policy
from sprout_agent.protocols import ToolSpec
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import (
    agent_command,
    agent_env,
    assert_history_valid,
    fake_server,
    read_log,
    result_text,
    run_agent,
    start_agent,
    tool_results,
    write_config,
)
from tests.test_repl import ANSI, Terminal

ECHO = tool_use("fake__echo", {"text": "hi"}, id="t_echo")
READ_ONLY = tool_use("fake__read_only", {}, id="t_ro")
ADD = tool_use("fake__add", {"a": 1, "b": 2}, id="t_add")


def results_by_id(fake: FakeAnthropic, request: int = 1) -> dict[str, tuple[bool, str]]:
    body = fake.requests[request].body
    assert_history_valid(body)
    return {block["tool_use_id"]: (bool(block.get("is_error")), result_text(block)) for block in tool_results(body)}


def called(log: Path) -> list[str]:
    return [entry["tool"] for entry in read_log(log)]


def run_calls(
    tmp_path: Path, uses: list[dict[str, object]], flags: list[str]
) -> tuple[dict[str, tuple[bool, str]], list[str]]:
    """One round of tool calls under `flags`: each call's (is_error, text), and the tools the server saw."""
    log = tmp_path / "calls.jsonl"
    with FakeAnthropic([reply(*uses), reply("done")]) as fake:
        run = run_agent(tmp_path, ["-p", "go", *flags], fake=fake, servers={"fake": fake_server(log=str(log))})
    assert run.code == 0, run.stderr
    return results_by_id(fake), called(log)


def test_auto_runs_every_tool(tmp_path: Path) -> None:
    results, calls = run_calls(tmp_path, [ECHO, READ_ONLY], [])
    assert results == {"t_echo": (False, "hi"), "t_ro": (False, "read only")}
    assert sorted(calls) == ["echo", "read_only"]


def test_read_only_refuses_unannotated_tools_and_runs_read_only_ones(tmp_path: Path) -> None:
    results, calls = run_calls(tmp_path, [ECHO, READ_ONLY], ["--permission-mode", "read-only"])
    refused, reason = results["t_echo"]
    assert refused
    assert "--permission-mode read-only" in reason and "--allow-tools fake__echo" in reason
    assert results["t_ro"] == (False, "read only")
    assert calls == ["read_only"]  # the refused call never reached the server


def test_deny_pattern_wins_over_allow_and_mode(tmp_path: Path) -> None:
    flags = ["--deny-tools", "fake__e*", "--allow-tools", "fake__echo,fake__add"]
    results, calls = run_calls(tmp_path, [ECHO, ADD], flags)
    assert results["t_echo"][0] and "denied by --deny-tools fake__e*" in results["t_echo"][1]
    assert results["t_add"] == (False, "3")
    assert calls == ["add"]


def test_allow_pattern_overrides_read_only(tmp_path: Path) -> None:
    results, calls = run_calls(tmp_path, [ECHO, ADD], ["--permission-mode", "read-only", "--allow-tools", "fake__ec*"])
    assert results["t_echo"] == (False, "hi")
    assert results["t_add"][0] and "read-only" in results["t_add"][1]
    assert calls == ["echo"]


def test_builtin_todo_write_counts_as_read_only_but_bash_does_not(tmp_path: Path) -> None:
    todos = [{"content": "plan", "status": "pending"}]
    script = [
        reply(
            tool_use("todo__todo_write", {"todos": todos}, id="t_todo"),
            tool_use("dev__bash", {"command": "touch made-by-bash"}, id="t_bash"),
        ),
        reply("done"),
    ]
    with FakeAnthropic(script) as fake:
        run = run_agent(
            tmp_path,
            ["-p", "plan", "--permission-mode", "read-only"],
            fake=fake,
            servers={},
            env={"SPROUT_AGENT_BUILTIN_SERVERS": "dev,todo"},
        )
    assert run.code == 0, run.stderr
    results = results_by_id(fake)
    assert not results["t_todo"][0], results["t_todo"]
    assert results["t_bash"][0] and "dev__bash may write or execute" in results["t_bash"][1]
    assert not (tmp_path / "made-by-bash").exists()


def test_ask_without_a_terminal_refuses_with_a_reason_and_never_blocks(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    config = write_config(tmp_path, {"fake": fake_server(log=str(log))})
    out_path, err_path = tmp_path / "out.txt", tmp_path / "err.txt"
    script = [reply(ECHO, READ_ONLY), reply("done")]
    with FakeAnthropic(script) as fake, out_path.open("w") as out, err_path.open("w") as err:
        args = ["--config", str(config), "-p", "go", "--permission-mode", "ask", "--allow-tools", "*read*"]
        # stdin is left open and never written: asking on it would block forever.
        process = start_agent(tmp_path, args, fake=fake, stdin=subprocess.PIPE, stdout=out, stderr=err)
        try:
            code = process.wait(timeout=60)
        finally:
            process.kill()
            assert process.stdin is not None
            process.stdin.close()
    assert code == 0, err_path.read_text()
    assert out_path.read_text() == "done\n"
    results = results_by_id(fake)
    refused, reason = results["t_echo"]
    assert refused
    assert reason == (
        "not approved: sprout-agent runs with --permission-mode ask and no terminal to ask; "
        "allow it with --allow-tools fake__echo"
    )
    assert results["t_ro"] == (False, "read only")  # allowed by the pattern, no question needed
    assert called(log) == ["read_only"]


class Screen:
    """Counts occurrences on a `Terminal` without the resets `expect` would need."""

    def __init__(self, term: Terminal) -> None:
        self.term = term

    def count(self, text: str) -> int:
        return ANSI.sub("", self.term.seen).count(text)

    def wait(self, text: str, times: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while self.count(text) < times:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"never saw {text!r} {times}x; screen:\n{ANSI.sub('', self.term.seen)[-2000:]}"
            ready, _, _ = select.select([self.term.master], [], [], remaining)
            if ready:
                self.term.seen += os.read(self.term.master, 65536).decode(errors="replace")


def test_ask_in_a_terminal_once_always_and_deny_with_a_reason(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    config = write_config(tmp_path, {"fake": fake_server(log=str(log))})
    script = [
        reply(tool_use("fake__echo", {"text": "one"}, id="t1")),
        reply(tool_use("fake__echo", {"text": "two"}, id="t2")),
        reply(tool_use("fake__echo", {"text": "three"}, id="t3")),
        reply(tool_use("fake__add", {"a": 1, "b": 2}, id="t4")),
        reply("finished"),
    ]
    with FakeAnthropic(script) as fake:
        args = agent_command(["--config", str(config), "--permission-mode", "ask"])
        term = Terminal(args, agent_env(tmp_path, fake), tmp_path)
        screen = Screen(term)
        try:
            term.expect("›")
            term.send("go\r")
            screen.wait("Run fake__echo?", 1)
            screen.wait("[n] no ›", 1)
            term.send("y\r")  # once
            screen.wait("Run fake__echo?", 2)
            screen.wait("[n] no ›", 2)
            term.send("a\r")  # always: the third echo runs without a question
            screen.wait("Run fake__add?", 1)
            screen.wait("[n] no ›", 3)
            term.send("n\r")
            screen.wait("why not?", 1)
            term.send("use mental arithmetic\r")
            screen.wait("finished", 1)
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
    last = results_by_id(fake, request=4)
    assert last["t3"] == (False, "three")
    assert last["t4"] == (True, "denied by the user: use mental arithmetic")


def test_ctrl_c_at_the_question_cancels_the_turn(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fake": fake_server()})
    script = [reply(tool_use("fake__echo", {"text": "one"}, id="t1")), reply("second answer")]
    with FakeAnthropic(script) as fake:
        args = agent_command(["--config", str(config), "--permission-mode", "ask"])
        term = Terminal(args, agent_env(tmp_path, fake), tmp_path)
        screen = Screen(term)
        try:
            term.expect("›")
            term.send("go\r")
            screen.wait("[n] no ›", 1)
            term.send("\x03")  # raw mode: Ctrl-C is a key here, not a signal
            screen.wait("cancelled", 1)
            term.send("again\r")
            screen.wait("second answer", 1)
            term.send("/exit\r")
        finally:
            code = term.close()
    assert code == 0, ANSI.sub("", term.seen)[-2000:]
    body = fake.requests[1].body
    assert_history_valid(body)
    (interrupted,) = tool_results(body)
    assert interrupted["tool_use_id"] == "t1" and interrupted["is_error"]


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

    async def ask(tool: ToolSpec, use: ToolUse) -> Decision:
        nonlocal open_questions
        open_questions += 1
        assert open_questions == 1, "two questions at once"
        asked.append(tool.name)
        await anyio.sleep(0.01)  # give the other calls a chance to barge in
        open_questions -= 1
        return next(answers)

    policy = Policy("ask", ask=ask)
    outcomes: dict[int, str | None] = {}

    async def call(index: int, name: str) -> None:
        outcomes[index] = await policy(spec(name), use_of(name))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            for index, name in enumerate(["dev__read", "dev__read", "dev__read"]):
                group.start_soon(call, index, name)
        assert await policy(spec("dev__bash"), use_of("dev__bash")) == "denied by the user: no shell today"
    assert asked == ["dev__read", "dev__bash"]  # the two waiting reads were covered by "always"
    assert outcomes == {0: None, 1: None, 2: None}


@pytest.mark.anyio
async def test_policy_order_deny_then_allow_then_mode() -> None:
    policy = Policy("read-only", allow=["git__*"], deny=["git__push"])
    assert await policy(spec("git__status"), use_of("git__status")) is None  # allowed although not declared read-only
    assert "denied by --deny-tools git__push" in (await policy(spec("git__push"), use_of("git__push")) or "")
    assert await policy(spec("dev__read", read_only=True), use_of("dev__read")) is None
    assert "may write or execute" in (await policy(spec("dev__bash", read_only=False), use_of("dev__bash")) or "")
    assert "not declared read-only" in (await policy(spec("other__thing"), use_of("other__thing")) or "")
