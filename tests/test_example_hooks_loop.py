"""The example hook servers of examples/ through the agent: the `_PreToolUse` guard in the real loop with the real
pool (in-process servers, the built-in dev server beside it), and the `_SessionStart` git context through the
headless face with the example as a stdio process, as examples/README.md sets them up."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from sprout_agent.config.options import Options
from sprout_agent.core.events import Event, HookObjected
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic
from tests.fake_anthropic import reply as api_reply
from tests.harness import assert_history_valid
from tests.headless_here import headless
from tests.inproc_examples import config
from tests.loop_doubles import build_loop, builtin_pool, call, reply

pytestmark = pytest.mark.anyio

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.e2e
async def test_the_guard_stops_a_destructive_command_and_a_write_to_env_and_lets_the_rest_run(tmp_path: Path) -> None:
    events: list[Event] = []
    script = [
        reply(
            call("dev__bash", "t_rm", command="rm -rf ."), call("dev__write", "t_env", file_path=".env", content="K=1")
        ),
        reply(call("dev__bash", "t_ok", command="echo kept > kept.txt")),
        reply("done"),
    ]
    (tmp_path / "precious.txt").write_text("still here")
    with anyio.fail_after(bounded(30)):
        async with builtin_pool(tmp_path, events, ["dev"], before=[config("pre_tool_guard", tmp_path)]) as pool:
            loop = build_loop(script, host=pool, hook_servers="pre_tool_guard", tool_hooks=True)
            assert (await loop.turn("clean up")).text == "done"
    first = loop.results(2)
    assert first["t_rm"][0] and "is rm -rf" in json.loads(first["t_rm"][1].split("\n", 1)[1])["text"]
    assert first["t_env"][0] and "protected path (.env)" in first["t_env"][1]
    assert (tmp_path / "precious.txt").read_text() == "still here" and not (tmp_path / ".env").exists()
    assert not loop.results(4)["t_ok"][0]
    assert (tmp_path / "kept.txt").read_text() == "kept\n"
    assert [e.server for e in loop.of(HookObjected)] == ["pre_tool_guard", "pre_tool_guard"]


async def test_the_guard_refuses_dev_writes_and_edits_of_env_and_mcp_json_named_by_file_path_as_the_tools_send_it(
    tmp_path: Path,
) -> None:
    # Was no objection at all: the guard read `path`, and dev__write and dev__edit send `file_path`.
    env, servers = tmp_path / ".env", tmp_path / ".mcp.json"
    env.write_text("API_KEY=mine\n")
    servers.write_text('{"mcpServers": {}}\n')
    (tmp_path / "notes.md").symlink_to(".env")
    evil = '{"mcpServers": {"x": {"command": "sh"}}}'
    script = [  # read first: the dev tools refuse to change a file the session has not read, guard or not
        reply(
            *(call("dev__read", f"r{n}", file_path=name) for n, name in enumerate((".env", ".mcp.json", "notes.md")))
        ),
        reply(
            call("dev__write", "t_env", file_path=".env", content="API_KEY=theirs\n"),
            call("dev__edit", "t_mcp", file_path=".mcp.json", old_string='{"mcpServers": {}}', new_string=evil),
            call("dev__write", "t_abs", file_path=str(servers), content=evil),
            call("dev__edit", "t_link", file_path="notes.md", old_string="mine", new_string="theirs"),
            call("dev__write", "t_ok", file_path="notes.txt", content="kept\n"),
        ),
        reply("done"),
    ]
    events: list[Event] = []
    with anyio.fail_after(bounded(30)):
        async with builtin_pool(tmp_path, events, ["dev"], before=[config("pre_tool_guard", tmp_path)]) as pool:
            loop = build_loop(script, host=pool, hook_servers="pre_tool_guard", tool_hooks=True, cwd=str(tmp_path))
            assert (await loop.turn("tidy the config")).text == "done"
    assert not any(is_error for is_error, _ in loop.results(2).values())
    results = loop.results(4)
    for call_id, glob in (("t_env", ".env"), ("t_mcp", ".mcp.json"), ("t_abs", ".mcp.json"), ("t_link", ".env")):
        is_error, text = results[call_id]
        assert is_error and f"is a protected path ({glob})" in text, (call_id, text)
    assert env.read_text() == "API_KEY=mine\n" and servers.read_text() == '{"mcpServers": {}}\n'
    assert not results["t_ok"][0] and (tmp_path / "notes.txt").read_text() == "kept\n"
    assert len(loop.of(HookObjected)) == 4


@pytest.mark.e2e  # it starts an MCP server as a process
def test_session_start_git_puts_the_branch_and_status_before_the_first_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git = ["git", "-C", str(project), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", "-b", "feature/login"], check=True, timeout=bounded(30))
    (project / "notes.txt").write_text("draft\n")
    entry = {"command": sys.executable, "args": [str(EXAMPLES / "session_start_git.py")]}
    options = Options(prompt="what am I working on?", cwd=project)
    with FakeAnthropic([api_reply("On feature/login.")]) as fake:
        run = headless(
            tmp_path, monkeypatch, options, fake=fake, servers={"git": entry}, env={"MCP_HOOK_SERVERS": "git"}
        )
    assert run.code == 0, run.stderr
    body = fake.requests[0].body
    assert_history_valid(body)
    # No tools in this request (the git server has only its hook): the hook pair travels as text, as the API needs.
    texts = [b["text"] for m in body["messages"] for b in m["content"] if b["type"] == "text"]
    (injected,) = [json.loads(t) for t in texts if t.startswith('{"hook"')]
    assert injected["hook"] == "_SessionStart" and injected["server"] == "git"
    assert "on git branch feature/login" in injected["text"] and "?? notes.txt" in injected["text"]
