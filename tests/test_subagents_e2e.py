"""Subagents through the built-in `agent` MCP server and the real pool: in the test's process with the headless
face, and as a process for what only a process shows (SIGINT reaching a child's command, a child's bash in the
sandbox)."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.config.options import Options
from sprout_agent.trust.sandbox import probe as sandbox_probe
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import pid_alive, start_agent, tool_names, wait_for
from tests.headless_here import headless
from tests.test_scripting import wait_until_gone

pytestmark = pytest.mark.e2e
BUILTINS = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev,todo,agent"}
EXPLORE = {"description": "find the flag", "prompt": "Where is --json handled?", "subagent_type": "Explore"}


def lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_an_explore_child_searches_with_its_own_tools_and_model_and_stream_json_nests_its_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cli.py").write_text("def main():\n    parse('--json')\n")
    script = [
        reply(tool_use("agent__task", EXPLORE, id="toolu_task")),
        reply(tool_use("dev__grep", {"pattern": "--json"}, id="toolu_grep")),
        reply("--json is handled in cli.py:2"),
        reply("It is in cli.py."),
    ]
    with FakeAnthropic(script) as fake:
        options = Options(prompt="where is --json handled?", output_format="stream-json", verbose=True, cwd=tmp_path)
        run = headless(tmp_path, monkeypatch, options, fake=fake, env=BUILTINS)
    assert run.code == 0, run.stderr
    parent, child = fake.requests[0].body, fake.requests[1].body
    assert "agent__task" in tool_names(parent)
    assert sorted(tool_names(child)) == ["dev__glob", "dev__grep", "dev__read"]
    assert child["model"] == "claude-haiku-5-5" and child["messages"][0]["content"][0]["text"] == EXPLORE["prompt"]
    grep_result = fake.requests[2].body["messages"][-1]["content"][0]
    assert "cli.py" in json.dumps(grep_result)  # the real grep ran in the working directory
    answer = fake.requests[3].body["messages"][-1]["content"][0]
    assert answer["tool_use_id"] == "toolu_task" and "cli.py:2" in json.dumps(answer["content"])
    out = lines(run.stdout)
    nested = [line for line in out if line.get("parent_tool_use_id") == "toolu_task"]
    assert [line["type"] for line in nested] == ["assistant", "user"]  # the grep call and its result; no text
    assert nested[0]["message"]["content"][0]["name"] == "Grep"
    init = next(line for line in out if line.get("subtype") == "init")
    assert "Agent" in init["tools"]
    result = out[-1]
    assert result["total_cost_usd"] > 0 and result["num_turns"] == 2


def test_sigint_reaches_a_childs_running_command_and_the_agent_exits(tmp_path: Path) -> None:
    pidfile = tmp_path / "sleeper.pid"
    sleep = {"command": f"sleep 300 & echo $! > {pidfile}; wait"}
    task = {"description": "wait", "prompt": "run the long command", "subagent_type": "general-purpose"}
    script = [reply(tool_use("agent__task", task, id="toolu_task")), reply(tool_use("dev__bash", sleep))]
    with FakeAnthropic(script) as fake:
        args = ["--output-format", "stream-json", "--verbose", "-p", "go"]
        process = start_agent(tmp_path, args, fake=fake, env={**BUILTINS, "SPROUT_AGENT_SANDBOX": "off"}, text=True)
        try:
            wait_for(lambda: pidfile.exists() and pidfile.read_text().strip() != "", "the child's command", process)
            sleeper = int(pidfile.read_text())
            assert pid_alive(sleeper)
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=bounded(20))
        finally:
            process.kill()
    assert process.returncode == 130, err
    assert wait_until_gone(sleeper), "the child's command outlived the agent"
    result = lines(out)[-1]
    assert result["stop_reason"] == "interrupted"


@pytest.mark.skipif(sandbox_probe() is not None, reason="no sandbox here (.ci/run installs bubblewrap)")
def test_a_childs_command_runs_in_the_sessions_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = Path("/etc/sprout-subagent-test-write")  # writable by root without the sandbox (not /tmp: private)
    outside.unlink(missing_ok=True)
    task = {"description": "write", "prompt": "write a file outside", "subagent_type": "general-purpose"}
    script = [
        reply(tool_use("agent__task", task, id="toolu_task")),
        reply(tool_use("dev__bash", {"command": f"echo x > {outside} && echo wrote"}, id="toolu_write")),
        reply("I could not write it."),
        reply("The subagent could not write outside."),
    ]
    with FakeAnthropic(script) as fake:
        options = Options(prompt="go", output_format="json", cwd=tmp_path)
        try:
            run = headless(tmp_path, monkeypatch, options, fake=fake, env=BUILTINS)
            assert not outside.exists()
        finally:
            outside.unlink(missing_ok=True)
    assert run.code == 0, run.stderr
    denied = json.dumps(fake.requests[2].body["messages"][-1]["content"][0])
    assert "wrote" not in denied and ("Read-only file system" in denied or "sandbox" in denied)


def test_a_childs_transcript_lies_beside_the_sessions_shows_under_its_call_on_the_page_and_is_pruned_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sprout_agent.config.locations import Locations
    from sprout_agent.faces.cli.commands import sessions
    from sprout_agent.session import index

    script = [reply(tool_use("agent__task", EXPLORE, id="toolu_task")), reply("found it"), reply("It is found.")]
    with FakeAnthropic(script) as fake:
        options = Options(prompt="go", output_format="json", cwd=tmp_path)
        run = headless(tmp_path, monkeypatch, options, fake=fake, env=BUILTINS)
    assert run.code == 0, run.stderr
    session_id = json.loads(run.stdout)["session_id"]
    directory = Locations.for_user().sessions
    assert directory is not None
    (child,) = (directory / f"{session_id}.agents").glob("agent-*.jsonl")
    records = [json.loads(line) for line in child.read_text().splitlines()]
    assert records[0]["type"] == "session" and "Where is --json handled?" in json.dumps(records)
    assert (records[0]["agent_type"], records[0]["parent_tool_use_id"]) == ("Explore", "toolu_task")
    assert records[0]["model"] == fake.requests[1].body["model"]  # the child's model, not the parent's
    capsys.readouterr()
    assert sessions.export_command(session_id, as_json=True, out=tmp_path / "page.json") == 0
    page = json.loads((tmp_path / "page.json").read_text())
    (task,) = [entry for entry in page["entries"] if entry["name"] == "agent__task"]
    assert task["subagent"]["agent_type"] == "Explore" and task["subagent"]["entries"][-1]["text"] == "found it"
    assert [info.session_id for info in index.list_sessions(directory)] == [session_id]
    capsys.readouterr()
    assert sessions.prune_command(older_than_days=0, dry_run=False, as_json=True) == 0
    assert not (directory / f"{session_id}.agents").exists()


def test_a_skill_is_listed_in_the_system_prompt_and_its_body_read_when_the_model_asks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skill = tmp_path / ".claude" / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: release-notes\ndescription: Writes release notes\n---\nGroup by area.\n"
    )
    script = [reply(tool_use("agent__skill", {"skill": "release-notes"}, id="toolu_skill")), reply("Grouped.")]
    with FakeAnthropic(script) as fake:
        options = Options(prompt="write the notes", output_format="json", cwd=tmp_path)
        run = headless(tmp_path, monkeypatch, options, fake=fake, env=BUILTINS)
    assert run.code == 0, run.stderr
    system = json.dumps(fake.requests[0].body["system"])
    assert "- release-notes: Writes release notes" in system and "Group by area" not in system
    assert "agent__skill" in tool_names(fake.requests[0].body)
    body = json.dumps(fake.requests[1].body["messages"][-1]["content"][0])
    assert "Group by area." in body


def test_agents_given_as_json_are_chosen_by_the_model_and_listed_in_init(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agents = json.dumps(
        {"greeter": {"description": "Greets", "prompt": "Reply with one friendly sentence.", "tools": []}}
    )
    task = {"description": "greet", "prompt": "say hi", "subagent_type": "greeter"}
    script = [reply(tool_use("agent__task", task, id="toolu_task")), reply("Hi there!"), reply("DONE")]
    with FakeAnthropic(script) as fake:
        options = Options(prompt="go", output_format="stream-json", verbose=True, cwd=tmp_path, agents_json=(agents,))
        run = headless(tmp_path, monkeypatch, options, fake=fake, env=BUILTINS)
    assert run.code == 0, run.stderr
    init = lines(run.stdout)[0]
    assert "greeter" in init["agents"] and "Explore" in init["agents"]
    child = fake.requests[1].body
    assert "Reply with one friendly sentence." in json.dumps(child["system"]) and tool_names(child) == []


def test_a_child_on_the_sessions_own_model_streams_nothing_as_the_parents_partial_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # general-purpose inherits the session's model: its raw stream events went out as the parent's, its text with
    # them, though a child's text stays out of stream-json (without --forward-subagent-text).
    task = {"description": "look", "prompt": "look around", "subagent_type": "general-purpose"}
    script = [reply(tool_use("agent__task", task, id="toolu_task")), reply("the child's own words"), reply("Done.")]
    with FakeAnthropic(script) as fake:
        options = Options(
            prompt="go", output_format="stream-json", verbose=True, include_partial_messages=True, cwd=tmp_path
        )
        run = headless(tmp_path, monkeypatch, options, fake=fake, env=BUILTINS)
    assert run.code == 0, run.stderr
    streamed = [line["event"] for line in lines(run.stdout) if line["type"] == "stream_event"]
    deltas = [e["delta"] for e in streamed if e["type"] == "content_block_delta"]
    assert "".join(d["text"] for d in deltas if d["type"] == "text_delta") == "Done."  # the parent's reply only


def test_an_sdk_in_its_default_mode_starts_its_agents_unasked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The SDK names no mode: Claude Code's `default` (ask, nobody to ask). Claude Code does not ask before a
    # subagent starts (each of its calls is asked), so `agents=` works without allowed_tools=["Agent"].
    from tests.fake_sdk import FakeSdk, mentions, run_with_sdk
    from tests.harness import result_text, tool_results

    def script(sdk: FakeSdk) -> None:
        sdk.user("greet")
        sdk.expect(mentions("DONE"))

    agents = json.dumps({"greeter": {"description": "Greets", "prompt": "Reply.", "tools": []}})
    task = {"description": "greet", "prompt": "say hi", "subagent_type": "greeter"}
    with FakeAnthropic([reply(tool_use("agent__task", task, id="toolu_task")), reply("Hi"), reply("DONE")]) as fake:
        options = Options(prompt=None, agents_json=(agents,))
        env = {**BUILTINS, "CLAUDE_AGENT_SDK_VERSION": "0.1.0"}
        code, _, err = run_with_sdk(tmp_path, monkeypatch, script, fake=fake, env=env, options=options)
    assert code == 0, err
    assert result_text(tool_results(fake.requests[-1].body)[0]) == "Hi"


def test_a_childs_todo_list_does_not_replace_the_sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The todo server keeps one list, the session's plan (and its `_Stop` hook objects while it has open items):
    # a child's todo_write replaced it, so the parent lost its plan or was held back by the child's items.
    plan = {"todos": [{"content": "ship the release", "status": "in_progress"}]}
    childs = {"todos": [{"content": "grep for the flag", "status": "pending"}]}
    task = {"description": "look", "prompt": "look around", "subagent_type": "general-purpose"}
    script = [
        reply(tool_use("todo__todo_write", plan, id="toolu_plan"), tool_use("agent__task", task, id="toolu_task")),
        reply(tool_use("todo__todo_write", childs, id="toolu_child_plan")),
        reply("looked"),
        reply(tool_use("todo__todo_read", {}, id="toolu_read")),
        reply("Done."),
    ]
    with FakeAnthropic(script) as fake:
        options = Options(prompt="go", output_format="json", cwd=tmp_path)
        run = headless(tmp_path, monkeypatch, options, fake=fake, env=BUILTINS)
    assert run.code == 0, run.stderr
    read = json.dumps(fake.requests[4].body["messages"][-1]["content"])
    assert "ship the release" in read and "grep for the flag" not in read
