"""examples/stop_while_red.py as a real MCP stdio server: objects while a real pytest run is red."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import pytest

from sprout_agent.config.options import Options
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, reply
from tests.harness import assert_history_valid, result_text, run_agent, tool_results
from tests.headless_here import headless

if TYPE_CHECKING:
    import mcp.types as types
    from mcp import StdioServerParameters

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "stop_while_red.py"
DOCS = Path(__file__).resolve().parent.parent / "docs" / "hooks.md"
RED = "def test_addition_is_right():\n    assert 1 + 1 == 3\n"
GREEN = "def test_addition_is_right():\n    assert 1 + 1 == 2\n"


def text(result: types.CallToolResult) -> str:
    import mcp.types as types

    assert not result.is_error, result.content
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


def server(script: Path, project: Path, command: str) -> StdioServerParameters:
    from mcp import StdioServerParameters

    # The run is awaited as long as the test allows: the background answer has its own test below.
    env = {"TEST_RUNNER_COMMAND": command, "TEST_RUNNER_ANSWER_S": str(bounded(30))}
    return StdioServerParameters(command=sys.executable, args=[str(script)], cwd=str(project), env=env)


@pytest.mark.slow
async def test_stop_objects_with_the_failing_test_until_the_suite_is_green(tmp_path: Path) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    project = tmp_path / "project"
    project.mkdir()
    (project / "test_sums.py").write_text(RED)
    command = f"{sys.executable} -m pytest -q -x -p no:cacheprovider"
    with (tmp_path / "server.log").open("w") as errlog, anyio.fail_after(bounded(60)):
        async with (
            stdio_client(server(EXAMPLE, project, command), errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
            assert [tool.name for tool in listed.tools] == ["_Stop"]
            # Declares no inputs, so sprout-agent calls it with exactly {} (context on request is opt-in).
            assert not listed.tools[0].input_schema.get("properties")

            objection = text(await session.call_tool("_Stop", {}))
            assert "test_sums.py::test_addition_is_right" in objection
            assert "1 failed" in objection and "exits 1" in objection

            (project / "test_sums.py").write_text(GREEN)
            assert text(await session.call_tool("_Stop", {})) == ""


async def test_a_suite_slower_than_the_hook_timeout_keeps_running_and_the_next_stop_answers_from_it(
    tmp_path: Path,
) -> None:
    from mcp import StdioServerParameters
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    gate = tmp_path / "gate"  # the suite runs until the test creates it: no clock decides
    command = f"bash -c 'until [ -e {gate} ]; do sleep 0.05; done; echo 1 failed; exit 1'"
    env = {"TEST_RUNNER_COMMAND": command, "TEST_RUNNER_ANSWER_S": "0.2"}
    params = StdioServerParameters(command=sys.executable, args=[str(EXAMPLE)], cwd=str(tmp_path), env=env)
    with (tmp_path / "server.log").open("w") as errlog, anyio.fail_after(bounded(30)):
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            assert "still running" in text(await session.call_tool("_Stop", {}))
            gate.touch()
            answer = text(await session.call_tool("_Stop", {}))
            while "still running" in answer:  # each call waits up to 0.2 s for the run; bounded by fail_after
                answer = text(await session.call_tool("_Stop", {}))
    assert "exits 1" in answer and "1 failed" in answer


@pytest.mark.slow
async def test_a_test_command_that_cannot_start_is_an_error_result_not_an_objection(tmp_path: Path) -> None:
    import mcp.types as types
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    missing = str(tmp_path / "no-such-program")
    with (tmp_path / "server.log").open("w") as errlog, anyio.fail_after(bounded(30)):
        async with (
            stdio_client(server(EXAMPLE, tmp_path, missing), errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("_Stop", {})
    assert result.is_error
    assert any("cannot run" in b.text for b in result.content if isinstance(b, types.TextContent))


@pytest.mark.slow
async def test_the_example_server_in_the_docs_runs(tmp_path: Path) -> None:
    """The ~20-line server in docs/hooks.md, extracted from the page and run as written."""
    from mcp import StdioServerParameters
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    source = DOCS.read_text().split("```python\n# todo_gate.py\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "todo_gate.py"
    script.write_text(source)
    assert len(source.strip().splitlines()) <= 25
    (tmp_path / "TODO.md").write_text("- [x] parse the config\n- [ ] write the docs\n")
    params = StdioServerParameters(command=sys.executable, args=[str(script)], cwd=str(tmp_path))
    with (tmp_path / "server.log").open("w") as errlog, anyio.fail_after(bounded(30)):
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            (hook,) = (await session.list_tools()).tools
            assert hook.name == "_Stop" and set(hook.input_schema["properties"]) == {"cwd"}
            objection = text(await session.call_tool("_Stop", {"cwd": str(tmp_path)}))
            assert "- [ ] write the docs" in objection and "parse the config" not in objection
            (tmp_path / "TODO.md").write_text("- [x] parse the config\n- [x] write the docs\n")
            assert text(await session.call_tool("_Stop", {"cwd": str(tmp_path)})) == ""


@pytest.mark.parametrize("green", [False, True])
@pytest.mark.slow
def test_through_the_agent_the_model_sees_the_failing_test_as_hook_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, green: bool
) -> None:
    """The examples/README.md setup, end to end: the fake API, the example as server `tests`; red through the
    real CLI, green (no objection, one request) through the headless face in the test's process."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_sums.py").write_text(GREEN if green else RED)
    entry = {
        "command": sys.executable,
        "args": [str(EXAMPLE)],
        "cwd": str(project),
        "env": {
            "TEST_RUNNER_COMMAND": f"{sys.executable} -m pytest -q -x -p no:cacheprovider",
            "TEST_RUNNER_ANSWER_S": str(bounded(20)),
        },
    }
    # A pytest run takes about a second: far more than a tight budget, so the timeout is raised as advised.
    env = {"MCP_HOOK_SERVERS": "tests", "SPROUT_AGENT_HOOK_TIMEOUT_MS": str(int(bounded(30_000)))}
    # As a user runs it, with a built-in server on: a request without tools may not carry tool blocks.
    env["SPROUT_AGENT_BUILTIN_SERVERS"] = "todo"
    with FakeAnthropic([reply("Done."), reply("I will leave it red.")]) as fake:
        servers = {"tests": entry}
        if green:
            options = Options(prompt="make 1 + 1 == 3 pass")
            run = headless(tmp_path, monkeypatch, options, fake=fake, servers=servers, env=env)
        else:
            run = run_agent(tmp_path, ["-p", "make 1 + 1 == 3 pass"], fake=fake, servers=servers, env=env)
    assert run.code == 0, run.stderr
    if green:
        assert run.stdout == "Done.\n" and len(fake.requests) == 1
        return
    assert run.stdout == "I will leave it red.\n" and len(fake.requests) == 2
    assert "hook _Stop from tests objected" in run.stderr
    second = fake.requests[1].body
    assert_history_valid(second)
    (result,) = tool_results(second)
    assert result["tool_use_id"].startswith("sprout_hook_")
    hook = json.loads(result_text(result))
    assert hook["hook"] == "_Stop" and hook["server"] == "tests"
    assert "test_sums.py::test_addition_is_right" in hook["text"]


