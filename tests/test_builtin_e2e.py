"""The built-in dev and todo servers as processes: through the real agent loop as a new user gets them (the
headless face in the test's process, and one scripted session through the CLI), and standalone over stdio
(`python -m sprout_agent.tools.dev`) as a third-party client sees them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from sprout_agent.config.options import Options
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, Step, reply, tool_use
from tests.harness import (
    agent_command,
    agent_env,
    assert_history_valid,
    kill_pid,
    read_pid,
    result_text,
    run_agent,
    tool_names,
    tool_results,
    wait_dead,
    wait_until,
)
from tests.headless_here import headless

pytestmark = pytest.mark.e2e

BUILTINS = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev,todo"}
# A grandchild: bash -c → bash → sleep, the sleep's pid written to a file before everyone waits.
GRANDCHILD = "bash -c 'sleep 300 & echo $! > sleeper.pid; wait'"
TODOS = [
    {"content": "write the test", "status": "completed"},
    {"content": "fix the bug", "status": "in_progress"},
    {"content": "update the docs", "status": "pending"},
]


def assert_builtin_tools_offered(request_body: dict[str, object]) -> None:
    names = tool_names(request_body)
    for expected in ("dev__read", "dev__write", "dev__edit", "dev__glob", "dev__grep", "dev__bash", "todo__todo_write"):
        assert expected in names
    assert not any("_Stop" in name or "_PostCompact" in name for name in names)


def test_builtin_servers_start_by_default_without_any_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeAnthropic([reply("hello")]) as fake:
        run = headless(tmp_path, monkeypatch, Options(prompt="hi"), fake=fake, env=BUILTINS)
    assert run.code == 0, run.stderr
    assert_builtin_tools_offered(fake.requests[0].body)


def test_builtin_servers_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeAnthropic([reply("hello")]) as fake:
        env = {"SPROUT_AGENT_BUILTIN_SERVERS": "todo"}
        run = headless(tmp_path, monkeypatch, Options(prompt="hi"), fake=fake, env=env)
    assert run.code == 0, run.stderr
    names = tool_names(fake.requests[0].body)
    assert "todo__todo_read" in names and not any(n.startswith("dev__") for n in names)


def test_todo_hook_keeps_the_agent_going_until_the_list_is_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    todo = [{"content": "write the parser", "status": "in_progress"}]
    script: list[Step] = [
        reply(tool_use("todo__todo_write", {"todos": todo})),
        reply("I think I am done."),
        reply(tool_use("todo__todo_write", {"todos": [{**todo[0], "status": "completed"}]})),
        reply("All items completed."),
    ]
    with FakeAnthropic(script) as fake:
        env = {**BUILTINS, "MCP_HOOK_SERVERS": "todo"}
        run = headless(tmp_path, monkeypatch, Options(prompt="go"), fake=fake, env=env)
    assert run.code == 0, run.stderr
    assert run.stdout == "All items completed.\n"
    assert len(fake.requests) == 4
    objection = json.loads(result_text(tool_results(fake.requests[2].body)[-1]))
    assert objection["hook"] == "_Stop" and objection["server"] == "todo"
    assert "You have open todo items" in objection["text"] and "write the parser" in objection["text"]
    assert_history_valid(fake.requests[3].body)


@pytest.mark.slow
def test_a_scripted_session_fixes_a_failing_test_in_a_git_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    # No bytecode: the edit keeps calc.py's size, and within the same second as the first run its .pyc would
    # still look fresh to Python (a warm run gets there that fast).
    pytest_command = f"PYTHONDONTWRITEBYTECODE=1 {sys.executable} -m pytest -q -p no:cacheprovider"
    script: list[Step] = [
        reply("Let me run the tests.", tool_use("dev__bash", {"command": pytest_command})),
        reply(tool_use("dev__read", {"file_path": "calc.py"})),
        reply(tool_use("dev__edit", {"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"})),
        reply(tool_use("dev__bash", {"command": pytest_command})),
        reply("Fixed `add`: it subtracted."),
    ]
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, ["--cwd", str(repo), "-p", "fix the failing test"], fake=fake, env=BUILTINS)
    assert run.code == 0, run.stderr
    assert run.stdout == "Fixed `add`: it subtracted.\n"
    assert_builtin_tools_offered(fake.requests[0].body)  # through the CLI as well
    results = [result_text(tool_results(fake.requests[i].body)[-1]) for i in range(1, 5)]
    assert "1 failed" in results[0]
    assert "return a - b" in results[1]
    assert "+    return a + b" in results[2]  # the edit's short diff
    assert "1 passed" in results[3]
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


@pytest.mark.anyio
@pytest.mark.slow
async def test_dev_server_over_stdio_answers_initialize_and_works_in_its_cwd(root: Path) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "sprout_agent.tools.dev"],
        cwd=str(root),
    )
    with anyio.fail_after(bounded(60)):
        # errlog given: the SDK's default is the sys.stderr of when mcp was first imported, which may have been an
        # in-process test's redirect (the agent no longer imports mcp before a server needs it).
        async with stdio_client(params, errlog=sys.stderr) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "dev"
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert sorted(tools) == ["bash", "edit", "glob", "grep", "read", "write"]
            assert tools["read"].annotations and tools["read"].annotations.read_only_hint is True
            assert tools["bash"].annotations and tools["bash"].annotations.destructive_hint is True
            written = await session.call_tool("write", {"file_path": "sub/x.txt", "content": "a\nb\n"})
            assert not written.is_error
            read = await session.call_tool("read", {"file_path": "sub/x.txt"})
            assert read.content[0].text == "     1\ta\n     2\tb"  # type: ignore[union-attr]
            pwd = await session.call_tool("bash", {"command": "pwd"})
            assert pwd.content[0].text == f"{root}\n[exit code: 0]"  # type: ignore[union-attr]
    assert (root / "sub" / "x.txt").read_text() == "a\nb\n"


@pytest.mark.anyio
async def test_dev_server_over_stdio_kills_a_cancelled_bash_calls_grandchildren(root: Path) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "sprout_agent.tools.dev"],
        cwd=str(root),
        # Sandbox off: the pid is read from the host (inside the sandbox's pid namespace it means another process).
        env={"ANTHROPIC_API_KEY": "sk-must-not-leak", "SPROUT_DEV_SANDBOX": "off"},
    )
    with anyio.fail_after(bounded(60)):
        async with stdio_client(params, errlog=sys.stderr) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            pid = 0
            async with anyio.create_task_group() as tg:
                tg.start_soon(session.call_tool, "bash", {"command": GRANDCHILD})
                pid = await read_pid(root / "sleeper.pid")
                tg.cancel_scope.cancel()  # the client sends notifications/cancelled
            try:
                await wait_dead(pid)
            finally:
                kill_pid(pid)
            leaked = await session.call_tool("bash", {"command": "echo ${ANTHROPIC_API_KEY:-absent}"})
            assert leaked.content[0].text == "absent\n[exit code: 0]"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_todo_server_over_stdio_keeps_the_list_and_objects_to_stopping() -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "sprout_agent.tools.todo"])
    with anyio.fail_after(bounded(60)):
        async with stdio_client(params, errlog=sys.stderr) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "todo"
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert sorted(tools) == ["_PostCompact", "_Stop", "todo_read", "todo_write"]
            assert tools["_Stop"].input_schema == {"type": "object", "properties": {}}
            assert tools["todo_read"].annotations and tools["todo_read"].annotations.read_only_hint
            stop = await session.call_tool("_Stop", {})
            assert not stop.is_error and stop.content[0].text == ""  # type: ignore[union-attr]
            await session.call_tool("todo_write", {"todos": TODOS})
            stop = await session.call_tool("_Stop", {})
            assert stop.content[0].text.startswith(  # type: ignore[union-attr]
                "You have open todo items:\n- fix the bug (in_progress)\n- update the docs (pending)\n"
            )


def host_pids_running(argv: tuple[str, ...]) -> list[int]:
    """Pids (as this test sees them) of processes with exactly this command line: pids a sandboxed command
    reports are its own pid namespace's, so the test looks the processes up itself."""
    wanted, found = ("\0".join(argv) + "\0").encode(), list[int]()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == wanted:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.anyio
async def test_a_sigkilled_agent_leaves_no_bash_call_processes_alive(tmp_path: Path) -> None:
    # A background job and the foreground child of bash, in the call's process group (and, by default, in
    # the sandbox's pid namespace): unique sleep arguments let the test find them from outside.
    command = "sleep 300.25 & sleep 301.25"
    with FakeAnthropic([reply(tool_use("dev__bash", {"command": command}))]) as fake:
        process = subprocess.Popen(
            agent_command(["-p", "go"]),
            env=agent_env(tmp_path, fake, BUILTINS),
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        pids: list[int] = []
        try:
            with anyio.fail_after(bounded(60)):
                sleeps = (("sleep", "300.25"), ("sleep", "301.25"))
                await wait_until(lambda: all(host_pids_running(argv) for argv in sleeps), "both sleeps")
                pids = [pid for argv in sleeps for pid in host_pids_running(argv)]
            process.kill()
            process.wait(timeout=bounded(10))
            await wait_dead(*pids, timeout=10)
        finally:
            process.kill()
            for pid in pids:
                kill_pid(pid)
