"""A sandboxed command may commit, but not plant what git would run later outside the sandbox (hooks, config)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from mcp import Client

from sprout_agent.tools import _sandbox, dev
from tests.harness import call_tool

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(_sandbox.probe() is not None, reason=f"no sandbox here: {_sandbox.probe()}"),
]
GIT = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]


async def test_a_sandboxed_command_commits_but_cannot_write_git_hooks_or_config(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "f.txt").write_text("x\n")
    command = (
        f"{' '.join(GIT)} add f.txt && {' '.join(GIT)} commit -qm first && echo committed; "
        "echo 'touch /tmp/pwned' > .git/hooks/post-checkout; git config core.fsmonitor 'touch pwned'"
    )
    async with Client(dev.create_server_in(str(tmp_path), {})) as client:
        _, text = await call_tool(client, "bash", command=command)
    assert "committed" in text
    assert not (tmp_path / ".git" / "hooks" / "post-checkout").exists()
    assert "fsmonitor" not in (tmp_path / ".git" / "config").read_text()
    assert "sandbox: write outside the writable roots denied" in text


async def test_a_repository_without_a_hooks_directory_gets_an_empty_read_only_one(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", "--template=", str(tmp_path)], check=True)
    assert not (tmp_path / ".git" / "hooks").exists()
    async with Client(dev.create_server_in(str(tmp_path), {})) as client:
        _, text = await call_tool(client, "bash", command="echo evil > .git/hooks/pre-commit")
    assert "Read-only file system" in text
    assert not (tmp_path / ".git" / "hooks" / "pre-commit").exists()