@pytest.mark.slow
def test_the_readme_snippet_pasted_into_a_scratch_project_passes_hooks_test_and_objects_while_red(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sprout_agent.faces.cli.commands.doctor import load_setup
    from sprout_agent.faces.cli.commands.hooks_test import hooks_test_command

    """examples/README.md followed as written: the file copied, the JSON snippet pasted into `.mcp.json` unchanged."""
    readme = (EXAMPLE.parent / "README.md").read_text()
    snippet = readme.split("## `stop_while_red.py`", 1)[1].split("```json\n", 1)[1].split("```", 1)[0]
    project = tmp_path / "project"
    (project / "examples").mkdir(parents=True)
    (project / "examples" / EXAMPLE.name).write_text(EXAMPLE.read_text())
    (project / ".mcp.json").write_text(snippet)
    (project / "test_sums.py").write_text(RED)
    env = {"MCP_HOOK_SERVERS": "tests", "SPROUT_AGENT_TRUST_PROJECT": "1", "SPROUT_AGENT_BUILTIN_SERVERS": "todo"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(project)  # `hooks test` in the scratch project, in this process (the run below is a process)
    setup = load_setup((), project, tmp_path / "config", tmp_path / "data", False)
    assert hooks_test_command(setup, ["tests"], None, as_json=False) == 0
    checked = capsys.readouterr().out
    assert "_Stop" in checked and "objection" in checked
    env["SPROUT_AGENT_HOOK_TIMEOUT_MS"] = str(int(bounded(2500)))  # the default, scaled on a loaded machine
    with FakeAnthropic([reply("Done."), reply("Still done.")]) as fake:
        run = run_agent(project, ["-p", "make it pass"], fake=fake, env=env)
    assert run.code == 0, run.stderr
    assert "hook _Stop from tests objected" in run.stderr
    (result,) = tool_results(fake.requests[1].body)
    hook = json.loads(result_text(result))
    assert "test_sums.py" in hook["text"] or "still running" in hook["text"]
