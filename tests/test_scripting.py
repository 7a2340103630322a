"""The scripting contract through the real CLI: stream-json and json output (every line checked against the
schema), stdin JSON lines, exit codes, and signals. Each event's record is checked in-process in
tests/test_loop_sinks.py, the headless face's rules (results, exit codes, stdin turns) in tests/test_headless.py;
these runs show what a real process writes, and where, through the CLI's own flags.
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
    API_KEY,
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
from tests.stream_schema import of_type, result_text, stream, texts, tool_results, types, valid_lines

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
    assert len({line["uuid"] for line in lines}) == len(lines)  # every line its own uuid
    assert API_KEY not in run.stdout  # init names where the key came from, never the key
    assert (init["type"], init["subtype"]) == ("system", "init")
    assert init["schema_version"] == 2 and init["cwd"] == str(tmp_path.resolve())
    assert init["mcp_servers"] == [
        {
            "name": "fake",
            "status": "connected",
            "state": "running",
            "transport": "stdio",
            "tools": 11,
            "hooks": 1,
            "error": "",
        }
    ]
    # The SDKs' names for MCP tools; the model keeps seeing ours.
    assert "mcp__fake__echo" in init["tools"] and "fake__echo" in init["model_tools"] and init["resumed"] is False
    assert init["permissionMode"] == "bypassPermissions" and init["apiKeySource"] == "ANTHROPIC_API_KEY"
    assert init["hooks"] == [{"server": "fake", "hook": "_Stop"}]
    started = of_type(lines, "tool_started")
    assert [(s["id"], s["name"], s["server"], s["tool"]) for s in started] == [
        ("toolu_1", "mcp__fake__echo", "fake", "echo"),
        ("toolu_2", "mcp__fake__add", "fake", "add"),
        ("toolu_3", "mcp__fake__fail", "fake", "fail"),
    ]
    assert started[1]["arguments"] == {"a": 2, "b": 3}
    results = tool_results(lines)
    assert result_text(results["toolu_1"]) == "one" and results["toolu_1"]["is_error"] is False
    assert result_text(results["toolu_2"]) == "5" and results["toolu_3"]["is_error"] is True
    finished = {f["id"]: f for f in of_type(lines, "tool_finished")}
    assert finished["toolu_2"]["server"] == "fake" and finished["toolu_3"]["is_error"] is True
    (called,) = of_type(lines, "hook_called")
    assert called.pop("uuid")
    assert called == {
        "type": "system",
        "subtype": "hook_called",
        "session_id": init["session_id"],
        "hook": "_Stop",
        "servers": ["fake"],
    }
    (objected,) = of_type(lines, "hook_objected")
    assert objected["server"] == "fake" and objected["text"] == "tests are still red"
    assert texts(lines) == ["Echoing.", "All done.", "Second try."]
    replies = of_type(lines, "assistant")
    assert len(replies) == 4 and [r["message"]["stop_reason"] for r in replies][-1] == "end_turn"
    assert all(r["message"]["id"].startswith("msg_") and r["message"]["usage"]["output_tokens"] > 0 for r in replies)
    assert types(lines).index("hook_objected") < types(lines).index("result")
    assert types(lines).count("result") == 1  # one prompt: its turn's result is the run's
    assert result["result"] == "Second try." and result["stop_reason"] == "end_turn" and result["subtype"] == "success"
    assert result["exit_code"] == 0 and result["is_error"] is False and result["errors"] == []
    assert result["session_id"] == init["session_id"] and result["num_turns"] == 4
    assert result["usage"]["input_tokens"] > 0 and result["usage"]["output_tokens"] > 0
    assert result["total_cost_usd"] > 0 and result["duration_ms"] > 0 and result["permission_denials"] == []
    (per_model,) = result["modelUsage"].values()
    assert per_model["costUSD"] == pytest.approx(result["total_cost_usd"])  # no compaction here: the same spend
    assert per_model["outputTokens"] == sum(r["message"]["usage"]["output_tokens"] for r in replies)
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
    assert result["exit_code"] == 3 and result["stop_reason"] == "max_turns" and result["num_turns"] == 2
    assert result["subtype"] == "error_max_turns" and result["is_error"] is True
    assert "fake__echo" in run.stderr and "⏺" in run.stderr  # -v: progress on stderr (its rule: test_headless.py)


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


def test_partial_messages_stream_the_raw_events_that_make_up_each_reply(tmp_path: Path) -> None:
    with FakeAnthropic([reply("Hello from the stream."), reply("Again.")]) as fake:
        run = run_agent(tmp_path, [*STREAM, "--include-partial-messages", "-p", "go"], fake=fake, servers={})
        without = run_agent(tmp_path, [*STREAM, "-p", "go"], fake=fake, servers={})
    assert run.code == 0, run.stderr
    lines = stream(run.stdout)
    events = [line["event"] for line in of_type(lines, "stream_event")]
    kinds = [event["type"] for event in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert {"content_block_start", "content_block_delta", "content_block_stop", "message_delta"} <= set(kinds)
    deltas = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assert deltas == texts(lines)[0] == "Hello from the stream."
    (assistant,) = of_type(lines, "assistant")
    assert events[0]["message"]["id"] == assistant["message"]["id"]  # the same response, whole after its events
    assert types(lines).index("assistant") > types(lines).index("stream_event")
    assert without.code == 0 and "stream_event" not in without.stdout  # off unless asked


def test_stream_json_in_and_out_gives_each_turn_its_result_and_a_bad_line_one_more(tmp_path: Path) -> None:
    stdin = "\n".join([user_line("one"), "{nope", user_line("never read")])
    with FakeAnthropic([reply("answer one")]) as fake:
        run = run_agent(tmp_path, [*STREAM, "--input-format", "stream-json"], fake=fake, servers={}, stdin=stdin)
    assert run.code == 2
    lines = stream(run.stdout)
    first, last = of_type(lines, "result")
    assert first["result"] == "answer one" and first["subtype"] == "success" and first["exit_code"] == 0
    assert last is lines[-1] and last["subtype"] == "error_during_execution" and last["exit_code"] == 2
    assert last["errors"][0].startswith("stdin line 2: not JSON")
    assert len(fake.requests) == 1
