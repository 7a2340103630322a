"""The sandbox where bubblewrap cannot run: Landlock confines dev__bash's writes to the writable roots and /tmp,
TCP when the network is off, and signals to the outside; the plan says loudly what it does not cover."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.session.prepared import prepare
from sprout_agent.trust import landlock as _landlock
from tests.harness import call_tool

needs_landlock = pytest.mark.skipif(_landlock.abi() < 1, reason="no Landlock in this kernel")
LANDLOCK = {"SPROUT_DEV_SANDBOX_MECHANISM": "landlock"}
OUTSIDE = "/etc/sprout-landlock-test-write"  # writable by root without a sandbox: the test removes it


async def bash(root: Path, command: str, **env: str) -> tuple[bool, str]:
    from mcp import Client

    from sprout_agent.tools import dev

    async with Client(dev.create_server_in(str(root), {**LANDLOCK, **env})) as client:
        return await call_tool(client, "bash", command=command)


@needs_landlock
@pytest.mark.anyio
@pytest.mark.e2e
async def test_without_bubblewrap_a_command_cannot_write_outside_the_working_directory(root: Path) -> None:
    try:
        error, text = await bash(root, f'touch inside && echo tmp > "$TMPDIR/t" && touch {OUTSIDE}')
        assert not os.path.exists(OUTSIDE)
    finally:
        Path(OUTSIDE).unlink(missing_ok=True)
    assert error and (root / "inside").exists()
    assert f"[sandbox: write outside the writable roots denied: {OUTSIDE} (sandbox workspace-write" in text
    assert "(landlock)" in text


@needs_landlock
@pytest.mark.anyio
@pytest.mark.e2e
async def test_without_bubblewrap_a_read_only_sandbox_keeps_the_working_directory_unwritten(root: Path) -> None:
    error, text = await bash(root, "touch inside", SPROUT_DEV_SANDBOX="read-only")
    assert error and not (root / "inside").exists() and "Permission denied" in text


@pytest.mark.skipif(_landlock.abi() < 4, reason="Landlock's TCP rules need ABI 4")
@pytest.mark.anyio
@pytest.mark.e2e
async def test_without_bubblewrap_network_off_still_stops_tcp(root: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        port = sock.getsockname()[1]
        probe = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 5); print('CONNECTED')\""
        _, off = await bash(root, probe, SPROUT_DEV_SANDBOX_NETWORK="off")
        _, on = await bash(root, probe)
    assert "CONNECTED" not in off and "network disabled by the sandbox" in off
    assert "CONNECTED" in on


@pytest.mark.skipif(_landlock.abi() < 6, reason="Landlock's signal scoping needs ABI 6")
@pytest.mark.anyio
@pytest.mark.e2e
async def test_without_bubblewrap_a_command_cannot_signal_the_agent(root: Path) -> None:
    _, text = await bash(root, f"kill -0 {os.getpid()} && echo SIGNALLED")
    assert "SIGNALLED" not in text and "Operation not permitted" in text


@needs_landlock
def test_a_machine_without_bubblewrap_gets_landlock_and_one_loud_line_saying_what_it_lacks(tmp_path: Path) -> None:
    environ = {"ANTHROPIC_API_KEY": "sk-test", "SPROUT_DEV_SANDBOX_BWRAP": "/nonexistent/bwrap"}
    locations = Locations(tmp_path / "config", tmp_path / "data" / "sessions", tmp_path / "data", None)
    prepared = prepare(Options(prompt="hi", cwd=tmp_path), locations, environ)
    assert prepared.sandbox.active and prepared.sandbox.mechanism == "landlock"
    (line,) = [n for n in prepared.loaded.notices if n.startswith("sandbox:")]
    assert "/nonexistent/bwrap is not an executable file" in line and "Landlock" in line
    assert "cannot keep its .git read-only" in line and "apt install bubblewrap" in line
    assert prepared.sandbox.record()["mechanism"] == "landlock"
    assert "landlock" in prepared.sandbox.describe()


def test_a_machine_with_no_sandbox_at_all_says_commands_run_unsandboxed(tmp_path: Path) -> None:
    environ = {
        "ANTHROPIC_API_KEY": "sk-test",
        "SPROUT_DEV_SANDBOX_BWRAP": "/nonexistent/bwrap",
        "SPROUT_AGENT_SANDBOX_MECHANISM": "bubblewrap",  # as on a kernel without Landlock
    }
    locations = Locations(tmp_path / "config", tmp_path / "data" / "sessions", tmp_path / "data", None)
    prepared = prepare(Options(prompt="hi", cwd=tmp_path), locations, environ)
    (line,) = [n for n in prepared.loaded.notices if n.startswith("sandbox unavailable:")]
    assert "UNSANDBOXED" in line and "apt install bubblewrap" in line and "--sandbox required" in line


@needs_landlock
@pytest.mark.anyio
@pytest.mark.e2e
async def test_without_bubblewrap_a_command_cannot_make_a_device_node_or_reach_another_terminal(root: Path) -> None:
    _, text = await bash(root, "mknod ./disk b 7 0 && echo MADE; ls /dev/pts >/dev/null; echo x > /dev/tty && echo TTY")
    assert "MADE" not in text and "TTY" not in text and not (root / "disk").exists()
