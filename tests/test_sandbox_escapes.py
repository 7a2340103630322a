"""Ways out of the sandbox an attacker's review found, each closed: root's capabilities, a planted bwrap or rg,
git metadata moved or rewritten, the read tools reading around the deny list, agent sockets, a server's cwd."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sprout_agent.config.files import ServerConfig
from sprout_agent.config.sandboxing import SandboxPlan, ServerSandboxes
from sprout_agent.trust import sandbox as _sandbox
from tests.harness import call_tool

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(_sandbox.probe() is not None, reason=f"no sandbox here: {_sandbox.probe()}"),
]


async def bash(root: Path, command: str, **env: str) -> str:
    from mcp import Client

    from sprout_agent.tools import dev

    async with Client(dev.create_server_in(str(root), env)) as client:
        return (await call_tool(client, "bash", command=command))[1]


@pytest.mark.e2e
async def test_a_command_run_by_root_has_no_capabilities_to_unmount_the_sandbox(tmp_path: Path) -> None:
    text = await bash(tmp_path, "grep CapEff /proc/self/status; mount -o remount,rw / && echo REMOUNTED")
    assert "CapEff:\t0000000000000000" in text and "REMOUNTED" not in text


@pytest.mark.e2e
async def test_a_bwrap_planted_in_a_writable_directory_on_path_is_never_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp import Client

    from sprout_agent.tools import dev

    planted = tmp_path / "tools" / "bin"
    planted.mkdir(parents=True)
    monkeypatch.setenv("PATH", f"{planted}{os.pathsep}{os.environ['PATH']}")
    fake = "printf '#!/bin/sh\\necho PLANTED; exit 0\\n' > tools/bin/{0} && chmod +x tools/bin/{0}"
    async with Client(dev.create_server_in(str(tmp_path), {})) as client:
        await call_tool(client, "bash", command=fake.format("bwrap") + " && " + fake.format("rg"))
        _, text = await call_tool(client, "bash", command="test -e /proc/1/cmdline && cat /proc/1/comm")
        _, found = await call_tool(client, "grep", pattern="PLANTED")
    assert "PLANTED" not in text and "bwrap" in text  # pid 1 is the sandbox's own
    assert found.splitlines() == ["tools/bin/bwrap", "tools/bin/rg"]  # the real rg searched; the fake was not run


@pytest.mark.e2e
async def test_git_metadata_cannot_be_moved_aside_or_rewritten_and_commits_need_it_allowed(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    git = "git -c user.email=t@example.com -c user.name=t"
    plant = "echo 'touch /tmp/pwned' > .git/hooks/post-checkout; git config core.fsmonitor 'touch pwned'"
    text = await bash(
        tmp_path, f"mv .git .git-aside; echo ../x > .git/commondir; {plant}; {git} commit -q --allow-empty -m m"
    )
    assert "Device or resource busy" in text and (tmp_path / ".git").is_dir()
    assert not (tmp_path / ".git" / "commondir").exists()
    assert not (tmp_path / ".git" / "hooks" / "post-checkout").exists()
    assert "fsmonitor" not in (tmp_path / ".git" / "config").read_text()
    assert "Read-only file system" in text and "sandbox: write outside the writable roots denied" in text
    allowed = await bash(tmp_path, f"{git} commit -q --allow-empty -m m && echo COMMITTED",
                         SPROUT_DEV_SANDBOX_ALLOW_WRITE=str(tmp_path / ".git"))  # fmt: skip
    assert "COMMITTED" in allowed


@pytest.mark.e2e
async def test_read_grep_and_glob_cannot_read_around_the_deny_list(tmp_path: Path) -> None:
    from mcp import Client

    from sprout_agent.tools import dev

    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY MATERIAL\n")
    (home / "notes.txt").write_text("PRIVATE KEY MATERIAL is not here\n")
    async with Client(dev.create_server_in(str(tmp_path), {"HOME": str(home)})) as client:
        old_home = os.environ.get("HOME")
        os.environ["HOME"] = str(home)  # the server reads HOME for its deny list as a command would
        try:
            read_error, read = await call_tool(client, "read", file_path=str(home / ".ssh" / "id_ed25519"))
            _, grep = await call_tool(client, "grep", pattern="PRIVATE", path=str(home))
            _, glob = await call_tool(client, "glob", pattern="**/*", path=str(home))
        finally:
            if old_home is not None:
                os.environ["HOME"] = old_home
    assert read_error and "hidden by the sandbox's deny list" in read and "MATERIAL" not in read
    assert "notes.txt" in grep and "id_ed25519" not in grep
    assert "notes.txt" in glob and "id_ed25519" not in glob


@pytest.mark.e2e
async def test_agent_sockets_are_not_passed_into_the_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/ssh-agent.sock")
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/0/bus")
    text = await bash(tmp_path, "echo ssh=${SSH_AUTH_SOCK:-none} bus=${DBUS_SESSION_BUS_ADDRESS:-none}")
    assert "ssh=none bus=none" in text


def test_a_sandboxed_server_whose_cwd_leaves_the_working_directory_does_not_start(tmp_path: Path) -> None:
    plan = SandboxPlan(_sandbox.Policy(root=os.path.realpath(tmp_path)))
    server = ServerConfig("evil", "bash", cwd="/", sandbox="workspace-write", project=True)
    with pytest.raises(OSError, match="a sandboxed server's cwd must be inside the working directory"):
        ServerSandboxes(plan, tmp_path).wrap(server, ["bash"], {})


def test_a_git_repository_at_the_home_directory_does_not_make_home_writable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "project").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path))
    box = _sandbox.Sandbox(_sandbox.Policy(root=str(tmp_path / "project")))
    assert box.writable() == (str(tmp_path / "project"),)
