"""The scripting contract where only a real CLI process shows it: the exit status of a config error, of empty
stdin, of a malformed stdin line and of servers that never came up; a signal mid-turn (the result flushed, no
process left); stdout and stderr kept apart; the json result piped to jq. The shapes of the stream-json and json
lines (init, events, results, partial messages, stdin turns) are checked in-process: each event's record in
tests/test_loop_sinks.py and tests/test_stream_shapes.py, whole runs of the headless face in tests/test_headless.py.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import (
    agent_command,
    agent_env,
    fake_server,
    pid_alive,
    read_log,
    run_agent,
    start_agent,
    wait_for,
    write_config,
)
from tests.stream_schema import of_type, result_text, stream, tool_results, types, valid_lines

pytestmark = pytest.mark.e2e

STREAM = ["--output-format", "stream-json"]
JSON = ["--output-format", "json"]


@pytest.mark.parametrize("fmt", ["json", "stream-json"])
def test_config_error_is_exit_2_with_a_result_object(tmp_path: Path, fmt: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {"x": ')
    run = run_agent(tmp_path, ["--output-format", fmt, "--config", str(bad), "-p", "go"], fake=None)
    assert run.code == 2
    (result,) = valid_lines(run.stdout)
    assert result["exit_code"] == 2 and result["session_id"] is None and result["stop_reason"] == "error"
    assert "bad.json" in result["errors"][0]
    assert len(run.stderr.strip().splitlines()) == 1


def test_empty_stdin_in_json_mode_is_exit_2_with_a_result(tmp_path: Path) -> None:
    run = run_agent(tmp_path, JSON, fake=None, servers={}, stdin="")
    assert run.code == 2
    (result,) = valid_lines(run.stdout)
    assert result["exit_code"] == 2 and "no prompt" in result["errors"][0]


def wait_until_gone(pid: int, timeout: float = 10) -> bool:
    """Blocks (bounded: `timeout`, scaled) until `pid` has exited: its pidfd turns readable then; no polling."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        ready, _, _ = select.select([fd], [], [], bounded(timeout))
        return bool(ready)
    finally:
        os.close(fd)


@pytest.mark.parametrize(("signum", "code", "name"), [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")])
def test_a_signal_mid_turn_flushes_the_result_and_leaves_no_process(
    tmp_path: Path, signum: int, code: int, name: str
) -> None:
    pidfile, log = tmp_path / "grandchild.pid", tmp_path / "calls.jsonl"
    hooks = {"_SessionEnd": ""}  # and the session still ends in order: _SessionEnd reaches its server
    config = write_config(tmp_path, {"fake": fake_server(grandchild_pidfile=str(pidfile), log=str(log), hooks=hooks)})
    script = [
        reply(tool_use("fake__spawn_grandchild", id="t_spawn")),
        reply(
            tool_use("fake__echo", {"text": "hi"}, id="t_echo"), tool_use("fake__slow", {"seconds": 60}, id="t_slow")
        ),
    ]
    with FakeAnthropic(script) as fake:
        args = ["--config", str(config), *STREAM, "-p", "go"]
        process = start_agent(tmp_path, args, fake=fake, env={"MCP_HOOK_SERVERS": "*"}, text=True)
        try:
            wait_for(lambda: len(read_log(log)) == 3, "the slow call reaching its server", process)
            grandchild = int(pidfile.read_text())
            assert pid_alive(grandchild)
            process.send_signal(signum)
            out, err = process.communicate(timeout=bounded(20))
        finally:
            process.kill()
    assert process.returncode == code, err
    lines = stream(out)
    result = lines[-1]
    assert result["exit_code"] == code and result["stop_reason"] == "interrupted"
    assert result["errors"] == [f"interrupted by {name}"]
    assert result["num_turns"] == 2  # the requests made before the signal are counted
    assert result["subtype"] == "error_during_execution" and types(lines).count("result") == 1
    assert result["usage"]["output_tokens"] > 0  # and so are their responses
    started = [line["id"] for line in of_type(lines, "tool_started")]
    finished = {line["id"]: line for line in of_type(lines, "tool_finished")}
    assert started == ["t_spawn", "t_echo", "t_slow"] and set(finished) == set(started)  # each start has an end
    results = tool_results(lines)
    assert set(results) == set(started)  # and each tool_use its tool_result
    assert finished["t_slow"]["is_error"] and results["t_slow"]["is_error"]
    assert result_text(results["t_slow"]).startswith("interrupted")
    assert types(lines).index("tool_finished") < len(lines) - 1  # before the result line
    assert wait_until_gone(grandchild), f"grandchild {grandchild} outlived the agent"
    assert [(c["tool"], c["arguments"].get("reason")) for c in read_log(log)[3:]] == [("_SessionEnd", "signal")]


def user_line(text: str) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}})


