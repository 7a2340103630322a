"""The OS sandbox for dev__bash: the tool server in-process (real bwrap processes), the plan the agent makes
from flags and environment, and through the CLI what only a real agent process shows (its environ, exit 2)."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import pytest

from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.core.errors import UsageError
from sprout_agent.core.messages import ToolUse
from sprout_agent.core.permission_mode import PermissionMode
from sprout_agent.core.permissions import Policy
from sprout_agent.core.protocols import ToolSpec
from sprout_agent.session.prepared import prepare
from sprout_agent.trust import sandbox as _sandbox
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import API_KEY, call_tool, result_text, run_agent, tool_results
from tests.stream_schema import valid_lines

if TYPE_CHECKING:
    from mcp import Client

needs_bwrap = pytest.mark.skipif(
    _sandbox.probe() is not None, reason=f"no sandbox here: {_sandbox.probe()} (.ci/run installs bubblewrap)"
)
OUTSIDE = "/etc/sprout-sandbox-test-write"  # writable by root without the sandbox: the test removes it
ENV = {"ANTHROPIC_API_KEY": "sk-test", "SPROUT_AGENT_BUILTIN_SERVERS": "dev"}


async def sandboxed(root: Path, **env: str) -> AsyncIterator[Client]:
    from mcp import Client

    from sprout_agent.tools import dev

    async with Client(dev.create_server_in(str(root), env)) as client:
        yield client


@pytest.fixture
async def client(root: Path) -> AsyncIterator[Client]:
    async for c in sandboxed(root, SPROUT_DEV_SANDBOX="workspace-write"):
        yield c


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP listener on 127.0.0.1 (connects complete from the backlog; nothing needs to accept)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


@needs_bwrap
@pytest.mark.anyio
@pytest.mark.e2e
async def test_a_sandboxed_write_outside_the_workspace_is_denied_and_the_result_says_so(
    client: Client, root: Path
) -> None:
    try:
        error, text = await call_tool(client, "bash", command=f"touch inside && touch {OUTSIDE}")
        assert not os.path.exists(OUTSIDE)
    finally:
        Path(OUTSIDE).unlink(missing_ok=True)
    assert error and (root / "inside").exists()  # touch failed: exit 1, an error result
    assert f"[sandbox: write outside the writable roots denied: {OUTSIDE} (sandbox workspace-write" in text
    assert f"writable: {root} and a private /tmp" in text and text.endswith("[exit code: 1]")


@needs_bwrap
@pytest.mark.anyio
@pytest.mark.e2e
async def test_read_only_sandbox_denies_writes_in_the_workspace_but_keeps_a_private_tmp(root: Path) -> None:
    async for client in sandboxed(root, SPROUT_DEV_SANDBOX="read-only"):
        ok, said = await call_tool(client, "bash", command="echo kept > /tmp/t")
        assert not ok and said.startswith("(no output)\n[note: /tmp in this command is the sandbox's private /tmp")
        _, text = await call_tool(client, "bash", command="cat /tmp/t; touch inside")
        assert text.startswith("kept\n") and "write outside the writable roots denied" in text
        assert "writable: nothing and a private /tmp" in text and not (root / "inside").exists()


@needs_bwrap
@pytest.mark.anyio
@pytest.mark.e2e
async def test_a_deny_listed_key_in_home_cannot_be_read(
    client: Client, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = root / "home"  # inside the workspace, so that only the deny list stands between a command and it
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE-KEY-MATERIAL\n")
    monkeypatch.setenv("HOME", str(home))
    error, text = await call_tool(client, "bash", command="ls -A ~/.ssh | wc -l; cat ~/.ssh/id_rsa")
    assert error and "PRIVATE-KEY-MATERIAL" not in text and text.startswith("0\n")  # cat failed: exit 1
    assert f"[sandbox: {home / '.ssh'} is hidden from commands" in text


@needs_bwrap
@pytest.mark.anyio
@pytest.mark.e2e
async def test_background_processes_started_in_the_sandbox_die_with_the_call(client: Client) -> None:
    marker = "317.25"  # a unique sleep argument, looked for among the host's processes
    assert await call_tool(client, "bash", command=f"sleep {marker} & echo started") == (
        False,
        "started\n[exit code: 0]",
    )

    def sleeping() -> bool:
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and (entry / "cmdline").read_bytes() == f"sleep\0{marker}\0".encode():
                    return True
            except OSError:
                continue
        return False

    with anyio.fail_after(bounded(10)):
        while sleeping():
            await anyio.sleep(0.01)


@needs_bwrap
@pytest.mark.anyio
@pytest.mark.parametrize(("network", "reached"), [("off", False), ("on", True)])
@pytest.mark.e2e
async def test_sandbox_network_off_cannot_reach_a_local_listener_and_on_can(
    root: Path, listener: int, network: str, reached: bool
) -> None:
    command = f"exec 3<>/dev/tcp/127.0.0.1/{listener} && echo connected"
    async for client in sandboxed(root, SPROUT_DEV_SANDBOX_NETWORK=network):
        _, text = await call_tool(client, "bash", command=command)
        assert ("connected" in text) is reached, text
        assert ("network off" in text) is not reached


def test_nested_deny_listed_directories_inside_the_workspace_do_not_break_every_command(root: Path) -> None:
    (root / "data" / "sessions").mkdir(parents=True)  # the agent's data dir with its sessions inside
    deny = (str(root / "data"), str(root / "data" / "sessions"))
    box = _sandbox.Sandbox(_sandbox.Policy(root=str(root), deny_read=deny))
    hidden = box.hidden({"HOME": str(root / "nohome")})
    assert str(root / "data") in hidden and str(root / "data" / "sessions") not in hidden


def test_a_sandbox_required_but_unavailable_refuses_the_command_in_the_server(root: Path) -> None:
    only_bwrap = replace(_sandbox.Policy(root=str(root)), helper="/nonexistent/bwrap", mechanism="bubblewrap")
    box = _sandbox.Sandbox(replace(only_bwrap, required=True))  # and no Landlock fallback
    with pytest.raises(_sandbox.SandboxUnavailable, match="/nonexistent/bwrap is not an executable file"):
        box.wrap(["true"], {})
    lenient = _sandbox.Sandbox(only_bwrap)
    assert lenient.wrap(["true"], {"A": "1"}) == (["true"], {"A": "1"})


# ---------------------------------------------------------------- the agent's plan


def locations(root: Path) -> Locations:
    return Locations(root / "config", root / "data" / "sessions", root / "data", None)


def test_an_unavailable_sandbox_is_one_start_up_notice_and_required_makes_it_exit_2(tmp_path: Path) -> None:
    environ = {**ENV, "SPROUT_DEV_SANDBOX_BWRAP": "/nonexistent/bwrap", "SPROUT_AGENT_SANDBOX_MECHANISM": "bubblewrap"}
    prepared = prepare(Options(prompt="hi", cwd=tmp_path), locations(tmp_path), environ)
    assert not prepared.sandbox.active
    assert [n for n in prepared.loaded.notices if n.startswith("sandbox unavailable: /nonexistent/bwrap")]
    with pytest.raises(UsageError, match="--sandbox required, but the sandbox cannot work here") as raised:
        prepare(Options(prompt="hi", cwd=tmp_path, sandbox="required"), locations(tmp_path), environ)
    assert raised.value.exit_code == 2


@needs_bwrap
def test_a_project_env_file_cannot_turn_the_sandbox_off(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("SPROUT_AGENT_SANDBOX=off\nSPROUT_DEV_SANDBOX=off\n")
    prepared = prepare(Options(prompt="hi", cwd=tmp_path), locations(tmp_path), ENV)
    assert prepared.sandbox.active and prepared.sandbox.policy.mode == "workspace-write"
    assert any("ignored SPROUT_AGENT_SANDBOX, SPROUT_DEV_SANDBOX" in n for n in prepared.loaded.notices)
    (dev_server,) = [s for s in prepared.loaded.servers if s.name == "dev"]
    assert dev_server.env["SPROUT_DEV_SANDBOX"] == "workspace-write"
    assert str(tmp_path / "data") in dev_server.env["SPROUT_DEV_SANDBOX_DENY_READ"]  # sessions, history


@needs_bwrap
@pytest.mark.anyio
async def test_read_only_permission_mode_runs_dev_bash_in_the_read_only_sandbox_instead_of_refusing(
    tmp_path: Path,
) -> None:
    prepared = prepare(
        Options(prompt="hi", cwd=tmp_path, permission_mode=PermissionMode.READ_ONLY), locations(tmp_path), ENV
    )
    assert prepared.sandbox.policy.mode == "read-only" and not prepared.sandbox.policy.network
    bash = ToolSpec("dev__bash", "dev", "bash", "", {}, read_only=False)
    use = ToolUse("toolu_1", "dev__bash", {"command": "ls"})
    assert (
        await Policy(PermissionMode.READ_ONLY, sandboxed=[("dev", "bash")], read_only_sandbox=True)(bash, use) is None
    )
    refused = await Policy(PermissionMode.READ_ONLY)(bash, use)  # no working sandbox: refused as before
    assert refused is not None and refused.startswith("refused: sprout-agent runs with --permission-mode read-only")


@pytest.mark.anyio
async def test_a_session_switched_to_read_only_refuses_commands_its_writable_sandbox_would_let_write() -> None:
    """The SDKs' set_permission_mode and the editor's modes switch a running session; its sandbox was chosen at
    start, so a session started in auto that goes read-only must not run commands in a sandbox that writes."""
    bash = ToolSpec("dev__bash", "dev", "bash", "", {}, read_only=False)
    use = ToolUse("toolu_1", "dev__bash", {"command": "rm -rf src"})
    policy = Policy(PermissionMode.AUTO, sandboxed=[("dev", "bash")], read_only_sandbox=False)
    assert await policy(bash, use) is None
    policy.set_mode("read-only")
    refused = await policy(bash, use)
    assert refused is not None and "workspace-write sandbox" in refused
    policy.set_mode("plan")  # Claude Code's name for it: the same
    assert await policy(bash, use) == refused


# ---------------------------------------------------------------- through the CLI


@needs_bwrap
@pytest.mark.e2e
def test_sandboxed_bash_finds_no_key_in_the_agents_or_any_procs_environ(tmp_path: Path) -> None:
    command = "tr '\\0' '\\n' < /proc/$PPID/environ; cat /proc/[0-9]*/environ | tr '\\0' '\\n'; ls -d /proc/[0-9]*"
    script = [reply(tool_use("dev__bash", {"command": command})), reply("done")]
    extra = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev", "GITHUB_TOKEN": "ghp_secret_value_123"}
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, ["-p", "look", "--output-format", "stream-json"], fake=fake, env=extra)
    assert run.code == 0, run.stderr
    output = result_text(tool_results(fake.requests[1].body)[0])
    assert API_KEY not in output and "ghp_secret_value_123" not in output
    assert "ANTHROPIC_BASE_URL" not in output  # the agent's own block is not there to read at all
    assert len([line for line in output.splitlines() if line.startswith("/proc/")]) < 8  # only the sandbox's
    init = valid_lines(run.stdout)[0]
    assert init["sandbox"] == {
        "mode": "workspace-write",
        "active": True,
        "required": False,
        "network": True,
        "writable": [str(tmp_path.resolve())],
        "unavailable": None,
        "mechanism": "bubblewrap",
    }


@pytest.mark.e2e
def test_sandbox_required_without_bubblewrap_exits_2(tmp_path: Path) -> None:
    env = {"SPROUT_DEV_SANDBOX_BWRAP": str(tmp_path / "no-bwrap"), "SPROUT_AGENT_SANDBOX": "required",
           "SPROUT_AGENT_SANDBOX_MECHANISM": "bubblewrap"}  # fmt: skip
    run = run_agent(tmp_path, ["-p", "hi", "--output-format", "json"], fake=None, env=env)
    assert run.code == 2
    assert "sandbox cannot work here" in run.stderr and "no-bwrap is not an executable file" in run.stderr
    assert json.loads(run.stdout)["exit_code"] == 2


@needs_bwrap
@pytest.mark.anyio
@pytest.mark.e2e
async def test_a_program_on_path_under_the_hosts_tmp_still_runs_under_the_private_tmp(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    prefix = Path(tempfile.mkdtemp(prefix="sprout-tool-", dir="/tmp"))  # like a venv in a clone under /tmp
    try:
        (prefix / "bin").mkdir()
        tool = prefix / "bin" / "sprout-test-tool"
        tool.write_text("#!/bin/sh\necho tool ran\n")
        tool.chmod(0o755)
        monkeypatch.setenv("PATH", f"{prefix / 'bin'}{os.pathsep}{os.environ['PATH']}")
        async for client in sandboxed(root, SPROUT_DEV_SANDBOX="workspace-write"):
            assert await call_tool(client, "bash", command="sprout-test-tool") == (False, "tool ran\n[exit code: 0]")
    finally:
        tool.unlink()
        (prefix / "bin").rmdir()
        prefix.rmdir()


@needs_bwrap
@pytest.mark.anyio
@pytest.mark.e2e
async def test_a_command_writing_to_tmp_is_told_its_tmp_is_the_sandboxs_and_a_git_write_names_the_flag(
    client: Client, root: Path
) -> None:
    _, text = await call_tool(client, "bash", command="echo hi > /tmp/sprout-note && cat /tmp/sprout-note")
    assert "/tmp in this command is the sandbox's private /tmp" in text and not Path("/tmp/sprout-note").exists()
    _, plain = await call_tool(client, "bash", command="echo no tmp here")
    assert "private /tmp" not in plain
    (root / ".git").mkdir()
    async for git_client in sandboxed(root, SPROUT_DEV_SANDBOX="workspace-write"):  # sees .git: read-only
        error, denied = await call_tool(git_client, "bash", command="touch .git/index.lock")
        assert error and "the git directory is read-only" in denied and "--sandbox-allow-write .git" in denied
