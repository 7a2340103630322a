"""The hook-author kit (`sprout-agent hooks test`): its verdicts against the examples of examples/ and a
deliberately bad server, run in-process through the real server pool; one e2e for the CLI's exit code and --json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from sprout_agent.config.files import ServerConfig
from sprout_agent.config.settings import child_environment
from sprout_agent.core.hooks.kit import HookReport, as_record, probe, report_lines
from sprout_agent.faces.cli.commands.doctor import load_setup
from sprout_agent.faces.cli.commands.hooks_test import hooks_test_command
from sprout_agent.mcp.pool import ServerPool
from tests.bounds import bounded
from tests.harness import fake_server, write_config
from tests.inproc_examples import config
from tests.loop_doubles import MemoryHost, answers, server, tool

pytestmark = pytest.mark.anyio


async def probed(cwd: Path, names: Sequence[str], timeout_ms: float = 2500) -> dict[tuple[str, str], HookReport]:
    """The kit's probe of `names`; each answer is awaited `timeout_ms` (scaled: a bound for the answering hooks)."""
    pool = ServerPool(
        [config(name, cwd) for name in names],
        emit=lambda event: None,
        start_timeout=bounded(30),
        tool_timeout=bounded(60),
        result_max_bytes=51_200,
        child_env=lambda env: child_environment(dict(os.environ), env),
    )
    with anyio.fail_after(bounded(30)):
        async with pool:
            reports = await probe(pool, int(bounded(timeout_ms)), str(cwd))
    return {(r.server, r.hook): r for r in reports}


def git_repo(path: Path) -> Path:
    path.mkdir()
    run = lambda *args: subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True)  # noqa: E731
    run("init", "-q", "-b", "feature-x")
    (path / "notes.txt").write_text("hello\n")
    return path


async def test_the_example_guard_objects_only_to_destructive_commands_and_protected_writes(tmp_path: Path) -> None:
    (report,) = (await probed(tmp_path, ["pre_tool_guard"])).values()
    assert report.verdict == "ok", report.problems + report.warnings
    assert report.declared == ["arguments", "cwd", "tool_name"] and report.undocumented == []
    meanings = {a.sample: a.meaning for a in report.answers}
    assert meanings == {
        "harmless command": "no objection",
        "destructive command": "objection",
        "write to .git": "objection",
        "{}": "no objection",
    }


