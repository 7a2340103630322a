"""The dev server's bash tool: output, caps, timeouts and cancellation that kill grandchildren, secrets."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.harness import call_tool, kill_pid, read_pid, wait_dead

if TYPE_CHECKING:
    from mcp import Client

pytestmark = pytest.mark.anyio

# A grandchild: bash -c → bash → sleep, the sleep's pid written to a file before everyone waits.
GRANDCHILD = "bash -c 'sleep 300 & echo $! > sleeper.pid; wait'"


@pytest.fixture
async def client(root: Path) -> AsyncIterator[Client]:
    from mcp import Client

    from sprout_agent.tools import dev
    from sprout_agent.trust.workspace import Workspace

    async with Client(dev.create_server(Workspace(str(root)))) as c:
        yield c


@pytest.mark.e2e
async def test_bash_reports_output_and_exit_code(client: Client, root: Path) -> None:
    assert await call_tool(client, "bash", command="echo out; echo err >&2; exit 0") == (
        False,
        "out\nerr\n[exit code: 0]",
    )
    assert await call_tool(client, "bash", command="pwd") == (False, f"{root}\n[exit code: 0]")
    assert await call_tool(client, "bash", command="true") == (False, "(no output)\n[exit code: 0]")


@pytest.mark.e2e
async def test_bash_runs_a_command_that_starts_with_a_dash_as_a_command_not_as_bashs_options(client: Client) -> None:
    # `bash -c -not…` took it for options (it printed its option settings and its usage); after `--` a command.
    is_error, text = await call_tool(client, "bash", command="-not-a-program 2>/dev/null; echo ran")
    assert (is_error, text) == (False, "ran\n[exit code: 0]")


@pytest.mark.e2e
async def test_bash_nonzero_exit_is_an_error_result_with_the_exit_code_in_its_text(client: Client) -> None:
    assert await call_tool(client, "bash", command="echo 1 failed; exit 1") == (True, "1 failed\n[exit code: 1]")
    assert await call_tool(client, "bash", command="exit 3") == (True, "(no output)\n[exit code: 3]")


@pytest.mark.e2e
async def test_bash_stdin_is_dev_null(client: Client) -> None:
    assert await call_tool(client, "bash", command="cat; read -r x || echo eof", timeout=20) == (
        False,
        "eof\n[exit code: 0]",
    )


@pytest.mark.e2e
async def test_bash_keeps_head_and_tail_of_large_output(client: Client) -> None:
    error, text = await call_tool(client, "bash", command="seq 1 200000; echo done >&2")
    assert not error
    assert text.startswith("1\n2\n3\n")
    assert text.endswith("199999\n200000\ndone\n[exit code: 0]")
    assert "bytes of output omitted] ..." in text
    assert len(text) < 31_000


@pytest.mark.e2e
async def test_bash_timeout_kills_the_whole_process_group(client: Client, root: Path) -> None:
    error, text = await call_tool(client, "bash", command=GRANDCHILD, timeout=1)
    assert error and "[timed out after 1 s; the command's process group was killed]" in text
    pid = await read_pid(root / "sleeper.pid")
    try:
        await wait_dead(pid)
    finally:
        kill_pid(pid)


async def test_bash_rejects_bad_timeouts(client: Client) -> None:
    error, text = await call_tool(client, "bash", command="true", timeout=601)
    assert error and "at most 600 seconds" in text


@pytest.mark.e2e
async def test_bash_environment_has_no_secrets_by_name_or_by_value(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-2")
    monkeypatch.setenv("GH_TOKEN", "t")
    monkeypatch.setenv("MY_SECRET_THING", "s")
    monkeypatch.setenv("GITHUB_PAT", "p")
    monkeypatch.setenv("STRIPE_KEY", "k")
    monkeypatch.setenv("MY_CREDENTIALS", "c")
    monkeypatch.setenv("DATABASE_URL", "postgres://app:hunter2@db.example/app")
    monkeypatch.setenv("SPROUT_HARMLESS", "visible")
    _, text = await call_tool(client, "bash", command="env")
    names = {line.split("=", 1)[0] for line in text.splitlines()}
    assert {"SPROUT_HARMLESS", "PATH"} <= names
    assert not names & {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GH_TOKEN", "MY_SECRET_THING", "GITHUB_PAT",
                        "STRIPE_KEY", "MY_CREDENTIALS", "DATABASE_URL"}  # fmt: skip


@pytest.mark.e2e
async def test_bash_background_job_does_not_outlive_the_call(client: Client, root: Path) -> None:
    error, text = await call_tool(client, "bash", command="sleep 300 & echo $! > bg.pid; echo started")
    pid = await read_pid(root / "bg.pid")
    try:
        assert not error
        assert text == (
            "started\n[background processes still held the output open; they were ended with the call]\n[exit code: 0]"
        )
        await wait_dead(pid, timeout=10)
    finally:
        kill_pid(pid)


@pytest.mark.e2e
async def test_bash_nohup_and_setsid_escapees_are_ended_with_the_call(client: Client, root: Path) -> None:
    command = (
        "nohup sleep 300 >/dev/null 2>&1 & echo $! > nohup.pid; "
        "setsid sleep 300 >/dev/null 2>&1 < /dev/null & echo $! > setsid.pid"
    )
    error, text = await call_tool(client, "bash", command=command)
    pids = [await read_pid(root / "nohup.pid"), await read_pid(root / "setsid.pid")]
    try:
        assert (error, text) == (False, "(no output)\n[exit code: 0]")
        await wait_dead(*pids, timeout=10)
    finally:
        for pid in pids:
            kill_pid(pid)
