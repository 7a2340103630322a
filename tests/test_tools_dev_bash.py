"""The dev server's bash tool: output, caps, timeouts and cancellation that kill grandchildren, secrets."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import TextContent

from sprout_agent.tools import dev
from sprout_agent.tools._paths import Workspace

pytestmark = pytest.mark.anyio

# A grandchild: bash -c → bash → sleep, the sleep's pid written to a file before everyone waits.
GRANDCHILD = "bash -c 'sleep 300 & echo $! > sleeper.pid; wait'"


async def call(client: Client, name: str, **args: object) -> tuple[bool, str]:
    with anyio.fail_after(60):
        result = await client.call_tool(name, args)
    text = "".join(c.text for c in result.content if isinstance(c, TextContent))
    return bool(result.is_error), text


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path.resolve()


@pytest.fixture
async def client(root: Path) -> AsyncIterator[Client]:
    async with Client(dev.create_server(Workspace(str(root)))) as c:
        yield c


def _gone(pid: int) -> bool:
    """Dead or a zombie (PID 1 here may not reap orphans)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


async def _wait_gone(pid: int) -> None:
    with anyio.fail_after(10):
        while not _gone(pid):
            await anyio.sleep(0.02)


async def _read_pid(path: Path) -> int:
    with anyio.fail_after(20):
        while not path.exists() or not path.read_text().strip():
            await anyio.sleep(0.02)
    return int(path.read_text())


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


async def test_bash_reports_output_and_exit_code(client: Client, root: Path) -> None:
    assert await call(client, "bash", command="echo out; echo err >&2; exit 3") == (
        False,
        "out\nerr\n[exit code: 3]",
    )
    assert await call(client, "bash", command="pwd") == (False, f"{root}\n[exit code: 0]")
    assert await call(client, "bash", command="true") == (False, "(no output)\n[exit code: 0]")


async def test_bash_stdin_is_dev_null(client: Client) -> None:
    assert await call(client, "bash", command="cat; read -r x || echo eof", timeout=20) == (
        False,
        "eof\n[exit code: 0]",
    )


async def test_bash_keeps_head_and_tail_of_large_output(client: Client) -> None:
    error, text = await call(client, "bash", command="seq 1 200000; echo done >&2")
    assert not error
    assert text.startswith("1\n2\n3\n")
    assert text.endswith("199999\n200000\ndone\n[exit code: 0]")
    assert "bytes of output omitted] ..." in text
    assert len(text) < 31_000


async def test_bash_timeout_kills_the_whole_process_group(client: Client, root: Path) -> None:
    error, text = await call(client, "bash", command=GRANDCHILD, timeout=1)
    assert error and "[timed out after 1 s; the command's process group was killed]" in text
    pid = await _read_pid(root / "sleeper.pid")
    try:
        await _wait_gone(pid)
    finally:
        _kill(pid)


async def test_bash_rejects_bad_timeouts(client: Client) -> None:
    error, text = await call(client, "bash", command="true", timeout=601)
    assert error and "at most 600 seconds" in text


async def test_bash_environment_has_no_secrets(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-2")
    monkeypatch.setenv("GH_TOKEN", "t")
    monkeypatch.setenv("MY_SECRET_THING", "s")
    monkeypatch.setenv("SPROUT_HARMLESS", "visible")
    _, text = await call(client, "bash", command="env")
    names = {line.split("=", 1)[0] for line in text.splitlines()}
    assert "SPROUT_HARMLESS" in names
    assert not names & {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GH_TOKEN", "MY_SECRET_THING"}


async def test_bash_returns_when_a_background_job_keeps_the_pipe(client: Client, root: Path) -> None:
    error, text = await call(client, "bash", command="sleep 300 & echo $! > bg.pid; echo started")
    pid = await _read_pid(root / "bg.pid")
    try:
        assert not error
        assert text == (
            "started\n[background processes still hold the output open; later output is not shown]\n[exit code: 0]"
        )
    finally:
        _kill(pid)


async def test_cancelled_bash_call_kills_grandchildren_in_a_subprocess_server(root: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "sprout_agent.tools.dev"],
        cwd=str(root),
        env={"ANTHROPIC_API_KEY": "sk-must-not-leak"},
    )
    with anyio.fail_after(60):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            pid = 0
            async with anyio.create_task_group() as tg:
                tg.start_soon(session.call_tool, "bash", {"command": GRANDCHILD})
                pid = await _read_pid(root / "sleeper.pid")
                tg.cancel_scope.cancel()  # the client sends notifications/cancelled
            try:
                await _wait_gone(pid)
            finally:
                _kill(pid)
            leaked = await session.call_tool("bash", {"command": "echo ${ANTHROPIC_API_KEY:-absent}"})
            assert leaked.content[0].text == "absent\n[exit code: 0]"  # type: ignore[union-attr]
