"""`sprout-agent mcp list`, `mcp doctor` and `hooks` against real server processes: the commands run in the
test's process (what the CLI calls after parsing), and the CLI itself as a process for what only a process
shows (it never imports anthropic, and needs no API key)."""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.core.errors import UsageError, exit_code_of
from sprout_agent.faces.cli.commands import doctor as doctor_module
from sprout_agent.session.prepared import prepare
from tests.bounds import bounded
from tests.harness import ROOT, Run, agent_env, fake_server, pid_alive, write_config

pytestmark = pytest.mark.e2e

MISSING = "sprout-no-such-command"
# Variables of the test's own environment that would reach the setup and that the CLI runs never saw.
_OURS = ("SPROUT_", "MCP_", "ANTHROPIC_", "XDG_", "FAKE_MCP_")


def command_here(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    servers: dict[str, dict[str, object]],
    command: Callable[[doctor_module.Setup], int],
    env: dict[str, str] | None = None,
) -> Run:
    """What `sprout-agent --config mcp-config.json <command>` does after parsing, in the test's process, with
    run_agent's environment (built-in servers off unless `env` says otherwise)."""
    for name in [name for name in os.environ if name.startswith(_OURS)]:
        monkeypatch.delenv(name)
    for name, value in agent_env(tmp_path, None, env).items():
        monkeypatch.setenv(name, value)
    where = Locations.for_user()
    setup = doctor_module.load_setup((write_config(tmp_path, servers),), tmp_path, where.config, where.data, False)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = command(setup)
    return Run(code, out.getvalue(), err.getvalue())


def doctor(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    servers: dict[str, dict[str, object]],
    *,
    timeout: float | None = None,
    as_json: bool = False,
    **env: str,
) -> Run:
    def run(setup: doctor_module.Setup) -> int:
        return doctor_module.doctor_command(setup, timeout, as_json)

    return command_here(tmp_path, monkeypatch, servers, run, env)


def test_doctor_reports_a_healthy_server_with_timings_tools_and_hooks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    servers = {"fake": fake_server(tools="echo,read_only", stop="")}
    run = doctor(tmp_path, monkeypatch, servers, MCP_HOOK_SERVERS="fake")
    assert run.code == 0, run.stdout + run.stderr
    assert "[ok] fake  (mcp-config.json)" in run.stdout
    assert "tools (2): echo, read_only" in run.stdout
    assert "hooks: _Stop (active)" in run.stdout
    assert "1 of 1 servers OK" in run.stdout

    as_json = doctor(tmp_path, monkeypatch, servers, as_json=True)  # MCP_HOOK_SERVERS unset: hooks found but off
    assert as_json.code == 0, as_json.stderr
    (report,) = json.loads(as_json.stdout)["servers"]
    assert report["ok"] and report["state"] == "running"
    assert report["tools"] == ["echo", "read_only"] and report["hooks"] == ["_Stop"]
    assert report["hooks_active"] is False
    assert report["initialize_seconds"] > 0 and report["list_seconds"] >= 0


def test_doctor_reports_a_missing_command_and_still_checks_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = doctor(tmp_path, monkeypatch, {"gone": {"command": MISSING}, "fake": fake_server(tools="echo")})
    assert run.code == 1
    assert f"[FAIL] gone  (mcp-config.json)  {MISSING}" in run.stdout
    assert f"missing command: command not found on PATH: {MISSING}" in run.stdout
    assert "[ok] fake" in run.stdout
    assert "1 of 2 servers OK, 1 failed" in run.stdout


def test_doctor_bounds_a_hanging_server_by_the_timeout_and_kills_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pidfile = tmp_path / "grandchildren.txt"
    servers = {"hang": fake_server(hang_on_start=1, grandchild_pidfile=str(pidfile))}
    limit = math.ceil(bounded(2))  # 2 s, scaled: its stderr must have come by then
    run = doctor(tmp_path, monkeypatch, servers, timeout=limit)
    assert run.code == 1
    assert "[FAIL] hang" in run.stdout
    assert f"failed: no answer within {limit} s" in run.stdout  # --timeout ended it, not the 30 s default
    assert "| fake: hanging before the handshake" in run.stdout  # the tail of its stderr
    grandchild = int(pidfile.read_text().split()[0])
    assert not pid_alive(grandchild)  # its whole process group went with it


def test_doctor_shows_the_stderr_tail_of_a_crashing_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = doctor(tmp_path, monkeypatch, {"crashy": fake_server(crash_on_start=1)})
    assert run.code == 1
    assert "failed: exited with code 3" in run.stdout
    assert "| fake: fatal: cannot start (FAKE_MCP_CRASH_ON_START)" in run.stdout


