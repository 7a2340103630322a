"""The scripting contract through the real CLI: stream-json and json output (every line checked against the
schema), stdin JSON lines, exit codes, and signals. Each event's record is checked in-process in
tests/test_loop_sinks.py, the headless face's rules (results, exit codes, stdin turns) in tests/test_headless.py;
these runs show what a real process writes, and where, through the CLI's own flags.
"""

from __future__ import annotations

import json
import os
import select
import signal
from pathlib import Path

import pytest

from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import (
    fake_server,
    pid_alive,
    read_log,
    run_agent,
    start_agent,
    wait_for,
    write_config,
)
from tests.stream_schema import of_type, stream, types, valid_lines

pytestmark = pytest.mark.e2e

STREAM = ["--output-format", "stream-json"]
JSON = ["--output-format", "json"]


def test_stream_json_is_init_then_events_then_result_through_tools_and_a_hook_objection(tmp_path: Path) -> None:
    script = [
        reply("Echoing.", tool_use("fake__echo", {"text": "one"}, id="toolu_1")),
        reply(tool_use("fake__add", {"a": 2, "b": 3}, id="toolu_2"), tool_use("fake__fail", id="toolu_3")),
        reply("All done."),
        reply("Second try."),
    ]
    servers = {"fake": fake_server(stop="tests are still red")}
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, [*STREAM, "-p", "go"], fake=fake, servers=servers, env={"MCP_HOOK_SERVERS": "fake"})
    assert run.code == 0, run.stderr
    lines = stream(run.stdout)
    init, result = lines[0], lines[-1]
    assert init["schema_version"] == 1 and init["cwd"] == str(tmp_path.resolve())
    assert init["servers"] == [
        {"name": "fake", "status": "running", "transport": "stdio", "tools": 11, "hooks": 1, "error": ""}
    ]
    assert "fake__echo" in init["tools"] and init["resumed"] is False
    assert init["hooks"] == [{"server": "fake", "hook": "_Stop"}]
    started = of_type(lines, "tool_started")
    assert [(s["id"], s["name"], s["server"], s["tool"]) for s in started] == [
        ("toolu_1", "fake__echo", "fake", "echo"),
        ("toolu_2", "fake__add", "fake", "add"),
        ("toolu_3", "fake__fail", "fake", "fail"),
    ]
    assert started[1]["arguments"] == {"a": 2, "b": 3}
    finished = {f["id"]: f for f in of_type(lines, "tool_finished")}
    assert finished["toolu_1"]["result"] == "one" and finished["toolu_1"]["is_error"] is False
    assert finished["toolu_2"]["result"] == "5" and finished["toolu_2"]["server"] == "fake"
    assert finished["toolu_3"]["is_error"] is True
    (called,) = of_type(lines, "hook_called")
    assert called == {"type": "hook_called", "session_id": init["session_id"], "hook": "_Stop", "servers": ["fake"]}
    (objected,) = of_type(lines, "hook_objected")
    assert objected["server"] == "fake" and objected["text"] == "tests are still red"
    assert [a["text"] for a in of_type(lines, "assistant")] == ["Echoing.", "All done.", "Second try."]
    assert len(of_type(lines, "model_response")) == 4
    (turn,) = of_type(lines, "turn_finished")
    assert turn["turns"] == 4 and turn["stop_reason"] == "end_turn"
    assert types(lines).index("hook_objected") < types(lines).index("turn_finished")
    assert result["result"] == "Second try." and result["stop_reason"] == "end_turn"
    assert result["exit_code"] == 0 and result["is_error"] is False and result["errors"] == []
    assert result["session_id"] == init["session_id"] and result["turns"] == 4
    assert result["usage"]["input_tokens"] > 0 and result["usage"]["output_tokens"] > 0
    assert result["cost_usd"] > 0 and result["duration_ms"] > 0
    assert "⏺" not in run.stderr  # progress stays off unless -v


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


def test_max_turns_is_exit_3_in_the_result(tmp_path: Path) -> None:
    script = [reply(tool_use("fake__echo", {"text": str(i)})) for i in range(3)]
    with FakeAnthropic(script) as fake:
        args = [*JSON, "-v", "--max-turns", "2", "-p", "go"]
        run = run_agent(tmp_path, args, fake=fake, servers={"fake": fake_server()})
    assert run.code == 3
    (result,) = valid_lines(run.stdout)
    assert result["exit_code"] == 3 and result["stop_reason"] == "max_turns" and result["turns"] == 2
    assert "fake__echo" in run.stderr and "⏺" in run.stderr  # -v: progress on stderr (its rule: test_headless.py)


def wait_until_gone(pid: int, timeout: float = 10) -> bool:
    """Blocks (bounded) until `pid` has exited: its pidfd turns readable then; no polling."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
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
            out, err = process.communicate(timeout=20)
        finally:
            process.kill()
    assert process.returncode == code, err
    lines = stream(out)
    result = lines[-1]
    assert result["exit_code"] == code and result["stop_reason"] == "interrupted"
    assert result["errors"] == [f"interrupted by {name}"]
    assert result["turns"] == 2  # the requests made before the signal are counted
    assert result["usage"]["output_tokens"] > 0  # and so are their responses
    started = [line["id"] for line in of_type(lines, "tool_started")]
    finished = {line["id"]: line for line in of_type(lines, "tool_finished")}
    assert started == ["t_spawn", "t_echo", "t_slow"] and set(finished) == set(started)  # each start has an end
    assert finished["t_slow"]["is_error"] and finished["t_slow"]["result"].startswith("interrupted")
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
