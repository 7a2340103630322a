"""The built-in servers start at their first call: what the model is offered before they start is what they list
once started, a call (or hook) starts its server, a failed start answers as a dead server does, and a server
never started costs nothing. Real in-process MCP servers (dev, todo, agent) in a real `ServerPool`."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import asdict, replace
from pathlib import Path

import anyio
import pytest

from sprout_agent.config.files import ServerConfig, with_builtin_servers
from sprout_agent.config.options import Options
from sprout_agent.config.server_config import LoadedConfig
from sprout_agent.core.events import Notice, ServerFailed, ServerStarted
from sprout_agent.core.messages import Text, text_of
from sprout_agent.core.protocols import ToolOutcome, ToolSpec
from sprout_agent.mcp.announced import announced
from sprout_agent.mcp.client_features import ClientFeatures, Roots
from tests import test_servers as servers
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.headless_here import headless

pytestmark = pytest.mark.anyio

EVERY = ("dev", "todo", "agent")


class Delegating:
    """The session's side of the `agent` server: a task description that may change, skills or none."""

    def __init__(self, description: str = "Run a subagent on a task.", skills: bool = False) -> None:
        self.description, self.skills = description, skills

    def task_description(self) -> str:
        return self.description

    def has_skills(self) -> bool:
        return self.skills

    async def run_task(self, call_id: str, arguments: Mapping[str, object]) -> ToolOutcome:
        return ToolOutcome((Text(f"done: {arguments.get('prompt')}"),))

    def read_skill(self, name: str, file: str | None) -> str:
        return f"skill {name}"


def builtins(cwd: Path, env: Mapping[str, str] | None = None, wanted: tuple[str, ...] = EVERY) -> list[ServerConfig]:
    """The built-in servers as a session configures them (config/files.py)."""
    return list(with_builtin_servers(LoadedConfig((), (), ()), wanted, cwd, env).servers)


class Pool(servers.Pool):
    """A ServerPool of built-in servers, lazy or not, with the events it emitted."""

    def __init__(self, configs: list[ServerConfig], *, lazy: bool, delegation: Delegating | None = None) -> None:
        client = ClientFeatures(Roots(()), delegation=delegation or Delegating())
        super().__init__(*configs, client=client, lazy=lazy)

    def states(self) -> dict[str, str]:
        return {s.name: s.state for s in self.pool.status()}

    def started(self) -> list[str]:
        return [e.server for e in self.events if isinstance(e, ServerStarted)]


async def offered(configs: list[ServerConfig], *, lazy: bool, delegation: Delegating | None = None) -> list[ToolSpec]:
    async with Pool(configs, lazy=lazy, delegation=delegation) as p:
        return list(p.pool.tools())


def dumped(specs: list[ToolSpec]) -> str:
    """Every field of every tool, schemas' key order too: what reaches the request's bytes."""
    return json.dumps([asdict(spec) for spec in specs])


@pytest.mark.parametrize(
    ("env", "skills"),
    [
        ({}, False),
        ({"SPROUT_DEV_SANDBOX": "off"}, True),
        ({"SPROUT_DEV_SANDBOX": "read-only"}, False),
        ({"SPROUT_DEV_SANDBOX": "workspace-write", "SPROUT_DEV_SANDBOX_NETWORK": "off"}, True),
    ],
)
async def test_the_tools_offered_before_the_built_in_servers_start_are_the_ones_they_list_once_started(
    tmp_path: Path, env: dict[str, str], skills: bool
) -> None:
    configs = builtins(tmp_path, env)
    delegation = Delegating("Pick one of: greeter, general-purpose.", skills)
    before = await offered(configs, lazy=True, delegation=delegation)
    started = await offered(configs, lazy=False, delegation=delegation)
    assert dumped(before) == dumped(started)  # every field: names, descriptions, schemas, read-only hints, in order
    assert {spec.server for spec in before} == set(EVERY)
    assert ("agent", "skill") in {(s.server, s.tool) for s in before} if skills else True


