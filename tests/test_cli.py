"""The spine through the real CLI: config → MCP servers → fake Claude → tools → answer."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.fake_anthropic import FakeAnthropic, cut, error, hang, reply, stream_error, tool_use
from tests.harness import (
    API_KEY,
    ROOT,
    agent_command,
    agent_env,
    assert_history_valid,
    fake_server,
    pid_alive,
    read_log,
    result_text,
    run_agent,
    start_agent,
    tool_names,
    tool_results,
    wait_for,
    write_config,
)


def test_version_and_help_exit_zero(tmp_path: Path) -> None:
    version = run_agent(tmp_path, ["--version"], fake=None)
    assert version.code == 0 and version.stdout.startswith("sprout-agent ")
    helped = run_agent(tmp_path, ["--help"], fake=None)
    assert helped.code == 0 and "--prompt" in helped.stdout


def test_one_shot_prints_only_the_final_answer_on_stdout(tmp_path: Path) -> None:
    with FakeAnthropic([reply("The answer is **42**.")]) as fake:
        run = run_agent(tmp_path, ["-p", "what is it?"], fake=fake, servers={})
    assert run.code == 0, run.stderr
    assert run.stdout == "The answer is **42**.\n"
    body = fake.requests[0].body
    assert body["messages"][0]["content"][0]["text"] == "what is it?"
    assert "Working directory:" in body["system"][0]["text"]
    assert fake.requests[0].headers["authorization"] == f"Bearer {API_KEY}"


def test_piped_stdin_is_the_prompt(tmp_path: Path) -> None:
    with FakeAnthropic([reply("piped ok")]) as fake:
        run = run_agent(tmp_path, [], fake=fake, servers={}, stdin="from the pipe\n")
    assert run.code == 0, run.stderr
    assert run.stdout == "piped ok\n"
    assert fake.requests[0].body["messages"][0]["content"][0]["text"] == "from the pipe\n"


def test_prompt_flag_never_waits_on_an_open_stdin(tmp_path: Path) -> None:
    config = write_config(tmp_path, {})
    with FakeAnthropic([reply("done")]) as fake:
        process = subprocess.Popen(
            agent_command(["--config", str(config), "-p", "hi"]),
            stdin=subprocess.PIPE,  # left open: a reader would block forever
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=agent_env(tmp_path, fake),
            cwd=tmp_path,
        )
        try:
            out, _ = process.communicate(timeout=60)
        finally:
            process.kill()
    assert process.returncode == 0
    assert out == b"done\n"


def test_multi_round_tool_loop_feeds_results_back(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    script = [
        reply("Echoing.", tool_use("fake__echo", {"text": "one"})),
        reply(tool_use("fake__add", {"a": 2, "b": 3})),
        reply("All done."),
    ]
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, servers={"fake": fake_server(log=str(log))})
    assert run.code == 0, run.stderr
    assert run.stdout == "All done.\n"
    assert "fake__echo" in tool_names(fake.requests[0].body)
    results = tool_results(fake.requests[2].body)
    assert [result_text(r) for r in results] == ["one", "5"]
    assert [entry["tool"] for entry in read_log(log)] == ["echo", "add"]
    assert "fake__echo" in run.stderr and "ok" in run.stderr  # the compact tool line
    for request in fake.requests:
        assert_history_valid(request.body)


def test_parallel_calls_run_together_and_answer_in_call_order(tmp_path: Path) -> None:
    script = [
        reply(
            tool_use("fake__slow", {"seconds": 0.6}, id="toolu_a"),
            tool_use("fake__echo", {"text": "fast"}, id="toolu_b"),
            tool_use("fake__slow", {"seconds": 0.6}, id="toolu_c"),
        ),
        reply("ok"),
    ]
    log = tmp_path / "calls.jsonl"
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, servers={"fake": fake_server(log=str(log))})
    assert run.code == 0, run.stderr
    results = tool_results(fake.requests[1].body)
    assert [r["tool_use_id"] for r in results] == ["toolu_a", "toolu_b", "toolu_c"]
    assert [result_text(r) for r in results] == ["done", "fast", "done"]
    # Both slow calls reached the server before either finished: they ran concurrently.
    assert len(read_log(log)) == 3


def test_tool_errors_and_unknown_tools_become_results_the_model_reads(tmp_path: Path) -> None:
    script = [
        reply(tool_use("fake__fail"), tool_use("nope__missing", {"x": 1})),
        reply("recovered"),
    ]
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, servers={"fake": fake_server()})
    assert run.code == 0, run.stderr
    failed, unknown = tool_results(fake.requests[1].body)
    assert failed["is_error"] is True
    assert unknown["is_error"] is True and "unknown tool: nope__missing" in result_text(unknown)


def test_a_server_that_fails_to_start_is_reported_and_the_session_goes_on(tmp_path: Path) -> None:
    servers = {
        "broken": fake_server(crash_on_start="1"),
        "missing": {"command": "/nonexistent/binary-xyz"},
        "fake": fake_server(),
    }
    with FakeAnthropic([reply("still here")]) as fake:
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, servers=servers)
    assert run.code == 0, run.stderr
    assert run.stdout == "still here\n"
    assert "broken" in run.stderr and "missing" in run.stderr
    names = tool_names(fake.requests[0].body)
    assert "fake__echo" in names and not any(n.startswith("broken__") for n in names)


def test_strict_mcp_config_makes_a_failed_server_fatal(tmp_path: Path) -> None:
    with FakeAnthropic([reply("unused")]) as fake:
        run = run_agent(
            tmp_path,
            ["--strict-mcp-config", "-p", "go"],
            fake=fake,
            servers={"broken": fake_server(crash_on_start="1")},
        )
    assert run.code == 1
    assert "broken" in run.stderr.strip().splitlines()[-1]
    assert fake.requests == []


def test_overloaded_api_is_retried_then_succeeds(tmp_path: Path) -> None:
    with FakeAnthropic([error(529), error(500), reply("third time")]) as fake:
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, servers={})
    assert run.code == 0, run.stderr
    assert run.stdout == "third time\n"
    assert len(fake.requests) == 3


def test_a_cut_stream_is_never_taken_as_an_answer(tmp_path: Path) -> None:
    with FakeAnthropic([cut("partial ans"), stream_error("x"), reply("whole answer")]) as fake:
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, servers={})
    assert run.code == 0, run.stderr
    assert run.stdout == "whole answer\n"


def test_a_final_api_failure_is_one_line_and_exit_1(tmp_path: Path) -> None:
    with FakeAnthropic([error(400, message="bad thing")]) as fake:
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, servers={})
    assert run.code == 1
    assert run.stdout == ""
    assert run.stderr.strip().splitlines()[-1].startswith("sprout-agent: API request failed: 400")


def test_max_tokens_is_reported_not_success(tmp_path: Path) -> None:
    with FakeAnthropic([reply("cut off", stop_reason="max_tokens")]) as fake:
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, servers={})
    assert run.code == 1
    assert "max_tokens" in run.stderr


def test_max_turns_stops_the_loop_with_its_own_exit_code(tmp_path: Path) -> None:
    script = [reply(tool_use("fake__echo", {"text": str(i)})) for i in range(3)]
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, ["--max-turns", "2", "-p", "go"], fake=fake, servers={"fake": fake_server()})
    assert run.code == 3
    assert len(fake.requests) == 2


def test_bad_config_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {"x": {"command": 3}}}')
    run = run_agent(tmp_path, ["--config", str(bad), "-p", "go"], fake=None)
    assert run.code == 2
    assert len(run.stderr.strip().splitlines()) == 1
    assert "bad.json" in run.stderr and "command" in run.stderr
    broken = tmp_path / "broken.json"
    broken.write_text("{nope")
    run = run_agent(tmp_path, ["--config", str(broken), "-p", "go"], fake=None)
    assert run.code == 2 and "line 1" in run.stderr


def test_missing_api_key_says_what_to_set(tmp_path: Path) -> None:
    run = run_agent(tmp_path, ["-p", "go"], fake=None, servers={}, env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 2
    assert "ANTHROPIC_API_KEY" in run.stderr


def test_servers_never_see_our_api_key(tmp_path: Path) -> None:
    script = [reply(tool_use("fake__env", {"name": "ANTHROPIC_API_KEY"})), reply("ok")]
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, servers={"fake": fake_server()})
    assert run.code == 0, run.stderr
    assert API_KEY not in json.dumps(fake.requests[1].body)


def test_sigint_mid_turn_exits_130_and_leaves_no_process(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    config = write_config(tmp_path, {"fake": fake_server(grandchild_pidfile=str(pidfile))})
    with FakeAnthropic([reply(tool_use("fake__spawn_grandchild")), hang()]) as fake:
        process = start_agent(tmp_path, ["--config", str(config), "-p", "go"], fake=fake)
        try:
            wait_for(lambda: len(fake.requests) == 2, "the second request", process)
            grandchild = int(pidfile.read_text())
            assert pid_alive(grandchild)
            process.send_signal(signal.SIGINT)
            process.communicate(timeout=20)
        finally:
            process.kill()
    assert process.returncode == 130
    deadline = time.monotonic() + 5
    while pid_alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(grandchild)


def test_real_mcp_server_time_through_the_loop(tmp_path: Path) -> None:
    binary = shutil.which("mcp-server-time") or str(Path(ROOT / ".venv/bin/mcp-server-time"))
    if not Path(binary).exists():
        pytest.skip("mcp-server-time is not installed (pip install -e '.[dev]' installs it)")
    script = [reply(tool_use("time__get_current_time", {"timezone": "UTC"})), reply("it is now")]
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, ["-p", "time?"], fake=fake, servers={"time": {"command": binary}})
    assert run.code == 0, run.stderr
    (result,) = tool_results(fake.requests[1].body)
    assert not result.get("is_error") and "UTC" in result_text(result)


def test_real_server_everything_through_the_loop(tmp_path: Path) -> None:
    binary = ROOT / ".ci/peers/node_modules/.bin/mcp-server-everything"
    if not binary.exists():
        pytest.skip("@modelcontextprotocol/server-everything is not installed (.ci/run installs it)")
    script = [reply(tool_use("everything__echo", {"message": "hello there"})), reply("echoed")]
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, ["-p", "echo"], fake=fake, servers={"everything": {"command": str(binary)}})
    assert run.code == 0, run.stderr
    (result,) = tool_results(fake.requests[1].body)
    assert "hello there" in result_text(result)