def test_stream_json_input_with_text_output_prints_each_answer_and_a_malformed_line_is_exit_2(tmp_path: Path) -> None:
    stdin = "\n".join(
        [
            user_line("one"),
            json.dumps({"type": "user", "message": {"role": "user", "content": "two"}}),
            '{"type": "assistant", "text": "no"}',
            user_line("never read"),
        ]
    )
    with FakeAnthropic([reply("answer one"), reply("answer two")]) as fake:
        run = run_agent(tmp_path, ["--input-format", "stream-json"], fake=fake, servers={}, stdin=stdin)
    assert run.code == 2
    assert run.stdout == "answer one\nanswer two\n"  # the turns before the bad line ran and printed
    assert len(fake.requests) == 2
    assert run.stderr.strip().splitlines()[-1].startswith("sprout-agent: stdin line 3:")


def test_a_run_ended_before_the_servers_were_up_is_a_lone_result_with_the_session_id(tmp_path: Path) -> None:
    servers = {"broken": fake_server(crash_on_start="1")}
    with FakeAnthropic([]) as fake:
        run = run_agent(tmp_path, [*STREAM, "--require-servers", "-p", "go"], fake=fake, servers=servers)
    assert run.code == 1
    (result,) = stream(run.stdout)
    assert result["exit_code"] == 1 and len(result["session_id"]) == 36 and "broken" in result["errors"][0]
    assert "broken" in run.stderr.strip().splitlines()[-1]  # --require-servers: the failed server is fatal
    assert fake.requests == []


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")
def test_json_output_piped_to_jq_gives_the_cost_the_turns_and_the_subtype(tmp_path: Path) -> None:
    script = [reply(tool_use("fake__echo", {"text": "one"})), reply("Done.")]
    config = write_config(tmp_path, {"fake": fake_server()})
    with FakeAnthropic(script) as fake:
        agent = subprocess.Popen(
            agent_command(["--config", str(config), *JSON, "-p", "go"]),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=agent_env(tmp_path, fake),
            cwd=tmp_path,
        )
        assert agent.stdout is not None
        try:
            jq = subprocess.run(
                ["jq", "-r", ".total_cost_usd, .num_turns, .subtype, .is_error"],
                stdin=agent.stdout,
                capture_output=True,
                text=True,
                timeout=bounded(60),
            )
            assert agent.wait(timeout=bounded(30)) == 0
        finally:
            agent.kill()
            agent.stdout.close()
    assert jq.returncode == 0, jq.stderr
    cost, turns, subtype, is_error = jq.stdout.split()
    assert float(cost) > 0 and turns == "2" and subtype == "success" and is_error == "false"


def test_progress_on_a_piped_stderr_keeps_each_line_whole(tmp_path: Path) -> None:
    rule = "fake__echo(only when the text is about the weather)"  # a rule we cannot check: a long warning line
    with FakeAnthropic([reply("done")]) as fake:
        run = run_agent(tmp_path, ["--allowedTools", rule, "-p", "go"], fake=fake)
    assert run.code == 0, run.stderr
    (line,) = [line for line in run.stderr.splitlines() if "cannot be checked" in line]  # one line, not wrapped
    assert rule in line and line.rstrip().endswith("(the tool still asks)") and len(line) > 100