async def test_tools_narrowed_by_the_tools_flag_are_offered_alike_before_and_after_the_start(tmp_path: Path) -> None:
    only = {"dev": frozenset({"read", "grep"}), "todo": frozenset({"todo_read"})}
    configs = list(with_builtin_servers(LoadedConfig((), (), ()), EVERY, tmp_path, None, only).servers)
    before = await offered(configs, lazy=True)
    assert dumped(before) == dumped(await offered(configs, lazy=False))
    assert [s.tool for s in before] == ["read", "grep", "todo_read", "_Stop", "_PostCompact"]


async def test_a_pool_whose_tools_are_never_called_starts_no_built_in_server(tmp_path: Path) -> None:
    async with Pool(builtins(tmp_path), lazy=True) as p:
        assert p.states() == {"dev": "pending", "todo": "pending", "agent": "pending"}
        assert [s.tool_count for s in p.pool.status()] == [6, 2, 1]  # what a started one would say
        assert [s.hook_count for s in p.pool.status()] == [0, 2, 0]
    assert p.started() == [] and not [e for e in p.events if isinstance(e, ServerFailed)]


async def test_the_first_call_to_a_pending_server_starts_it_and_gets_its_answer(tmp_path: Path) -> None:
    async with Pool(builtins(tmp_path), lazy=True) as p:
        (tmp_path / "hello.txt").write_text("hello there\n")
        outcome = await p.pool.call(p.spec("dev", "read"), {"file_path": "hello.txt"})
        assert not outcome.is_error and "hello there" in text_of(outcome.content)
        assert p.started() == ["dev"]
        assert p.states() == {"dev": "running", "todo": "pending", "agent": "pending"}
        task = await p.pool.call(p.spec("agent", "task"), {"description": "d", "prompt": "greet"}, call_id="toolu_1")
        assert text_of(task.content) == "done: greet" and p.started() == ["dev", "agent"]
        assert not [e for e in p.events if isinstance(e, Notice) and e.level == "warning"]


async def test_calls_at_once_to_a_pending_server_start_it_once(tmp_path: Path) -> None:
    async with Pool(builtins(tmp_path), lazy=True) as p:
        outcomes: list[ToolOutcome] = []
        todos: dict[str, object] = {"todos": [{"content": "one", "status": "pending"}]}

        async def call(tool: str, arguments: dict[str, object]) -> None:
            outcomes.append(await p.pool.call(p.spec("todo", tool), arguments))

        with anyio.fail_after(bounded(10)):
            async with anyio.create_task_group() as group:
                group.start_soon(call, "todo_write", todos)
                group.start_soon(call, "todo_read", {})
                group.start_soon(call, "todo_read", {})
        assert [o.is_error for o in outcomes] == [False, False, False]
        assert p.started() == ["todo"]


async def test_a_hook_of_a_pending_server_starts_it_before_it_answers(tmp_path: Path) -> None:
    async with Pool(builtins(tmp_path), lazy=True) as p:
        hook = p.spec("todo", "_Stop")
        assert text_of((await p.pool.call_hook(hook, {})).content) == ""  # an empty list objects to nothing
        assert p.states()["todo"] == "running" and p.started() == ["todo"]


async def test_a_built_in_server_that_fails_at_its_lazy_start_answers_the_call_as_a_dead_server_does(
    tmp_path: Path,
) -> None:
    # A start bound nothing meets: the server's own start fails (no answer in time), as a hung server's would.
    dev, todo, agent = builtins(tmp_path)
    configs = [replace(todo, start_timeout=1e-9), dev, agent]
    async with Pool(configs, lazy=False) as eager:
        said_before = await eager.pool.call(eager.spec("dev", "read"), {"file_path": "x"})  # the pool goes on
        dead = await eager.pool.call(ToolSpec("todo__todo_read", "todo", "todo_read", "", {}), {})
    async with Pool(configs, lazy=True) as p:
        outcome = await p.pool.call(p.spec("todo", "todo_read"), {})
        assert outcome == dead and outcome.is_error
        assert text_of(outcome.content).startswith("server 'todo' is unavailable: no answer within")
        assert [e.server for e in p.events if isinstance(e, ServerFailed)] == ["todo"]
        assert "todo" not in {s.server for s in p.pool.tools()}  # offered no more, as a dead server's tools
        assert await p.pool.call(p.spec("dev", "read"), {"file_path": "x"}) == said_before


