"""The built-in dev and todo servers through the real agent loop, as a new user gets them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.fake_anthropic import FakeAnthropic, Step, reply, tool_use
from tests.harness import assert_history_valid, result_text, run_agent, tool_names, tool_results

BUILTINS = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev,todo"}


def test_builtin_servers_start_by_default_without_any_config(tmp_path: Path) -> None:
    with FakeAnthropic([reply("hello")]) as fake:
        run = run_agent(tmp_path, ["-p", "hi"], fake=fake, env=BUILTINS)
    assert run.code == 0, run.stderr
    names = tool_names(fake.requests[0].body)
    for expected in ("dev__read", "dev__write", "dev__edit", "dev__glob", "dev__grep", "dev__bash", "todo__todo_write"):
        assert expected in names
    assert not any("_Stop" in name or "_PostCompact" in name for name in names)


def test_builtin_servers_can_be_turned_off(tmp_path: Path) -> None:
    with FakeAnthropic([reply("hello")]) as fake:
        run = run_agent(tmp_path, ["-p", "hi"], fake=fake, env={"SPROUT_AGENT_BUILTIN_SERVERS": "todo"})
    assert run.code == 0, run.stderr
    names = tool_names(fake.requests[0].body)
    assert "todo__todo_read" in names and not any(n.startswith("dev__") for n in names)


def test_todo_hook_keeps_the_agent_going_until_the_list_is_done(tmp_path: Path) -> None:
    todo = [{"content": "write the parser", "status": "in_progress"}]
    script: list[Step] = [
        reply(tool_use("todo__todo_write", {"todos": todo})),
        reply("I think I am done."),
        reply(tool_use("todo__todo_write", {"todos": [{**todo[0], "status": "completed"}]})),
        reply("All items completed."),
    ]
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, env={**BUILTINS, "MCP_HOOK_SERVERS": "todo"})
    assert run.code == 0, run.stderr
    assert run.stdout == "All items completed.\n"
    assert len(fake.requests) == 4
    objection = json.loads(result_text(tool_results(fake.requests[2].body)[-1]))
    assert objection["hook"] == "_Stop" and objection["server"] == "todo"
    assert "You have open todo items" in objection["text"] and "write the parser" in objection["text"]
    assert_history_valid(fake.requests[3].body)


def test_a_scripted_session_fixes_a_failing_test_in_a_git_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    pytest_command = f"{sys.executable} -m pytest -q -p no:cacheprovider"
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
    results = [result_text(tool_results(fake.requests[i].body)[-1]) for i in range(1, 5)]
    assert "1 failed" in results[0]
    assert "return a - b" in results[1]
    assert "+    return a + b" in results[2]  # the edit's short diff
    assert "1 passed" in results[3]
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