def test_doctor_reports_unset_variables_per_server_instead_of_aborting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unset = {"command": "${SPROUT_T_CMD:-echo}", "args": ["${SPROUT_T_A}"], "env": {"K": "${SPROUT_T_B}"}}
    run = doctor(tmp_path, monkeypatch, {"needs_vars": unset, "fake": fake_server(tools="echo")})
    assert run.code == 1
    assert "unset variables: ${SPROUT_T_A}, ${SPROUT_T_B}" in run.stdout
    assert "config error: mcp-config.json: mcpServers.needs_vars.args[0]: variable SPROUT_T_A is not set" in run.stdout
    assert "[ok] fake" in run.stdout
    # A run skips that server with a notice; with --require-servers it fails fast (exit 2) before anything starts
    # (a config error's one line and exit 2 from the process: tests/test_cli.py).
    config = write_config(tmp_path, {"needs_vars": unset})
    strict = Options(prompt="hi", config_files=(config,), require_servers=True)
    with pytest.raises(UsageError, match="variable SPROUT_T_A is not set") as raised:
        prepare(strict, Locations.for_user(), agent_env(tmp_path, None))
    assert exit_code_of(raised.value) == 2


def listing(as_json: bool) -> Callable[[doctor_module.Setup], int]:
    return lambda setup: doctor_module.list_command(setup, as_json)


def test_mcp_list_shows_builtin_and_configured_servers_and_their_origin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    servers = {"fake": fake_server(), "gone": {"command": MISSING, "args": ["--flag"]}}
    env = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev,todo"}
    run = command_here(tmp_path, monkeypatch, servers, listing(False), env)
    assert run.code == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == f"dev  (built in)  {sys.executable} -m sprout_agent.tools.dev"
    assert lines[1] == f"todo  (built in)  {sys.executable} -m sprout_agent.tools.todo"
    assert lines[3] == f"gone  (mcp-config.json)  {MISSING} --flag"  # listing starts nothing

    as_json = command_here(tmp_path, monkeypatch, servers, listing(True), env)
    data = json.loads(as_json.stdout)
    assert [(s["name"], s["source"]) for s in data["servers"]] == [
        ("dev", "built in"),
        ("todo", "built in"),
        ("fake", "mcp-config.json"),
        ("gone", "mcp-config.json"),
    ]
    assert data["files_read"] == [str(tmp_path / "mcp-config.json")]

    no_builtins = command_here(tmp_path, monkeypatch, {}, listing(False))  # harness: builtins none
    assert no_builtins.code == 0 and no_builtins.stdout == "no MCP servers configured\n"


def test_hooks_lists_every_hook_and_whether_it_is_active(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    servers = {
        "first": fake_server(tools="echo", stop="", postcompact="x"),
        "second": fake_server(tools="echo", stop=""),
    }

    def hooks(setup: doctor_module.Setup) -> int:
        return doctor_module.hooks_command(setup, None, False)

    run = command_here(tmp_path, monkeypatch, servers, hooks, {"MCP_HOOK_SERVERS": "first"})
    assert run.code == 0, run.stderr
    assert run.stdout.splitlines() == [
        "first  _Stop  active",
        "first  _PostCompact  active",
        "second  _Stop  inactive",
    ]


@pytest.mark.slow
def test_doctor_needs_no_api_key_and_never_imports_anthropic(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fake": fake_server(tools="echo")})
    env = agent_env(tmp_path, None, {"ANTHROPIC_API_KEY": ""})
    for command in (["mcp", "list"], ["mcp", "doctor"], ["hooks"]):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "sprout_agent", *command, "--config", str(config)],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=bounded(60),
        )
        assert done.returncode == 0, done.stderr[-2000:]
        imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
        assert "sprout_agent.faces.cli.commands.doctor" in imported
        assert not any(name.split(".")[0] == "anthropic" for name in imported), command


def test_a_fresh_install_passes_mcp_doctor_and_hooks_test_with_the_session_only_agent_server_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 45: in an empty directory, with the built-in servers, both checks said FAIL for the `agent` server,
    which only a running session can serve; a CI gate running either always failed."""
    from sprout_agent.faces.cli.commands.hooks_test import hooks_test_command

    builtins = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev,todo,agent"}
    run = doctor(tmp_path, monkeypatch, {}, SPROUT_AGENT_BUILTIN_SERVERS=builtins["SPROUT_AGENT_BUILTIN_SERVERS"])
    assert run.code == 0, run.stdout
    assert "[skip] agent  (built in)" in run.stdout
    assert "session only: serves a running session's subagents and skills" in run.stdout
    assert "2 of 3 servers OK, 1 only inside a session (not started)" in run.stdout
    as_json = doctor(tmp_path, monkeypatch, {}, as_json=True, SPROUT_AGENT_BUILTIN_SERVERS="dev,todo,agent")
    assert as_json.code == 0 and json.loads(as_json.stdout)["ok"] is True
    tested = command_here(tmp_path, monkeypatch, {}, lambda s: hooks_test_command(s, (), None, False), builtins)
    assert tested.code == 0, tested.stdout + tested.stderr
    assert "[ok] todo  _Stop" in tested.stdout and "agent" not in tested.stdout + tested.stderr