async def test_a_built_in_server_whose_listing_cannot_be_made_starts_at_once_and_fails_as_before(
    tmp_path: Path,
) -> None:
    configs = builtins(tmp_path, {"SPROUT_DEV_SANDBOX": "bogus"}, ("dev",))
    assert announced(configs[0], None) is None
    async with Pool(configs, lazy=True) as p:
        assert p.states() == {"dev": "failed"}
        assert "SPROUT_DEV_SANDBOX must be one of" in p.pool.status()[0].last_error


async def test_a_server_that_lists_other_tools_than_were_announced_is_believed_from_the_next_request(
    tmp_path: Path,
) -> None:
    delegation = Delegating("The old description.")
    async with Pool(builtins(tmp_path, wanted=("agent",)), lazy=True, delegation=delegation) as p:
        assert p.spec("agent", "task").description == "The old description."
        delegation.description = "The new description."  # the session's agent types changed before the start
        await p.pool.call(p.spec("agent", "task"), {"description": "d", "prompt": "p"})
        warned = [e.text for e in p.events if isinstance(e, Notice) and e.level == "warning"]
        assert warned == ["MCP server 'agent' lists other tools than were announced; its own are offered"]
        assert await p.pool.refresh()  # between requests: the server's own listing
        assert p.spec("agent", "task").description == "The new description."


async def test_only_our_own_built_in_modules_are_announced(tmp_path: Path) -> None:
    dev = builtins(tmp_path, wanted=("dev",))[0]
    # A config naming our module as a stdio command is started as written; an in-process module not ours too.
    as_written = ServerConfig("dev", sys.executable, ("-m", "sprout_agent.tools.dev"), cwd=str(tmp_path))
    foreign = replace(dev, in_process="tests.inproc_fake")
    assert announced(as_written, None) is None and announced(foreign, None) is None
    assert announced(builtins(tmp_path, wanted=("agent",))[0], None) is None  # outside a session: no Delegation


async def test_killing_a_pending_server_waits_for_nothing(tmp_path: Path) -> None:
    async with Pool(builtins(tmp_path), lazy=True) as p:
        with anyio.fail_after(1.0):  # a started server's kill waits up to 2 s for its end: a pending one has none
            await p.pool.kill("todo", "killed by a hook")
        assert p.states()["todo"] == "dead" and p.started() == []


def test_a_headless_run_offers_the_same_request_whether_the_servers_start_first_or_at_their_first_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev,todo,agent"}
    bodies: list[bytes] = []
    lines: list[list[dict[str, object]]] = []
    for require in (False, True):
        script = [reply("Listing.", tool_use("todo__todo_read", {}, id="toolu_1")), reply("Done.")]
        with FakeAnthropic(script) as fake:
            options = Options("go", cwd=tmp_path.resolve(), output_format="stream-json", require_servers=require)
            run = headless(tmp_path, monkeypatch, options, fake=fake, servers={}, env=env)
        assert run.code == 0, run.stderr
        bodies.append(json.dumps(fake.requests[0].body["tools"]).encode())
        lines.append([json.loads(line) for line in run.stdout.splitlines()])
    assert bodies[0] == bodies[1]  # byte-identical: what the model is offered does not depend on when they start
    lazy, eager = lines
    assert [(s["name"], s["status"]) for s in lazy[0]["mcp_servers"]] == [(n, "pending") for n in EVERY]  # type: ignore[index]
    assert [(s["name"], s["status"]) for s in eager[0]["mcp_servers"]] == [(n, "connected") for n in EVERY]  # type: ignore[index]
    started = [line.get("server") for line in lazy if line.get("subtype") == "server_started"]
    assert started == ["todo"]  # the one the model called, when it called it
