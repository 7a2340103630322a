"""Where the session hooks fire in each face, in this process with real (stdlib, fast) server processes:
`-p` (startup, resume, the end of the run), ACP (session/new, the end of input = close) and /clear.
A signal's `_SessionEnd` is checked in tests/test_scripting.py, on the signal test's own process."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sprout_agent.config.options import Options
from sprout_agent.core.messages import ToolResult
from sprout_agent.session import store
from tests.acp_pipes import pipe_agent, prompt_line, session_env
from tests.fake_anthropic import FakeAnthropic, reply
from tests.harness import FAKE_MCP, fake_server, read_log
from tests.headless_here import headless
from tests.loop_doubles import hook_data
from tests.stream_schema import of_type, stream

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]  # real server processes; the agent runs in this process
SESSION_HOOKS = {"_SessionStart": "on branch main", "_SessionEnd": ""}
HOOKS_ON = {"MCP_HOOK_SERVERS": "*"}


def calls(log: Path) -> list[tuple[str, object]]:
    hooks = [c for c in read_log(log) if c["tool"].startswith("_")]
    return [(c["tool"], c["arguments"].get("source", c["arguments"].get("reason"))) for c in hooks]


def test_a_print_run_starts_and_ends_its_session_and_a_resume_starts_with_source_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.jsonl"
    servers = {"git": fake_server(tools="echo", hooks=SESSION_HOOKS, log=str(log))}
    options = Options("what branch?", cwd=tmp_path, output_format="stream-json")
    with FakeAnthropic([reply("main"), reply("still main")]) as fake:
        first = headless(tmp_path, monkeypatch, options, fake=fake, servers=servers, env=HOOKS_ON)
        (path,) = (tmp_path / "data" / "sprout-agent" / "sessions").glob("*.jsonl")
        again = Options("and now?", cwd=tmp_path, resume_id=path.stem)
        second = headless(tmp_path, monkeypatch, again, fake=fake, servers=servers, env=HOOKS_ON)
    assert first.code == 0 and second.code == 0, first.stderr + second.stderr
    assert calls(log) == [
        ("_SessionStart", "startup"),
        ("_SessionEnd", "exit"),
        ("_SessionStart", "resume"),
        ("_SessionEnd", "exit"),
    ]
    assert [h["text"] for h in hook_data(fake.requests[0].body)] == ["on branch main"]
    # The resumed request carries the stored pair as it was sent, then the new prompt and the new pair.
    assert [h["text"] for h in hook_data(fake.requests[1].body)] == ["on branch main"] * 2
    assert [line["hook"] for line in of_type(stream(first.stdout), "hook_injected")] == ["_SessionStart"]
    stored = store.load(path).history  # the pairs are recorded like any message: a resume replays them
    assert sum(isinstance(b, ToolResult) for m in stored for b in m.content) == 2


async def test_an_acp_session_starts_on_session_new_and_ends_when_the_input_closes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.jsonl"
    knobs = fake_server(tools="echo", hooks=SESSION_HOOKS, log=str(log))
    env = [{"name": k, "value": v} for k, v in knobs["env"].items()]
    server = {"name": "git", "command": sys.executable, "args": [FAKE_MCP], "env": env}
    with FakeAnthropic([reply("main")]) as fake:
        session_env(monkeypatch, fake)
        monkeypatch.setenv("MCP_HOOK_SERVERS", "*")
        async with pipe_agent() as client:
            created = await client.request(1, "session/new", {"cwd": str(tmp_path), "mcpServers": [server]})
            session_id = created["result"]["sessionId"]
            await client.send(prompt_line(2, session_id, "hi"))
            assert (await client.answer(2))["result"]["stopReason"] == "end_turn"
    assert calls(log) == [("_SessionStart", "startup"), ("_SessionEnd", "close")]
    thoughts = [
        m["params"]["update"]
        for m in client.messages
        if m.get("method") == "session/update" and m["params"]["update"].get("sessionUpdate") == "tool_call"
    ]
    assert any("Hook _SessionStart (git) added context" in t.get("title", "") for t in thoughts)
    assert [h["text"] for h in hook_data(fake.requests[0].body)] == ["on branch main"]
