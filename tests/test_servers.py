"""ServerPool against real MCP server subprocesses: the fault-knob fake, mcp-server-time, everything."""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Self

import anyio
import pytest

from sprout_agent.config.files import ServerConfig
from sprout_agent.core.events import Event, Notice, ServerFailed, ServerStarted
from sprout_agent.core.messages import Image, Text, text_of
from sprout_agent.core.protocols import HookCallFailed, ToolSpec
from sprout_agent.core.tool_names import MAX_TOOL_NAME
from sprout_agent.mcp.client_features import ClientFeatures
from sprout_agent.mcp.pool import ServerPool
from sprout_agent.mcp.state import ServerStatus
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import (
    FAKE_MCP,
    ROOT,
    kill_pid,
    pid_alive,
    pids_in,
    read_log,
    read_pid,
    start_agent,
    wait_dead,
    wait_until,
    write_config,
)

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

PEERS = Path(__file__).resolve().parent.parent / ".ci" / "peers" / "node_modules" / ".bin"


def fake(server: str, start_timeout: float | None = None, **knobs: str) -> ServerConfig:
    env = {f"FAKE_MCP_{key.upper()}": value for key, value in knobs.items()}
    return ServerConfig(server, sys.executable, (FAKE_MCP,), env, start_timeout=start_timeout)


RAW_MCP = str(ROOT / "tests" / "raw_mcp_server.py")


def raw(server: str, **knobs: str) -> ServerConfig:
    """The hand-rolled server (tests/raw_mcp_server.py) that writes the broken replies the SDK's cannot."""
    env = {f"RAW_MCP_{key.upper()}": value for key, value in knobs.items()}
    return ServerConfig(server, sys.executable, (RAW_MCP,), env)


def scrubbed_env(own: Mapping[str, str]) -> dict[str, str]:
    """What session.py would pass: a small allowlist plus the server's own env, never our secrets."""
    base = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ}
    return {**base, **own}


class Pool:
    """A ServerPool plus the events it emitted."""

    def __init__(
        self,
        *configs: ServerConfig,
        tool_timeout: float | None = None,
        result_max_bytes: int = 100_000,
        stderr_log: Path | None = None,
        client: ClientFeatures | None = None,
        lazy: bool = False,
    ) -> None:
        self.events: list[Event] = []
        self.pool = ServerPool(
            configs,
            emit=self.events.append,
            start_timeout=bounded(20.0),
            tool_timeout=bounded(20.0) if tool_timeout is None else tool_timeout,
            result_max_bytes=result_max_bytes,
            child_env=scrubbed_env,
            stderr_log=stderr_log,
            client=client,
            lazy=lazy,
        )

    # Not wrapped in fail_after: the pool's task group must nest exactly in the caller's scopes. The pool
    # bounds its own start (start_timeout) and teardown; pytest-timeout is the last resort.
    async def __aenter__(self) -> Self:
        await self.pool.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.pool.__aexit__(None, None, None)

    def spec(self, server: str, tool: str) -> ToolSpec:
        return next(s for s in self.pool.tools() if (s.server, s.tool) == (server, tool))

    def status(self, server: str) -> ServerStatus:
        return next(s for s in self.pool.status() if s.name == server)

    def failed(self, server: str) -> ServerFailed:
        return next(e for e in self.events if isinstance(e, ServerFailed) and e.server == server)


