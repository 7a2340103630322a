"""The CLI as a process, for what only a process shows: exit codes, the answer on stdout and progress on
stderr, stdin (piped, or open and never read), servers that fail to start, secrets kept from servers, and
real third-party MCP servers. The loop's rules are tested in-process in tests/test_loop.py; signals and the
JSON output contracts in tests/test_scripting.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, error, reply, tool_use
from tests.harness import (
    API_KEY,
    ROOT,
    fake_server,
    read_log,
    result_text,
    run_agent,
    start_agent,
    tool_names,
    tool_results,
    write_config,
)

pytestmark = pytest.mark.e2e


def test_version_and_help_exit_zero(tmp_path: Path) -> None:
    version = run_agent(tmp_path, ["--version"], fake=None)
    assert version.code == 0 and version.stdout.startswith("sprout-agent ")
    helped = run_agent(tmp_path, ["--help"], fake=None)
    assert helped.code == 0 and "--prompt" in helped.stdout


def test_one_shot_answers_on_stdout_progress_on_stderr_and_never_reads_an_open_stdin(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    config = write_config(tmp_path, {"fake": fake_server(log=str(log))})
    out_path, err_path = tmp_path / "out.txt", tmp_path / "err.txt"
    calls = [tool_use("fake__echo", {"text": "hi"}, id="t_echo"), tool_use("fake__read_only", id="t_ro")]
    script = [reply(*calls), reply("The answer is **42**.")]
    args = ["--config", str(config), "-p", "what is it?", "--permission-mode", "ask", "--allow-tools", "*read*"]
    with FakeAnthropic(script) as fake, out_path.open("w") as out, err_path.open("w") as err:
        # stdin is left open and never written: reading the prompt or asking a question on it would block.
        process = start_agent(tmp_path, args, fake=fake, stdin=subprocess.PIPE, stdout=out, stderr=err)
        try:
            code = process.wait(timeout=bounded(60))
        finally:
            process.kill()
            assert process.stdin is not None
            process.stdin.close()
    stderr = err_path.read_text()
    assert code == 0, stderr
    assert out_path.read_text() == "The answer is **42**.\n"
    first = fake.requests[0]
    assert first.body["messages"][0]["content"][0]["text"] == "what is it?"
    assert "Working directory:" in first.body["system"][0]["text"]
    assert first.headers["authorization"] == f"Bearer {API_KEY}"
    results = {r["tool_use_id"]: (bool(r.get("is_error")), result_text(r)) for r in tool_results(fake.requests[1].body)}
    assert results["t_echo"] == (
        True,
        "not approved: sprout-agent runs with --permission-mode ask and no terminal to ask; "
        "allow it with --allow-tools fake__echo",
    )
    assert results["t_ro"] == (False, "read only")  # allowed by the pattern, no question needed
    assert [entry["tool"] for entry in read_log(log)] == ["read_only"]
    assert "fake__read_only" in stderr and "2 requests; tokens in" in stderr  # tool line and ledger summary


def test_piped_stdin_is_the_prompt_and_a_max_tokens_stop_is_exit_1(tmp_path: Path) -> None:
    with FakeAnthropic([reply("cut off", stop_reason="max_tokens")]) as fake:
        run = run_agent(tmp_path, [], fake=fake, servers={}, stdin="from the pipe\n")
    assert fake.requests[0].body["messages"][0]["content"][0]["text"] == "from the pipe\n"
    assert run.code == 1  # an answer cut at max_tokens is reported, not taken as success
    assert run.stdout == "cut off\n"
    assert "stopped: max_tokens" in run.stderr


def test_failed_servers_are_reported_the_session_goes_on_and_no_server_sees_our_api_key(tmp_path: Path) -> None:
    servers: dict[str, dict[str, Any]] = {
        "broken": fake_server(crash_on_start="1"),
        "missing": {"command": "/nonexistent/binary-xyz"},
        "fake": fake_server(),
    }
    script = [reply(tool_use("fake__env", {"name": "ANTHROPIC_API_KEY"})), reply("still here")]
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, servers=servers)
    assert run.code == 0, run.stderr
    assert run.stdout == "still here\n"
    assert "broken" in run.stderr and "missing" in run.stderr
    names = tool_names(fake.requests[0].body)
    assert "fake__echo" in names and not any(n.startswith("broken__") for n in names)
    (env_result,) = tool_results(fake.requests[1].body)
    assert result_text(env_result) == "<unset>"
    assert API_KEY not in json.dumps(fake.requests[1].body)


def test_a_final_api_failure_is_one_line_and_exit_1(tmp_path: Path) -> None:
    with FakeAnthropic([error(400, message="bad thing")]) as fake:
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, servers={})
    assert run.code == 1
    assert run.stdout == ""
    assert run.stderr.strip().splitlines()[-1].startswith("sprout-agent: API request failed: 400")


def test_bad_config_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {"x": {"command": 3}}}')
    # A bad server definition skips that server (a notice); --require-servers makes it fatal.
    run = run_agent(tmp_path, ["--config", str(bad), "--require-servers", "-p", "go"], fake=None)
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


@pytest.mark.slow
def test_real_third_party_mcp_servers_through_the_loop(tmp_path: Path) -> None:
    time_binary = shutil.which("mcp-server-time") or str(ROOT / ".venv/bin/mcp-server-time")
    everything = ROOT / ".ci/peers/node_modules/.bin/mcp-server-everything"
    servers: dict[str, dict[str, Any]] = {}
    calls: list[dict[str, Any]] = []
    if Path(time_binary).exists():
        servers["time"] = {"command": time_binary}
        calls.append(tool_use("time__get_current_time", {"timezone": "UTC"}, id="t_time"))
    if everything.exists():
        servers["everything"] = {"command": str(everything)}
        calls.append(tool_use("everything__echo", {"message": "hello there"}, id="t_everything"))
    if not servers:
        pytest.skip("no peer installed: pip install -e '.[dev]' (mcp-server-time), .ci/run (server-everything)")
    with FakeAnthropic([reply(*calls), reply("it is now")]) as fake:
        run = run_agent(tmp_path, ["-p", "time and echo?"], fake=fake, servers=servers)
    assert run.code == 0, run.stderr
    results = {r["tool_use_id"]: r for r in tool_results(fake.requests[1].body)}
    if "time" in servers:
        assert not results["t_time"].get("is_error") and "UTC" in result_text(results["t_time"])
    if "everything" in servers:
        assert "hello there" in result_text(results["t_everything"])
