"""`open_runtime` owns a running session: everything it starts ends when it is left, however it is left.

In-process: the real runtime, the real anthropic SDK against the fake API, a real MCP server subprocess.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.core.errors import ServerStartError
from sprout_agent.core.events import Event, TurnFinished
from sprout_agent.session.prepared import Prepared, prepare
from sprout_agent.session.runtime import open_runtime
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import API_KEY, FAKE_MCP, pid_alive, pids_in, wait_dead, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]  # MCP server subprocesses


def prepared_for(tmp_path: Path, fake: FakeAnthropic, servers: Mapping[str, object], **options: object) -> Prepared:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "ANTHROPIC_API_KEY": API_KEY,
        "ANTHROPIC_BASE_URL": fake.base_url,
        "SPROUT_AGENT_BUILTIN_SERVERS": "todo",  # one built-in server, in-process
    }
    locations = Locations(None, tmp_path / "sessions", tmp_path / "data", None)
    return prepare(Options(prompt=None, config_files=(config,), cwd=tmp_path, **options), locations, env)  # type: ignore[arg-type]


def fake_server(**knobs: str) -> dict[str, object]:
    return {
        "command": sys.executable,
        "args": [FAKE_MCP],
        "env": {f"FAKE_MCP_{k.upper()}": v for k, v in knobs.items()},
    }


async def test_leaving_the_runtime_ends_its_servers_and_keeps_the_transcript(tmp_path: Path) -> None:
    events: list[Event] = []
    with FakeAnthropic([reply(tool_use("fake__echo", {"text": "hi"})), reply("done")]) as fake:
        prepared = prepared_for(tmp_path, fake, {"fake": fake_server(tools="echo")})
        with anyio.fail_after(bounded(60)):
            async with open_runtime(prepared, events.append) as runtime:
                assert [s.name for s in runtime.pool.status()] == ["todo", "fake"]  # built-in servers first
                pid = next(s.pid for s in runtime.pool.status() if s.name == "fake")
                assert pid is not None and pid_alive(pid)
                result = await runtime.agent.run_turn("go")
    assert result.stop_reason == "end_turn" and result.text == "done"
    assert not pid_alive(pid)
    assert [e.text for e in events if isinstance(e, TurnFinished)] == ["done"]
    (transcript,) = (tmp_path / "sessions").glob("*.jsonl")
    assert transcript.stem == runtime.session_id
    kinds = [json.loads(line)["type"] for line in transcript.read_text().splitlines()]
    # The result as soon as known; the turn's record and its checkpoints around the round (docs/rewind.md); after
    # the turn, the session's spend (a resumed session's cost line goes on from it). Each reply's usage and cost
    # (`reply`) just before the message it came with (what a harness reads, docs/sessions.md).
    assert kinds == [
        "session", "turn", "message", "reply", "message", "checkpoint", "tool_result", "reply", "message", "checkpoint",
        "cost",
    ]  # fmt: skip


async def test_cancelling_while_servers_start_ends_every_spawned_process(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchildren"
    with FakeAnthropic([]) as fake:
        prepared = prepared_for(
            tmp_path, fake, {"silent": fake_server(hang_on_start="1", grandchild_pidfile=str(pidfile))}
        )
        async with anyio.create_task_group() as group:

            async def cancel_once_it_hangs() -> None:
                # The server writes its grandchild's pid, then hangs before the handshake: the runtime is starting.
                await wait_until(lambda: bool(pids_in(pidfile)), "the server's grandchild")
                group.cancel_scope.cancel()

            group.start_soon(cancel_once_it_hangs)
            async with open_runtime(prepared, lambda event: None):
                pytest.fail("the runtime cannot have opened: its server never answers")
    assert fake.requests == []
    await wait_dead(*pids_in(pidfile))


async def test_strict_config_fails_the_open_and_ends_the_servers_that_did_start(tmp_path: Path) -> None:
    servers = {"ok": fake_server(tools="echo"), "crashy": fake_server(crash_on_start="1")}
    with FakeAnthropic([]) as fake:
        prepared = prepared_for(tmp_path, fake, servers, require_servers=True)
        with pytest.raises(ServerStartError, match="crashy"), anyio.fail_after(bounded(60)):
            async with open_runtime(prepared, lambda event: None):
                pytest.fail("a strict config with a failed server must not open")
    assert fake.requests == []


async def test_each_session_of_a_process_keeps_the_mcp_sdks_spans_in_its_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An ACP server opens a runtime per session in one process. OpenTelemetry takes the global tracer provider
    # (which the mcp SDK's spans use) once: the second session's went to the first's, shut down at its end.
    from tests.otlp_receiver import Receiver

    script = [reply(tool_use("todo__todo_read", {})), reply("done")] * 2
    with Receiver() as receiver, FakeAnthropic(script) as fake:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)  # the exporters read os.environ
        prepared = prepared_for(tmp_path, fake, {})
        prepared = replace(prepared, inherited_env={**prepared.inherited_env, "SPROUT_AGENT_TELEMETRY": "1"})
        for _ in range(2):
            with anyio.fail_after(bounded(60)):
                async with open_runtime(prepared, lambda event: None) as runtime:
                    assert (await runtime.agent.run_turn("go")).text == "done"
    sessions = {s.trace_id for s in receiver.spans if s.name == "session"}
    sent = [s for s in receiver.spans if s.name == "MCP send tools/call todo_read"]
    assert len(sessions) == 2 and {s.trace_id for s in sent} == sessions