@pytest.mark.e2e
async def test_the_example_session_start_injects_the_branch_and_the_status(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    (report,) = (await probed(repo, ["session_start_git"])).values()
    assert report.verdict == "ok", report.problems + report.warnings
    startup = next(a for a in report.answers if a.sample == "startup")
    assert startup.meaning == "injected" and "branch feature-x" in startup.text and "notes.txt" in startup.text


async def test_a_bad_server_fails_for_an_error_result_a_timeout_and_an_error_on_empty_input(tmp_path: Path) -> None:
    reports = await probed(tmp_path, ["bad"], timeout_ms=100)
    verdicts = {hook: r.verdict for (_, hook), r in reports.items()}
    assert verdicts == {"_Stop": "fail", "_PreToolUse": "fail", "_SessionStart": "fail", "_BeforeLunch": "warn"}
    pre = reports["bad", "_PreToolUse"]
    assert [a.outcome for a in pre.answers] == ["timeout"]  # one timeout is enough: no further calls
    assert reports["bad", "_Stop"].answers[0].outcome == "error"
    start = reports["bad", "_SessionStart"]
    assert start.undocumented == ["branch"] and start.answers[-1].outcome == "error"  # {} lacks it
    assert "never calls _BeforeLunch" in reports["bad", "_BeforeLunch"].warnings[0]
    record = as_record(list(reports.values()), {})
    assert record["ok"] is False
    assert any(line.startswith("[fail] bad  _Stop") for line in report_lines(list(reports.values()), {}))


async def test_a_non_object_input_schema_breaks_the_contract() -> None:
    host = MemoryHost({"odd": server(_Stop=tool(answers("")))})
    spec = host.tools()[0]
    object.__setattr__(spec, "input_schema", {"type": "string"})
    (report,) = await probe(host, 1000, "/tmp")
    assert report.verdict == "fail" and "not 'object'" in report.problems[0]


async def test_the_subagent_hooks_are_probed_with_their_samples_and_their_answers_read_as_the_agent_reads_them() -> (
    None
):
    block = '{"decision": "block", "reason": "no subagents here"}'
    start = tool(answers(block, "", then="use tabs"), properties={"agent_type": {"type": "string"}})
    host = MemoryHost({"guard": server(_SubagentStart=start, _SubagentStop=answers("run the tests"))})
    reports = {r.hook: r for r in await probe(host, 1000, "/tmp")}
    assert [a.meaning for a in reports["_SubagentStart"].answers] == [
        "refuses the subagent",
        "nothing to add",
        "injected",
    ]
    assert reports["_SubagentStart"].answers[0].arguments == {"agent_type": "Explore"}
    assert reports["_SubagentStop"].answers[0].meaning == "objection"
    assert all(r.verdict == "ok" for r in reports.values()), [r.warnings for r in reports.values()]


async def test_an_answer_over_the_cap_is_a_warning_naming_the_cap() -> None:
    host = MemoryHost({"long": server(_PostCompact=answers(then="x" * 20_000))})
    (report,) = await probe(host, 1000, "/tmp")
    assert report.verdict == "warn" and "16384" in report.warnings[0]


def test_hooks_test_starts_servers_as_a_run_does_so_a_hook_that_reads_the_roots_keeps_the_contract(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # One factory (session/server_pool.py) for a run, `mcp doctor` and `hooks test`: the roots, the unattended
    # answers, OAuth and the sandbox are offered alike. A probe without them failed a hook a run would keep.
    monkeypatch.setenv("SPROUT_AGENT_BUILTIN_SERVERS", "none")
    setup = load_setup((), tmp_path, tmp_path / "config", tmp_path / "data", False)
    # In-process, with a command as the built-in servers have (`hooks test` looks for it before starting).
    roots = ServerConfig(
        "roots", sys.executable, cwd=str(tmp_path), transport="in-process", in_process="tests.roots_hook_server"
    )
    setup = replace(setup, loaded=replace(setup.loaded, servers=(roots,)))
    code = hooks_test_command(setup, (), None, as_json=True)  # bounded by the start and hook timeouts
    record = json.loads(capsys.readouterr().out)
    assert code == 0, record
    (hook,) = record["hooks"]
    assert (hook["server"], hook["hook"], hook["verdict"]) == ("roots", "_SessionStart", "ok")
    assert f"working in {tmp_path.resolve().as_uri()}" in json.dumps(hook["answers"])


@pytest.mark.e2e  # real server processes (the stdlib fake: fast); the command itself runs in this process
def test_the_command_exits_1_with_json_when_a_hook_breaks_the_contract(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    servers = {"red": fake_server(tools="", stop_mode="error"), "fine": fake_server(tools="", stop="")}
    cfg = write_config(tmp_path, servers)
    monkeypatch.setenv("SPROUT_AGENT_BUILTIN_SERVERS", "none")
    monkeypatch.setenv("SPROUT_AGENT_HOOK_TIMEOUT_MS", "500")
    setup = load_setup((cfg,), tmp_path, tmp_path / "config", tmp_path / "data", False)
    assert hooks_test_command(setup, (), None, as_json=True) == 1
    record = json.loads(capsys.readouterr().out)
    assert {(h["server"], h["verdict"]) for h in record["hooks"]} == {("red", "fail"), ("fine", "ok")}
    assert hooks_test_command(setup, ["fine"], None, as_json=False) == 0
    assert "[ok] fine  _Stop" in capsys.readouterr().out
    assert hooks_test_command(setup, ["ghost"], None, as_json=False) == 2
    capsys.readouterr()
    crashing = write_config(tmp_path, {"broken": fake_server(crash_on_start="1")})
    setup = load_setup((crashing,), tmp_path, tmp_path / "config", tmp_path / "data", False)
    assert hooks_test_command(setup, (), None, as_json=False) == 1
    said = capsys.readouterr().out  # the server's own last words, as `mcp doctor` shows them
    assert "did not start: exited with code 3" in said and "| fake: fatal: cannot start" in said