async def test_servers_start_concurrently_and_tools_keep_config_then_listing_order(tmp_path: Path) -> None:
    # Each server's tools/list waits until all three are in theirs: started one after another, the first
    # would never get past it and fail, so three running servers prove the starts overlapped.
    barrier = tmp_path / "listing"
    barrier.mkdir()
    meet, within = f"3:{barrier}", str(bounded(15))
    configs = [
        fake("b", tools="add,echo", list_barrier=meet, list_barrier_seconds=within),
        fake("a", tools="echo", list_barrier=meet, list_barrier_seconds=within),
        fake("c", tools="slow,add,echo", list_barrier=meet, list_barrier_seconds=within),
    ]
    async with Pool(*configs) as p:
        assert not [e for e in p.events if isinstance(e, ServerFailed)]
        names = [spec.name for spec in p.pool.tools()]
        assert names == ["b__add", "b__echo", "a__echo", "c__slow", "c__add", "c__echo"]
        assert names == [spec.name for spec in p.pool.tools()]  # byte-stable between requests
        started = {e.server: e for e in p.events if isinstance(e, ServerStarted)}
        assert set(started) == {"a", "b", "c"} and started["c"].tool_count == 3
        assert all(s.state == "running" and s.pid for s in p.pool.status())
        assert sorted(os.listdir(barrier)) == sorted(str(s.pid) for s in p.pool.status())


async def test_a_missing_binary_fails_with_a_reason_and_the_rest_start() -> None:
    async with Pool(ServerConfig("ghost", "/nonexistent/sprout-no-such-server"), fake("ok", tools="echo")) as p:
        failed = p.failed("ghost")
        assert "cannot start" in failed.reason and "No such file" in failed.reason
        assert p.status("ghost").state == "failed" and p.status("ok").state == "running"
        assert [s.server for s in p.pool.tools()] == ["ok"]


async def test_a_crash_on_start_reports_the_exit_code_and_the_stderr_tail() -> None:
    async with Pool(fake("crashy", crash_on_start="1")) as p:
        failed = p.failed("crashy")
        assert failed.reason == "exited with code 3"
        assert "fatal: cannot start" in failed.stderr_tail
        assert p.status("crashy").last_error == "exited with code 3"
        assert p.pool.tools() == []


