"""`sprout-agent mcp serve` as a process, driven by the mcp SDK's own client over stdio and Streamable HTTP, on the
fake Anthropic API: a tool round that writes a file, a reply to the session, a cancelled call whose session goes on,
the bound on sessions, and sprout-agent itself, the MCP Inspector and Claude Code as the client. The rules:
tests/test_mcp_serve.py."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from tests.bounds import bounded
from tests.claude_code import CLAUDE, answers_to, claude_env, needs_claude
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import agent_command, agent_env, assert_history_valid, run_agent, tool_results, wait_until

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import CallToolResult

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]
SERVE_ENV = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev", "SPROUT_AGENT_SANDBOX": "off"}


@asynccontextmanager
async def serving(tmp_path: Path, fake: FakeAnthropic, *args: str) -> AsyncIterator[Client]:
    from mcp import Client, StdioServerParameters

    env = agent_env(tmp_path, fake, SERVE_ENV)
    command = agent_command(["mcp", "serve", *args])
    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(tmp_path))
    async with Client(params) as client:
        yield client


async def call(client: Client, name: str, steps: list[str] | None = None, **arguments: object) -> CallToolResult:
    async def heard(progress: float, total: float | None, message: str | None) -> None:
        if steps is not None:
            steps.append(message or "")

    with anyio.fail_after(bounded(60)):
        return await client.call_tool(name, arguments, progress_callback=heard)


def text_of(result: CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def user_texts(body: dict[str, Any]) -> str:
    return json.dumps([m["content"] for m in body["messages"] if m["role"] == "user"])


@pytest.mark.slow
async def test_a_sprout_call_writes_a_file_answers_with_its_session_and_the_session_takes_a_reply(
    tmp_path: Path,
) -> None:
    """One server: a tool round with its progress, the answer's structured content, and `sprout-reply` going on
    with the same conversation; a session id the server did not begin is refused."""
    repo = tmp_path / "repo"
    repo.mkdir()
    script = [
        reply(tool_use("dev__write", {"file_path": "hello.txt", "content": "hi\n"}, id="w")),
        reply("I wrote hello.txt."),
        reply("It says hi."),
    ]
    with FakeAnthropic(script) as fake:
        async with serving(tmp_path, fake) as client:
            listed = await client.list_tools()
            assert {tool.name for tool in listed.tools} == {"sprout", "sprout-reply"}
            steps: list[str] = []
            first = await call(client, "sprout", steps, prompt="write hello.txt", cwd=str(repo))
            assert not first.is_error, text_of(first)
            assert (repo / "hello.txt").read_text() == "hi\n"
            data = first.structured_content or {}
            assert text_of(first) == data["result"] == "I wrote hello.txt."
            assert data["stop_reason"] == "end_turn" and data["is_error"] is False
            assert data["cost_usd"] > 0
            assert [(f["path"], f["status"]) for f in data["files_changed"]] == [("hello.txt", "added")]
            assert steps == ["model request 1", "tool dev__write", "model request 2"]

            second = await call(client, "sprout-reply", session_id=data["session_id"], prompt="what does it say?")
            assert text_of(second) == "It says hi."
            again = second.structured_content or {}
            assert again["session_id"] == data["session_id"]
            assert again["session_cost_usd"] == pytest.approx(again["cost_usd"] + data["cost_usd"])
            body = fake.requests[-1].body
            assert "write hello.txt" in user_texts(body) and "what does it say?" in user_texts(body)
            assert_history_valid(body)

            stranger = await call(client, "sprout-reply", session_id="not-ours", prompt="hello?")
            assert stranger.is_error and "no session 'not-ours' began here" in text_of(stranger)
        assert len(fake.requests) == 3


@pytest.mark.slow
async def test_a_cancelled_call_ends_its_turn_cleanly_and_the_bound_refuses_a_second_session_meanwhile(
    tmp_path: Path,
) -> None:
    """--max-sessions 1: while a call runs a command, another is refused; the caller's cancellation ends the turn
    (the command's call is answered as interrupted) and the session takes a reply with a valid history."""
    script = [reply(tool_use("dev__bash", {"command": "sleep 60"}, id="b")), reply("Back again.")]
    with FakeAnthropic(script) as fake:
        async with serving(tmp_path, fake, "--max-sessions", "1") as client:
            steps: list[str] = []
            async with anyio.create_task_group() as group:
                group.start_soon(lambda: call(client, "sprout", steps, prompt="run the long command"))
                await wait_until(lambda: "tool dev__bash" in steps, "the command's start")
                refused = await call(client, "sprout", prompt="another task")
                assert refused.is_error
                assert "running 1 sessions, its bound (mcp serve --max-sessions 1)" in text_of(refused)
                group.cancel_scope.cancel()  # the client sends notifications/cancelled for the call
            session_id = await _only_session(client, tmp_path)
            answer = await _reply_once_free(client, session_id, "are you there?")
            assert text_of(answer) == "Back again."
        body = fake.requests[-1].body
        assert_history_valid(body)
        assert [block["tool_use_id"] for block in tool_results(body)] == ["b"]
        assert "run the long command" in user_texts(body) and "are you there?" in user_texts(body)


async def _only_session(client: Client, tmp_path: Path) -> str:
    """The id of the one recorded session (the cancelled call never answered with it)."""
    sessions = tmp_path / "data" / "sprout-agent" / "sessions"
    await wait_until(lambda: len(list(sessions.glob("*.jsonl"))) == 1, "the session's transcript")
    return next(sessions.glob("*.jsonl")).stem


async def _reply_once_free(client: Client, session_id: str, prompt: str) -> CallToolResult:
    """The cancelled run closes its runtime after the cancel: until then the session (and the slot) is busy."""
    while True:
        answer = await call(client, "sprout-reply", session_id=session_id, prompt=prompt)
        if not (answer.is_error and ("bound" in text_of(answer) or "another call" in text_of(answer))):
            return answer
        await anyio.sleep(0.05)


@pytest.mark.slow
async def test_streamable_http_serves_on_loopback_and_a_token_when_set_is_required(tmp_path: Path) -> None:
    from mcp import Client

    env = agent_env(tmp_path, None, {**SERVE_ENV, "SPROUT_AGENT_SERVE_TOKEN": "s3cret-token"})
    with FakeAnthropic([reply("Over HTTP.")]) as fake:
        env["ANTHROPIC_BASE_URL"] = fake.base_url
        process = subprocess.Popen(
            agent_command(["mcp", "serve", "--http", "0"]),
            env=env,
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stderr is not None
            line = process.stderr.readline()
            assert line.startswith("sprout-agent: serving MCP at http://127.0.0.1:"), line
            url = line.split(" at ", 1)[1].strip()
            with pytest.raises(urllib.error.HTTPError) as caught:
                urllib.request.urlopen(urllib.request.Request(url, data=b"{}", method="POST"), timeout=10)
            assert caught.value.code == 401
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            async with httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret-token"}) as http:
                with anyio.fail_after(bounded(30)):
                    async with Client(streamable_http_client(url, http_client=http)) as client:
                        result = await call(client, "sprout", prompt="hello over http")
            assert text_of(result) == "Over HTTP." and not result.is_error
        finally:
            process.terminate()
            process.wait(timeout=bounded(30))
    assert process.returncode in (0, 130, 143)


@pytest.mark.slow
def test_sprout_agent_hands_a_task_to_sprout_agent_mcp_serve_as_an_mcp_server(tmp_path: Path) -> None:
    """The client is sprout-agent itself: a config whose server runs `sprout-agent mcp serve`, the key passed to it
    explicitly (nothing of ours reaches a server unasked); the inner agent's answer is the outer's tool result."""
    inner = [sys.executable, "-m", "sprout_agent", "mcp", "serve"]
    env = {"ANTHROPIC_API_KEY": "${ANTHROPIC_API_KEY}", "ANTHROPIC_BASE_URL": "${ANTHROPIC_BASE_URL}"}
    env |= {"PYTHONPATH": "${PYTHONPATH}", "SPROUT_AGENT_BUILTIN_SERVERS": "none"}
    servers = {"sprout": {"command": inner[0], "args": inner[1:], "env": env}}
    script = [
        reply(tool_use("sprout__sprout", {"prompt": "say hello"}, id="t")),
        reply("Hello from the inner agent."),
        reply("The inner agent said hello."),
    ]
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, ["-p", "ask the other agent"], fake=fake, servers=servers)
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == "The inner agent said hello."
    outer, inner_request, last = (request.body for request in fake.requests)
    assert "sprout__sprout" in [tool["name"] for tool in outer["tools"]]
    assert "say hello" in user_texts(inner_request)
    assert "Hello from the inner agent." in json.dumps(tool_results(last))


INSPECTOR = Path(__file__).resolve().parent.parent / ".ci/peers/node_modules/.bin/mcp-inspector"


@pytest.mark.slow
def test_the_mcp_inspector_cli_lists_the_tools_and_calls_sprout(tmp_path: Path) -> None:
    """A third-party client: the MCP Inspector's CLI (npm, installed by .ci/run) over stdio."""
    if not INSPECTOR.exists():
        pytest.skip("the MCP Inspector is not installed: .ci/run installs it in .ci/peers")
    with FakeAnthropic([reply("Inspected.")]) as fake:
        env = agent_env(tmp_path, fake, SERVE_ENV)
        server = [part for key, value in env.items() for part in ("-e", f"{key}={value}")]
        server += agent_command(["mcp", "serve"])
        listed = _inspect([*server, "--method", "tools/list"], env, tmp_path)
        assert {tool["name"] for tool in listed["tools"]} == {"sprout", "sprout-reply"}
        called = _inspect(
            [*server, "--method", "tools/call", "--tool-name", "sprout", "--tool-arg", "prompt=hello"], env, tmp_path
        )
    assert called["content"][0]["text"] == "Inspected."
    assert called["structuredContent"]["result"] == "Inspected." and called["structuredContent"]["session_id"]


def _inspect(args: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    completed = subprocess.run(
        [str(INSPECTOR), "--cli", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=bounded(60)
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


@pytest.mark.slow
@needs_claude
def test_claude_code_hands_a_task_to_sprout_agent_mcp_serve_as_an_mcp_server(tmp_path: Path) -> None:
    """Claude Code as the client (the `claude` binary the TypeScript Agent SDK ships, .ci/run installs it): a
    `--mcp-config` whose server runs `sprout-agent mcp serve`; its `mcp__sprout__sprout` call gets the inner agent's
    answer, and the inner agent's request is ours, on the same fake API."""
    script = [
        reply(tool_use("mcp__sprout__sprout", {"prompt": "say hello"}, id="toolu_outer")),
        reply("Hello from sprout-agent."),
        *[reply("Claude Code heard it.")] * 5,  # Claude Code may send a request of its own after the answer
    ]
    with FakeAnthropic(script, auto_usage=True) as fake:
        inner_env = agent_env(tmp_path, fake, SERVE_ENV)
        command = agent_command(["mcp", "serve"])
        config = {"mcpServers": {"sprout": {"command": command[0], "args": command[1:], "env": inner_env}}}
        (tmp_path / "mcp.json").write_text(json.dumps(config))
        home = tmp_path / "claude-home"
        home.mkdir()
        env = claude_env(home, fake)
        argv = [str(CLAUDE), "-p", "ask sprout-agent", "--output-format", "json", "--model", "claude-sonnet-4-6"]
        argv += ["--mcp-config", str(tmp_path / "mcp.json"), "--allowedTools", "mcp__sprout__sprout"]
        done = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=bounded(120))
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["result"] == "Claude Code heard it."
    inner = [r.body for r in fake.requests if "say hello" in user_texts(r.body)]
    assert len(inner) == 1  # the inner agent's own request, with the task as its prompt
    answered = answers_to(fake, "toolu_outer")
    assert answered and "Hello from sprout-agent." in json.dumps(answered[0])
