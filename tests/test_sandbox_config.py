"""The sandbox as config files set it: a stdio server's own `"sandbox"` key (the server process runs inside
bubblewrap, a real process here) and the user config's top-level `sandbox` paths, which a project cannot set."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from sprout_agent.config.consent import Secrets, fingerprint
from sprout_agent.config.files import SandboxPaths, load_config
from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.config.sandboxing import ServerSandboxes
from sprout_agent.config.settings import child_environment
from sprout_agent.core.errors import ConfigError, UsageError
from sprout_agent.mcp.pool import ServerPool
from sprout_agent.session.prepared import prepare
from sprout_agent.trust import sandbox as _sandbox
from tests.bounds import bounded

needs_bwrap = pytest.mark.skipif(_sandbox.probe() is not None, reason=f"no sandbox here: {_sandbox.probe()}")
ENV = {"ANTHROPIC_API_KEY": "sk-test-sandbox-config", "SPROUT_AGENT_BUILTIN_SERVERS": "none"}
OUTSIDE = "/etc/sprout-server-sandbox-test-write"


def write_config(path: Path, servers: dict[str, object], **top: object) -> Path:
    path.write_text(json.dumps({"mcpServers": servers, **top}))
    return path


def locations(root: Path) -> Locations:
    return Locations(root / "config", root / "data" / "sessions", root / "data", None)


def dev_server(sandbox: str) -> dict[str, object]:
    """The dev tool server standalone, its own command sandbox off: only the server's sandbox can stop a write."""
    return {
        "command": sys.executable,
        "args": ["-m", "sprout_agent.tools.dev"],
        "env": {"SPROUT_DEV_SANDBOX": "off"},
        "sandbox": sandbox,
    }


def test_a_server_sandbox_key_must_name_a_mode_and_off_means_none(tmp_path: Path) -> None:
    good = write_config(tmp_path / "a.json", {"boxed": dev_server("read-only"), "free": dev_server("off")})
    servers = {s.name: s.sandbox for s in load_config([good], tmp_path, {}, None).servers}
    assert servers == {"boxed": "read-only", "free": None}
    bad = write_config(tmp_path / "b.json", {"boxed": dev_server("chroot")})
    with pytest.raises(ConfigError, match=r"mcpServers.boxed.sandbox must be one of off, read-only, workspace-write"):
        load_config([bad], tmp_path, {}, None)


def test_adding_or_removing_a_servers_sandbox_changes_what_was_approved(tmp_path: Path) -> None:
    boxed = write_config(tmp_path / "a.json", {"s": dev_server("workspace-write")})
    (with_key,) = load_config([boxed], tmp_path, {}, None).servers
    free = write_config(tmp_path / "b.json", {"s": {**dev_server("off"), "sandbox": "off"}})
    (without_key,) = load_config([free], tmp_path, {}, None).servers
    assert fingerprint(with_key, Secrets()) != fingerprint(without_key, Secrets())


def test_the_user_config_adds_sandbox_paths_and_a_projects_sandbox_key_is_ignored(tmp_path: Path) -> None:
    user_dir, project = tmp_path / "config", tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    user_dir.mkdir()
    (tmp_path / "cache").mkdir()
    write_config(user_dir / "mcp.json", {}, sandbox={"allowWrite": ["../cache"], "denyRead": ["~/.secrets"]})
    write_config(project / ".mcp.json", {}, sandbox={"allowWrite": ["/"]})
    loaded = load_config([], project, {}, user_dir)
    home = Path("~/.secrets").expanduser()
    assert loaded.sandbox == SandboxPaths((user_dir / "../cache",), (user_dir / home,))
    assert any("its sandbox settings are ignored" in notice for notice in loaded.notices)
    prepared = prepare(Options(prompt="hi", cwd=project), locations(tmp_path), ENV)
    if prepared.sandbox.active:
        assert prepared.sandbox.policy.allow_write == (os.path.realpath(tmp_path / "cache"),)
        assert "/" not in prepared.sandbox.policy.allow_write


def test_a_user_config_sandbox_path_that_is_not_a_directory_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    write_config(tmp_path / "config" / "mcp.json", {}, sandbox={"allowWrite": ["/nonexistent/cache"]})
    with pytest.raises(UsageError, match="sandbox allow-write path /nonexistent/cache") as raised:
        prepare(Options(prompt="hi", cwd=tmp_path), locations(tmp_path), ENV)
    assert raised.value.exit_code == 2


def test_a_server_sandbox_that_cannot_work_here_is_a_start_up_notice(tmp_path: Path) -> None:
    config = write_config(tmp_path / "s.json", {"boxed": dev_server("workspace-write")})
    environ = {**ENV, "SPROUT_DEV_SANDBOX_BWRAP": "/nonexistent/bwrap", "SPROUT_AGENT_SANDBOX_MECHANISM": "bubblewrap"}
    prepared = prepare(Options(prompt="hi", cwd=tmp_path, config_files=(config,)), locations(tmp_path), environ)
    expected = "server 'boxed' asks for a workspace-write sandbox, which is unavailable here: it runs unsandboxed"
    assert expected in prepared.loaded.notices


@needs_bwrap
@pytest.mark.anyio
@pytest.mark.e2e
@pytest.mark.slow
async def test_a_server_with_a_sandbox_key_cannot_write_outside_its_directory_or_see_the_agent(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path / "s.json", {"boxed": dev_server("workspace-write")})
    # The sandbox has a private /tmp: a checkout under the host's /tmp (a CI clone) must be named to stay visible.
    checkout = str(Path(__file__).resolve().parents[1])
    environ = {**ENV, "SPROUT_AGENT_SANDBOX_ALLOW_WRITE": checkout} if checkout.startswith("/tmp/") else ENV
    prepared = prepare(Options(prompt="hi", cwd=tmp_path, config_files=(config,)), locations(tmp_path), environ)
    pool = ServerPool(
        prepared.loaded.servers,
        emit=lambda event: None,
        start_timeout=bounded(20.0),
        tool_timeout=bounded(30.0),
        result_max_bytes=50_000,
        child_env=lambda own: child_environment({**os.environ, **ENV}, own),
        sandbox=ServerSandboxes(prepared.sandbox, tmp_path).wrap,
    )
    command = f"touch inside && echo wrote; touch {OUTSIDE}; test -e /proc/{os.getpid()} || echo no-agent"
    try:
        async with pool:
            (bash,) = [spec for spec in pool.tools() if spec.name == "boxed__bash"]
            outcome = await pool.call(bash, {"command": command})
    finally:
        Path(OUTSIDE).unlink(missing_ok=True)
    text = "".join(getattr(block, "text", "") for block in outcome.content)
    assert "wrote" in text and (tmp_path / "inside").exists()
    assert "Read-only file system" in text and "no-agent" in text, text