async def test_a_hang_on_start_is_bounded_by_its_start_timeout_and_killed(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchildren"
    # The pool's own start timeout is 20 s: the reason names the server's (1 s, scaled), so that is what ended it.
    limit = math.ceil(bounded(1))  # and until then its stderr must have come: a bound
    async with Pool(fake("silent", start_timeout=limit, hang_on_start="1", grandchild_pidfile=str(pidfile))) as p:
        failed = p.failed("silent")
        assert f"no answer within {limit} s" in failed.reason
        assert "hanging before the handshake" in failed.stderr_tail
        pid = p.status("silent").pid
        assert pid is not None
        await wait_dead(pid, *pids_in(pidfile))


async def test_cancelling_the_start_kills_every_spawned_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchildren"
    p = Pool(fake("silent", hang_on_start="1", grandchild_pidfile=str(pidfile)), fake("ok", tools="echo"))

    def pids() -> list[int]:
        return [s.pid for s in p.pool.status() if s.pid is not None]

    async with anyio.create_task_group() as group:

        async def cancel_once_both_run() -> None:
            await wait_until(lambda: len(pids()) == 2 and bool(pids_in(pidfile)), "both servers running")
            group.cancel_scope.cancel()

        group.start_soon(cancel_once_both_run)
        async with p.pool:
            pytest.fail("the pool cannot have started: one server never answers")
    assert group.cancel_scope.cancelled_caught
    await wait_dead(*pids(), *pids_in(pidfile))


async def test_dotted_tool_names_are_mapped_and_called_by_their_real_name() -> None:
    async with Pool(fake("fs", tools="dotted.name")) as p:
        spec = p.spec("fs", "dotted.name")
        assert spec.name == "fs__dotted_name"
        outcome = await p.pool.call(spec, {})
        assert outcome == outcome.__class__((Text("dotted"),), is_error=False)


async def test_colliding_names_get_a_stable_hash_suffix_and_reach_their_own_server() -> None:
    async with Pool(fake("a.b", tools="env", name="first"), fake("a_b", tools="env", name="second")) as p:
        first, second = p.pool.tools()
        assert first.name == "a_b__env"
        assert second.name.startswith("a_b__env_") and len(second.name) <= MAX_TOOL_NAME
        assert text_of((await p.pool.call(first, {"name": "FAKE_MCP_NAME"})).content) == "first"
        assert text_of((await p.pool.call(second, {"name": "FAKE_MCP_NAME"})).content) == "second"


async def test_tools_are_called_and_their_results_converted() -> None:
    async with Pool(fake("f")) as p:
        echo = await p.pool.call(p.spec("f", "echo"), {"text": "héllo"})
        assert echo.content == (Text("héllo"),) and not echo.is_error
        assert (await p.pool.call(p.spec("f", "add"), {"a": 2, "b": 3})).content == (Text("5"),)
        image = (await p.pool.call(p.spec("f", "image"), {})).content[0]
        assert isinstance(image, Image) and image.media_type == "image/png" and image.data
        assert p.spec("f", "read_only").read_only is True and p.spec("f", "echo").read_only is None


async def test_a_failing_tool_is_an_error_outcome() -> None:
    async with Pool(fake("f", tools="fail")) as p:
        outcome = await p.pool.call(p.spec("f", "fail"), {})
        assert outcome.is_error and text_of(outcome.content) == "this tool failed on purpose"
        assert p.status("f").state == "running"


async def test_an_unknown_server_is_an_error_outcome() -> None:
    async with Pool(fake("f", tools="echo")) as p:
        spec = ToolSpec("nope__echo", "nope", "echo", "", {})
        outcome = await p.pool.call(spec, {"text": "x"})
        assert outcome.is_error and "server 'nope' is unavailable" in text_of(outcome.content)
        with pytest.raises(HookCallFailed, match="unavailable"):
            await p.pool.call_hook(spec, {})


async def test_a_crashed_server_is_marked_dead_and_its_tools_report_unavailable() -> None:
    async with Pool(fake("f", tools="echo,crash"), fake("g", tools="echo")) as p:
        echo = p.spec("f", "echo")
        outcome = await p.pool.call(p.spec("f", "crash"), {})
        assert outcome.is_error
        assert text_of(outcome.content) == "server 'f' is unavailable: exited with code 1"
        status = p.status("f")
        assert (status.state, status.last_error) == ("dead", "exited with code 1")
        assert [s.server for s in p.pool.tools()] == ["g"]
        again = await p.pool.call(echo, {"text": "x"})
        assert again.is_error and "unavailable" in text_of(again.content)
        assert any(isinstance(e, Notice) and "'f' stopped" in e.text for e in p.events)
        assert (await p.pool.call(p.spec("g", "echo"), {"text": "still here"})).content == (Text("still here"),)


async def test_a_servers_own_error_with_the_code_of_a_closed_connection_is_an_answer_not_a_dead_server() -> None:
    # -32000 is the mcp SDK's "connection closed" and also the code most servers give their own errors.
    async with Pool(fake("f", tools="echo,refuse")) as p:
        refused = await p.pool.call(p.spec("f", "refuse"), {"code": -32000, "message": "rate limited, try later"})
        assert refused.is_error and text_of(refused.content) == "rate limited, try later"
        assert p.status("f").state == "running"
        assert (await p.pool.call(p.spec("f", "echo"), {"text": "still here"})).content == (Text("still here"),)


async def test_a_crash_is_seen_even_when_a_grandchild_holds_the_server_stdout(tmp_path: Path) -> None:
    async with Pool(fake("f", tools="spawn_grandchild,crash")) as p:
        grandchild = await p.pool.call(p.spec("f", "spawn_grandchild"), {"hold_stdout": True})
        pid = int(text_of(grandchild.content))
        # Seen through the leader's exit: the stdout EOF never comes, and a miss would be "timed out after 20 s".
        outcome = await p.pool.call(p.spec("f", "crash"), {})
        assert outcome.is_error and "unavailable" in text_of(outcome.content)
        await wait_dead(pid)


async def test_huge_output_is_cut_in_the_middle_within_the_cap() -> None:
    async with Pool(fake("f", tools="huge"), result_max_bytes=2000) as p:
        outcome = await p.pool.call(p.spec("f", "huge"), {"bytes": 50_000})
        text = text_of(outcome.content)
        assert text.startswith("HEADxxx") and text.endswith("xxxTAIL")
        assert "bytes elided]" in text and len(text.encode()) <= 2000
        assert len(text.encode()) > 1900


async def test_a_cancelled_call_returns_and_the_server_stays_usable(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    async with Pool(fake("f", tools="slow,echo", log=str(log))) as p:
        # The call never ends by itself (an hour), so returning at all is the cancel working.
        async with anyio.create_task_group() as group:
            an_hour: dict[str, object] = {"seconds": 3600}
            group.start_soon(p.pool.call, p.spec("f", "slow"), an_hour)
            await wait_until(lambda: bool(read_log(log)), "the call reaching the server")
            group.cancel_scope.cancel()
        assert (await p.pool.call(p.spec("f", "echo"), {"text": "ok"})).content == (Text("ok"),)


async def test_a_call_over_the_tool_timeout_is_an_error_outcome() -> None:
    async with Pool(fake("f", tools="slow,echo"), tool_timeout=0.5) as p:
        outcome = await p.pool.call(p.spec("f", "slow"), {"seconds": 60})
        assert outcome.is_error and "timed out after 0.5 s" in text_of(outcome.content)
        assert (await p.pool.call(p.spec("f", "echo"), {"text": "ok"})).content == (Text("ok"),)


async def test_kill_ends_the_server_and_its_grandchild_and_marks_it_dead() -> None:
    async with Pool(fake("f", tools="spawn_grandchild,echo")) as p:
        pid = int(text_of((await p.pool.call(p.spec("f", "spawn_grandchild"), {})).content))
        echo = p.spec("f", "echo")
        leader = p.status("f").pid
        assert leader is not None and pid_alive(pid)
        await p.pool.kill("f", "hook timed out twice")
        await wait_dead(pid, leader)
        assert (p.status("f").state, p.status("f").last_error) == ("dead", "hook timed out twice")
        outcome = await p.pool.call(echo, {"text": "x"})
        assert text_of(outcome.content) == "server 'f' is unavailable: hook timed out twice"
        assert p.pool.tools() == []


async def test_closing_the_pool_kills_grandchildren_of_polite_servers(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchildren"
    configs = [fake(n, tools="spawn_grandchild", grandchild_pidfile=str(pidfile)) for n in ("a", "b", "c")]
    p = Pool(*configs)
    async with p:
        for name in ("a", "b", "c"):
            await p.pool.call(p.spec(name, "spawn_grandchild"), {})
        leaders = [s.pid for s in p.pool.status() if s.pid is not None]
    grandchildren = pids_in(pidfile)
    assert len(grandchildren) == 3 and len(leaders) == 3
    await wait_dead(*leaders, *grandchildren)


async def test_a_server_that_ignores_sigterm_is_killed_with_its_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchildren"
    p = Pool(fake("stubborn", tools="spawn_grandchild", ignore_term="1", grandchild_pidfile=str(pidfile)))
    async with p:
        await p.pool.call(p.spec("stubborn", "spawn_grandchild"), {})
        leader = p.status("stubborn").pid
    assert leader is not None
    grandchildren = pids_in(pidfile)
    assert len(grandchildren) == 1  # an empty pid file would prove nothing
    await wait_dead(leader, *grandchildren)


async def test_kill_all_now_kills_every_group_synchronously(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchildren"
    async with Pool(fake("a", tools="spawn_grandchild", grandchild_pidfile=str(pidfile))) as p:
        await p.pool.call(p.spec("a", "spawn_grandchild"), {})
        grandchildren = pids_in(pidfile)
        leader = p.status("a").pid
        assert len(grandchildren) == 1 and leader is not None  # an empty pid file would prove nothing
        p.pool.kill_all_now()
        await wait_dead(leader, *grandchildren)


async def test_servers_see_only_the_environment_child_env_gives_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("SPROUT_TEST_PARENT_ONLY", "leaked")
    config = ServerConfig("f", sys.executable, (FAKE_MCP,), {"FAKE_MCP_TOOLS": "env", "OWN_SETTING": "mine"})
    async with Pool(config) as p:
        env = p.spec("f", "env")
        for name, expected in [
            ("ANTHROPIC_API_KEY", "<unset>"),
            ("SPROUT_TEST_PARENT_ONLY", "<unset>"),
            ("OWN_SETTING", "mine"),
            ("PATH", os.environ["PATH"]),
        ]:
            assert text_of((await p.pool.call(env, {"name": name})).content) == expected


async def test_server_stderr_goes_to_the_log_file_with_the_server_name(tmp_path: Path) -> None:
    log = tmp_path / "servers.log"
    async with Pool(fake("quiet", tools="echo"), fake("crashy", crash_on_start="1"), stderr_log=log):
        pass
    text = log.read_text()
    assert "[quiet] fake: serving as pid" in text
    assert "[crashy] fake: fatal: cannot start" in text


async def test_a_paginated_listing_is_read_to_the_end() -> None:
    async with Pool(fake("f", tools="echo,add,slow,fail,image", page_size="2")) as p:
        assert [s.tool for s in p.pool.tools()] == ["echo", "add", "slow", "fail", "image"]


async def test_call_hook_returns_the_raw_outcome_and_the_server_saw_the_input(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    async with Pool(fake("h", tools="echo", stop="keep going", log=str(log))) as p:
        outcome = await p.pool.call_hook(p.spec("h", "_Stop"), {"last_message": "done"})
        assert outcome.content == (Text("keep going"),) and not outcome.is_error
        assert p.status("h").hook_count == 1 and p.status("h").tool_count == 1
        lines = [json.loads(line) for line in log.read_text().splitlines()]
        assert lines == [{"tool": "_Stop", "arguments": {"last_message": "done"}, "pid": p.status("h").pid}]


async def test_hook_input_schema_is_passed_through_untouched() -> None:
    schema = {"transcript_tail": {"type": "string"}, "turns": {"type": "integer"}}
    async with Pool(fake("h", tools="echo", stop="", hook_schema=json.dumps(schema))) as p:
        stop = p.spec("h", "_Stop")
        assert stop.name == "h___Stop" and stop.input_schema["properties"] == schema
        assert (await p.pool.call_hook(stop, {"turns": 3})).content == (Text(""),)


async def test_call_hook_error_result_is_an_outcome_not_an_exception() -> None:
    async with Pool(fake("h", tools="echo", stop_mode="error")) as p:
        outcome = await p.pool.call_hook(p.spec("h", "_Stop"), {})
        assert outcome.is_error and "failed on purpose" in text_of(outcome.content)


async def test_call_hook_raises_when_the_server_crashes() -> None:
    async with Pool(fake("h", tools="echo", stop_mode="crash")) as p:
        with pytest.raises(HookCallFailed, match="server 'h' is unavailable"):
            await p.pool.call_hook(p.spec("h", "_Stop"), {})
        assert p.status("h").state == "dead"


@pytest.mark.parametrize("mode", ["hang", "freeze"])
async def test_call_hook_returns_on_cancel_and_kill_ends_the_hung_group(tmp_path: Path, mode: str) -> None:
    pidfile = tmp_path / "grandchildren"
    async with Pool(fake("h", tools="echo", stop_mode=mode, grandchild_pidfile=str(pidfile))) as p:
        stop = p.spec("h", "_Stop")
        for _ in range(2):  # the hooks module's "second consecutive timeout" path
            # The hook never answers (hang) or cannot even see the cancel (freeze): returning is the cancel working.
            with anyio.move_on_after(0.3) as waited:
                await p.pool.call_hook(stop, {})
            assert waited.cancelled_caught
        await p.pool.kill("h", "_Stop timed out twice")
        grandchildren = pids_in(pidfile)
        assert grandchildren
        await wait_dead(p.status("h").pid or 0, *grandchildren)


async def test_a_stop_sequence_answers_in_turn_then_empty() -> None:
    async with Pool(fake("h", tools="echo", stop_mode="sequence", stop_sequence='["one", "two"]')) as p:
        stop = p.spec("h", "_Stop")
        texts = [text_of((await p.pool.call_hook(stop, {})).content) for _ in range(3)]
        assert texts == ["one", "two", ""]


def _time_server() -> str | None:
    beside_python = Path(sys.executable).with_name("mcp-server-time")
    return str(beside_python) if beside_python.exists() else shutil.which("mcp-server-time")


async def test_real_peer_mcp_server_time() -> None:
    binary = _time_server()
    if binary is None:
        pytest.skip("mcp-server-time is not installed (pip install mcp-server-time)")
    async with Pool(ServerConfig("time", binary, ("--local-timezone", "UTC"))) as p:
        assert [s.name for s in p.pool.tools()] == ["time__get_current_time", "time__convert_time"]
        outcome = await p.pool.call(p.spec("time", "get_current_time"), {"timezone": "UTC"})
        assert not outcome.is_error and "UTC" in text_of(outcome.content)
        unknown = ToolSpec("time__nope", "time", "nope", "", {})
        bad = await p.pool.call(unknown, {})  # this server answers with an MCPError, not is_error
        assert bad.is_error and "nope" in text_of(bad.content).lower()
        with pytest.raises(HookCallFailed):
            await p.pool.call_hook(unknown, {})
        assert p.status("time").state == "running"


def _everything_server() -> str | None:
    local = PEERS / "mcp-server-everything"
    return str(local) if local.exists() else shutil.which("mcp-server-everything")


async def test_real_peer_server_everything() -> None:
    binary = _everything_server()
    if binary is None or shutil.which("node") is None:
        pytest.skip("server-everything not installed (npm install it into .ci/peers) or node missing")
    async with Pool(ServerConfig("every", binary, ("stdio",))) as p:
        names = {s.tool for s in p.pool.tools()}
        assert {"echo", "get-sum", "get-tiny-image"} <= names
        echo = await p.pool.call(p.spec("every", "echo"), {"message": "hi there"})
        assert not echo.is_error and "hi there" in text_of(echo.content)
        total = await p.pool.call(p.spec("every", "get-sum"), {"a": 2, "b": 40})
        assert "42" in text_of(total.content)
        image = await p.pool.call(p.spec("every", "get-tiny-image"), {})
        assert any(isinstance(block, Image) for block in image.content)
        # Its progress carries numbers and no message: shown as "step/total", like our own bash's tail.
        progress: list[str] = []
        slow = p.spec("every", "trigger-long-running-operation")
        done = await p.pool.call(slow, {"duration": 0.2, "steps": 2}, progress.append)
        assert not done.is_error and progress == ["1/2", "2/2"]
        pid = p.status("every").pid
    assert pid is not None
    await wait_dead(pid)


# --- wire faults: what a server writes that the SDK's session cannot read -----------------------------------


async def test_an_oversized_result_is_an_error_for_its_call_and_the_server_keeps_serving() -> None:
    from sprout_agent.mcp.transports.framing import MAX_MESSAGE_BYTES

    async with Pool(raw("raw")) as p:
        size = MAX_MESSAGE_BYTES + 1000
        outcome = await p.pool.call(p.spec("raw", "huge"), {"bytes": size})
        assert outcome.is_error
        assert text_of(outcome.content) == f"result too large: {size - 1} bytes, limit {MAX_MESSAGE_BYTES}"
        after = await p.pool.call(p.spec("raw", "echo"), {"text": "still here"})
        assert (after.is_error, text_of(after.content)) == (False, "still here")


async def test_a_reply_that_fails_to_parse_answers_its_call_at_once_not_after_the_tool_timeout() -> None:
    # Was a hang for the whole tool timeout: the SDK drops what it cannot parse.
    async with Pool(raw("raw"), tool_timeout=600) as p:
        with anyio.fail_after(bounded(10)):
            version = await p.pool.call(p.spec("raw", "bad_version"), {})
            surrogate = await p.pool.call(p.spec("raw", "surrogate"), {})
        assert version.is_error and '"jsonrpc" is "1.0", not "2.0"' in text_of(version.content)
        assert surrogate.is_error and "lone surrogate" in text_of(surrogate.content)
        assert p.status("raw").state == "running"


async def test_a_reply_whose_id_cannot_be_read_fails_the_server_with_the_reason_at_once() -> None:
    async with Pool(raw("raw"), tool_timeout=600) as p:
        with anyio.fail_after(bounded(10)):
            outcome = await p.pool.call(p.spec("raw", "garbage"), {})
        reason = "sent a line that is not JSON: 'this is not json'"
        assert outcome.is_error and text_of(outcome.content) == f"server 'raw' is unavailable: {reason}"
        assert (p.status("raw").state, p.status("raw").last_error) == ("dead", reason)
        assert Notice(f"MCP server 'raw' stopped: {reason}", "warning") in p.events


async def test_a_tool_with_an_invalid_input_schema_is_skipped_with_a_notice_not_its_whole_server() -> None:
    async with Pool(raw("raw", bad_schema="broken")) as p:
        assert p.status("raw").state == "running"
        assert "broken" not in {spec.tool for spec in p.pool.tools()}
        assert "echo" in {spec.tool for spec in p.pool.tools()}
        why = "invalid inputSchema.type: Input should be 'object'"
        assert Notice(f"MCP server 'raw': skipped tool 'broken': {why}", "warning") in p.events


async def test_a_server_failing_on_an_invalid_listing_shows_the_reason_not_exited_with_code_0() -> None:
    async with Pool(raw("raw", bad_listing="1")) as p:
        assert p.failed("raw").reason == "invalid answer from the server: tools: Input should be a valid list"


async def test_an_endless_tools_list_cursor_stops_at_the_page_cap_with_a_notice() -> None:
    from sprout_agent.mcp.link import MAX_TOOL_PAGES

    async with Pool(raw("raw", endless="1")) as p:
        assert len(p.pool.tools()) == MAX_TOOL_PAGES and p.status("raw").state == "running"
        notice = f"stopped listing tools after {MAX_TOOL_PAGES} pages ({MAX_TOOL_PAGES} tools); its cursor never ended"
        assert Notice(f"MCP server 'raw': {notice}", "warning") in p.events


async def test_mcp_servers_die_with_a_sigkilled_agent(tmp_path: Path) -> None:
    # Was: a server busy in a call (it reads no more, so stdin's end cannot stop it) outlived the agent.
    pidfile, calls = tmp_path / "server.pid", tmp_path / "calls"
    env = {"RAW_MCP_PIDFILE": str(pidfile), "RAW_MCP_CALLS": str(calls)}
    config = write_config(tmp_path, {"raw": {"command": sys.executable, "args": [RAW_MCP], "env": env}})
    with FakeAnthropic([reply(tool_use("raw__hang", {}))]) as fake:
        process = start_agent(tmp_path, ["--config", str(config), "-p", "hang"], fake=fake)
        server = 0
        try:
            server = await read_pid(pidfile)
            await wait_until(lambda: calls.exists() and calls.read_text() == "hang\n", "the call reaching the server")
            process.kill()
            process.wait(timeout=bounded(10))
            await wait_dead(server, timeout=10)
        finally:
            process.kill()
            process.communicate(timeout=bounded(10))
            if server:
                kill_pid(server)
