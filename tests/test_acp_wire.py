"""`sprout-agent acp` over bare pipes: stdout stays pure protocol, and a client that goes away takes every server
with it. Bad input and its JSON-RPC errors are tested in-process (tests/test_acp_hostile.py)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.acp_harness import raw_agent
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, Step, reply, tool_use
from tests.harness import ROOT, fake_server, pid_alive, read_log, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def stdio_entry(name: str, **knobs: object) -> dict[str, object]:
    entry = fake_server(**knobs)
    env = [{"name": k, "value": v} for k, v in entry["env"].items()]
    return {"name": name, "command": entry["command"], "args": entry["args"], "env": env}


@pytest.mark.slow
async def test_a_prompt_over_the_size_cap_is_refused(tmp_path: Path) -> None:
    with FakeAnthropic([reply("small is fine")]) as fake:
        async with raw_agent(tmp_path, fake) as agent:
            await agent.request(1, "initialize", {"protocolVersion": 1})
            created = await agent.request(2, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
            session_id = created["result"]["sessionId"]
            huge = {"sessionId": session_id, "prompt": [{"type": "text", "text": "x" * (1024 * 1024 + 1)}]}
            refused = await agent.request(3, "session/prompt", huge)
            image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
            unsupported = await agent.request(4, "session/prompt", {"sessionId": session_id, "prompt": [image]})
            small = {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}
            answered = await agent.request(5, "session/prompt", small)
    assert refused["error"]["code"] == -32602 and "larger than" in refused["error"]["message"]
    assert unsupported["error"]["code"] == -32602
    assert answered["result"] == {"stopReason": "end_turn"}
    assert len(fake.requests) == 1


STRAY_WRITER = """
import logging, os, sys, threading

original_stdout = sys.stdout  # what a library grabs at import time, before the agent's guard
logging.basicConfig(stream=original_stdout, level=logging.INFO)


def stray(flag=os.environ["STRAY_FLAG"]):
    while not os.path.exists(flag):
        threading.Event().wait(0.01)
    print("STRAY print")
    original_stdout.write("STRAY stdout object\\n")
    original_stdout.flush()
    logging.getLogger("noisy").info("STRAY logging")
    os.write(1, b"STRAY fd 1\\n")
    open(flag + ".done", "w").close()


threading.Thread(target=stray, daemon=True).start()
"""


async def test_stray_writes_to_stdout_land_on_stderr(tmp_path: Path) -> None:
    """print, a logger holding the original sys.stdout, and raw fd 1 writes: none reaches the protocol stream."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(STRAY_WRITER)
    flag = tmp_path / "flag"
    env = {"PYTHONPATH": f"{site}:{ROOT}", "STRAY_FLAG": str(flag)}
    async with raw_agent(tmp_path, None, env) as agent:
        await agent.request(1, "initialize", {"protocolVersion": 1})
        flag.touch()
        await wait_until((tmp_path / "flag.done").exists, "the stray writes")
        answered = await agent.request(2, "initialize", {"protocolVersion": 1})  # every line read was JSON
    assert answered["result"]["protocolVersion"] == 1


@pytest.mark.slow
async def test_stdin_closed_ends_the_agent_and_every_server(tmp_path: Path) -> None:
    logs = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    pidfile = tmp_path / "grandchildren"
    script: list[Step] = [
        reply(tool_use("fake__spawn_grandchild", {})),
        reply("spawned"),
        reply(tool_use("fake__echo", {})),
    ]
    script.append(reply("echoed"))
    with FakeAnthropic(script) as fake:
        async with raw_agent(tmp_path, fake) as agent:
            await agent.request(1, "initialize", {"protocolVersion": 1})
            for number, log in enumerate(logs):
                server = stdio_entry("fake", log=str(log), grandchild_pidfile=str(pidfile))
                created = await agent.request(
                    10 + number, "session/new", {"cwd": str(tmp_path), "mcpServers": [server]}
                )
                prompt = {"sessionId": created["result"]["sessionId"], "prompt": [{"type": "text", "text": "go"}]}
                assert (await agent.request(20 + number, "session/prompt", prompt))["result"][
                    "stopReason"
                ] == "end_turn"
            # What used to end the agent (exit 1): tests/test_acp_hostile.py has the rest, in-process.
            await agent.send(json.dumps({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": [1]}}))
            await agent.send("[" * 100_000)
            assert (await agent.answer(None))["error"]["code"] == -32700
            assert agent.process.stdin is not None
            await agent.process.stdin.aclose()
            with anyio.fail_after(bounded(15)):
                code = await agent.process.wait()
    assert code == 0
    pids = [read_log(log)[0]["pid"] for log in logs] + [int(p) for p in pidfile.read_text().split()]
    assert len(pids) == 3
    assert not [pid for pid in pids if pid_alive(pid)], "orphans left behind"
