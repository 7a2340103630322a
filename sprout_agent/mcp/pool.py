"""The MCP servers as one `ToolHost`: spawn them all at once, hand-shake, list, call, kill, end every group.

The pool owns each server process's life, from the spawn to the end of its process group. It imports no mcp:
it spawns the subprocess servers first, then loads `link` (the mcp client side) in a thread while they boot on the
other core. A lazy pool (a session's) offers the built-in servers' tools from their announced listing (announced.py)
and starts each at its first call. Modules importing mcp: `link`, `callbacks`, `lists`, `results`, `transports/`
(`stdio`, `stdio_wire`, `in_process`, `sdk`, `remote`; `http_cap` imports httpx2 only), `oauth/` (`provider`,
`login`), `agent_server` and the built-in servers in `tools/`, only where they serve.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import IO

import anyio
import anyio.to_thread

from sprout_agent.config.files import ServerConfig
from sprout_agent.core import processes
from sprout_agent.core.errors import ServerAnswered, ServerGone
from sprout_agent.core.events import Event, Notice, ServerFailed, ServerStarted
from sprout_agent.core.hooks.calling import is_hook
from sprout_agent.core.messages import Text
from sprout_agent.core.processes import ServerProcess
from sprout_agent.core.protocols import HookCallFailed, PromptInfo, ResourceInfo, ToolOutcome, ToolSpec
from sprout_agent.mcp import features as server_features
from sprout_agent.mcp import state as server_state
from sprout_agent.mcp.announced import announced, same_listing
from sprout_agent.mcp.client_features import ClientFeatures
from sprout_agent.mcp.oauth.store import OAuthSetup
from sprout_agent.mcp.state import ServerState, ServerStatus, describe_end, name_tools, needs_login
from sprout_agent.trust.private_files import open_private

# Turns a server's command line and environment into the ones that start it in its OS sandbox (or leaves them).
SandboxWrap = Callable[[ServerConfig, list[str], dict[str, str]], tuple[list[str], dict[str, str]]]

_KILL_WAIT = 2.0


class ServerPool:
    """Starts every configured server concurrently on enter; ends every process group on exit.

    Enter and exit it in one task (it owns an anyio task group); cancelling the enter kills everything.
    """

    def __init__(
        self,
        configs: Sequence[ServerConfig],
        *,
        emit: Callable[[Event], None],
        start_timeout: float,
        tool_timeout: float,
        result_max_bytes: int,
        child_env: Callable[[Mapping[str, str]], dict[str, str]],
        stderr_log: Path | None = None,
        sandbox: SandboxWrap | None = None,
        client: ClientFeatures | None = None,
        oauth: OAuthSetup | None = None,
        lazy: bool = False,
    ) -> None:
        """`client`: the roots, elicitation and sampling every session offers its server (None: none). `lazy`: the
        built-in servers start at their first call, their tools offered meanwhile from their announced listing."""
        self._lazy = lazy
        self._began = False  # `spawn` ran
        self._client = client
        self._servers = {config.name: ServerState(config) for config in configs}
        self._spawned: dict[str, ServerProcess | OSError] = {}
        self._linked = False  # sprout_agent.mcp.link is loaded (by `spawn`)
        self._emit = emit
        self._start_timeout = start_timeout
        self._tool_timeout = tool_timeout
        self._max_bytes = result_max_bytes
        self._child_env = child_env
        self._sandbox = sandbox
        self._oauth = oauth  # None: remote servers get no OAuth (a 401 still says "needs login")
        self._stderr_log = stderr_log
        self._log: IO[bytes] | None = None
        self._tg = anyio.create_task_group()
        self._tools: list[ToolSpec] = []

    async def __aenter__(self) -> ServerPool:
        if self._stderr_log is not None:
            self._log = os.fdopen(open_private(self._stderr_log), "ab")  # servers print secrets: 0600, 0700
        await self._tg.__aenter__()
        try:
            await self.spawn()
            now = [server for server in self._servers.values() if server.state != "pending"]
            for server in now:
                self._tg.start_soon(self._run, server)
            for server in now:
                await server.ready.wait()
        except BaseException:
            self.kill_all_now()
            await self._close()
            raise
        self._name_all()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._close()

    async def _close(self) -> None:
        for server in self._servers.values():
            server.gone("dead", "the agent is shutting down")
            server.scope.cancel()
        # Shield the group's own scope (a new scope would break nesting): teardown must finish under Ctrl-C,
        # and every wait inside it is bounded.
        self._tg.cancel_scope.shield = True
        await self._tg.__aexit__(None, None, None)
        self.kill_all_now()
        if self._log is not None:
            self._log.close()
            self._log = None

    def kill_all_now(self) -> None:
        """SIGKILLs every server's process group without awaiting; for signal handlers and atexit."""
        for server in self._servers.values():
            if server.proc is not None:
                server.proc.kill_now()

    async def spawn(self) -> None:
        """Spawns the subprocess servers, then loads the mcp client side (~1 s) in a thread while they boot.

        Entering the pool does this if nobody did it first; a caller that spawns early (to overlap its own
        work with the servers' start) must call `kill_all_now` if it never enters the pool.
        """
        if self._began:
            return
        self._began = True
        for server in self._servers.values():
            listed = announced(server.config, self._client) if self._lazy else None
            if listed is not None:
                server.pending(listed)
        await self._spawn_processes()
        if any(server.state != "pending" for server in self._servers.values()):
            await self._link()

    async def _link(self) -> None:
        if not self._linked:
            await anyio.to_thread.run_sync(_import_link, abandon_on_cancel=True)
            self._linked = True

    async def _spawn_processes(self) -> None:
        for server in self._servers.values():
            config = server.config
            if config.transport != "stdio":  # nothing to spawn: the others run in here, in the SDK, or remotely
                continue
            argv, env = [config.command, *config.args], self._child_env(config.env)
            try:
                if self._sandbox is not None:
                    argv, env = self._sandbox(config, argv, env)
                spawned = await processes.spawn(argv, env, config.cwd)
            except OSError as error:
                self._spawned[config.name] = error
            else:
                self._spawned[config.name] = spawned
                server.spawned(spawned)  # its pid shows, and kill_all_now reaches it, before a runner adopts it

    # --- ToolHost -------------------------------------------------------------------------------------

    def tools(self) -> Sequence[ToolSpec]:
        live = {name for name, server in self._servers.items() if server.state in ("running", "pending", "starting")}
        live.add(server_features.RESOURCES)
        return [spec for spec in self._tools if spec.server in live]

    async def refresh(self) -> bool:
        stale = [server for server in self._servers.values() if server.stale and server.state == "running"]
        if not stale:
            return False
        before = list(self.tools())
        for server in stale:
            await server_features.relist(server, self._emit, self._start_timeout)
        self._name_all()
        return list(self.tools()) != before

    def prompts(self) -> list[PromptInfo]:
        """Every running server's prompts, in config order then the server's."""
        return [prompt for server in self._servers.values() if server.state == "running" for prompt in server.prompts]

    def resources(self) -> list[ResourceInfo]:
        return [item for server in self._servers.values() if server.state == "running" for item in server.resources]

    async def read_resource(self, server: str, uri: str) -> ToolOutcome:
        """A resource's contents as ReadMcpResourceTool gives them to the model (an `is_error` outcome on failure)."""
        return await self.call(server_features.READ_RESOURCE, {"server": server, "uri": uri})

    async def get_prompt(self, server: str, name: str, arguments: dict[str, str]) -> str:
        """A server prompt's messages as text; raises `ServerGone` or `ServerAnswered` (their text says why)."""
        target = self._servers.get(server)
        if target is None or target.link is None:
            raise ServerGone(target.unavailable() if target is not None else f"no MCP server named '{server}'")
        with anyio.fail_after(self._tool_timeout):
            return await target.link.get_prompt(name, arguments)

    def _name_all(self) -> None:
        servers = self._servers.values()
        self._tools = name_tools(servers, self._emit) + server_features.resource_tools(servers)

    async def call(
        self,
        spec: ToolSpec,
        arguments: dict[str, object],
        on_progress: Callable[[str], None] | None = None,
        *,
        outside_sandbox: bool = False,
        call_id: str = "",
    ) -> ToolOutcome:
        server = self._servers.get(spec.server)
        resources = spec.server == server_features.RESOURCES
        if server is None and not resources:
            return _error_outcome(f"server '{spec.server}' is unavailable: not configured")
        # The entry's `timeout` wins, as in Claude Code; the resource tools take the global one.
        limit = (server.config.call_timeout if server is not None else None) or self._tool_timeout
        try:
            with anyio.fail_after(limit):
                if resources or server is None:
                    return await server_features.call_resource_tool(self._servers, spec, arguments)
                # Only our own servers (in-process) are told the call's id: nothing of another's business.
                own_id = call_id if server.config.transport == "in-process" else ""
                return await self._request(
                    server, spec.tool, arguments, on_progress, outside_sandbox=outside_sandbox, call_id=own_id
                )
        except TimeoutError:
            return _error_outcome(f"tool '{spec.name}' timed out after {limit:g} s")
        except ServerGone:
            return _error_outcome(server.unavailable() if server is not None else "the server is unavailable")
        except ServerAnswered as exc:
            return _error_outcome(str(exc))
        except Exception as exc:  # a malformed result must become a tool error, never a crash
            return _error_outcome(f"tool '{spec.name}' failed: {type(exc).__name__}: {exc}")

    async def call_hook(self, spec: ToolSpec, arguments: dict[str, object]) -> ToolOutcome:
        server = self._servers.get(spec.server)
        if server is None:
            raise HookCallFailed(f"server '{spec.server}' is unavailable: not configured")
        try:
            return await self._request(server, spec.tool, arguments)
        except ServerGone as exc:
            raise HookCallFailed(server.unavailable()) from exc
        except Exception as exc:
            raise HookCallFailed(
                str(exc) if isinstance(exc, ServerAnswered) else f"{type(exc).__name__}: {exc}"
            ) from exc

    async def kill(self, server: str, reason: str) -> None:
        target = self._servers.get(server)
        if target is None:
            return
        never_started = target.state == "pending"
        target.gone("dead", reason)
        if never_started:
            return
        # SIGKILL first: a server killed for hanging gets no grace, and the caller (a hook round) is waiting.
        if target.proc is not None:
            target.proc.kill_now()
        target.scope.cancel()
        with anyio.CancelScope(shield=True), anyio.move_on_after(_KILL_WAIT):
            await target.done.wait()

    async def restart(self, name: str) -> ServerStatus | None:
        """Starts a server that is not running again (after a login); its tools join at the next request."""
        old = self._servers.get(name)
        if old is None or old.state in ("pending", "starting", "running") or not self._linked:
            return None
        fresh = ServerState(old.config)
        self._servers[name] = fresh
        self._tg.start_soon(self._run, fresh)
        await fresh.ready.wait()  # bounded: the runner's connect is under the start timeout
        self._tools = name_tools(self._servers.values(), self._emit)
        return fresh.status()

    def status(self) -> list[ServerStatus]:
        return [server.status() for server in self._servers.values()]

    # --- internals ------------------------------------------------------------------------------------

    async def _request(
        self,
        server: ServerState,
        tool: str,
        arguments: dict[str, object],
        on_progress: Callable[[str], None] | None = None,
        *,
        outside_sandbox: bool = False,
        call_id: str = "",
    ) -> ToolOutcome:
        if server.state == "pending":  # its first call (or hook) starts it; calls meanwhile wait for that start
            server.state = "starting"
            self._tg.start_soon(self._run, server)
        if server.state == "starting":
            await server.ready.wait()  # bounded: the runner's connect is under the start timeout
        link = server.link
        if link is None:
            raise ServerGone
        # Registered so that a death noticed elsewhere (reader, kill) ends this wait at once.
        with anyio.CancelScope() as scope:
            server.calls.add(scope)
            try:
                return await link.call(tool, arguments, on_progress, outside_sandbox=outside_sandbox, call_id=call_id)
            except ServerGone:
                pass
            finally:
                server.calls.discard(scope)
        # The connection is gone: let the runner record how the process ended before we say why.
        with anyio.move_on_after(_KILL_WAIT):
            await server.done.wait()
        server.gone("dead", "connection closed")
        raise ServerGone

    async def _run(self, server: ServerState) -> None:
        try:
            with server.scope:
                await self._serve(server)
        except Exception as exc:  # every way a server can fail becomes a reported reason
            if server.state == "starting" and needs_login(exc):
                server.gone("needs login", describe_end(exc, server))
                self._emit(ServerFailed(server.config.name, server.last_error, ""))
            else:
                self._ended(server, describe_end(exc, server))
        else:
            if not server.scope.cancel_called:
                self._ended(server, describe_end(None, server))
        finally:
            server.ready.set()
            server.done.set()

    async def _serve(self, server: ServerState) -> None:
        """Hand-shake and list within the start timeout; then serve calls until the server ends."""
        # Imported here, not at the top, so that the pool loads without mcp; `spawn` (or, for a server started at
        # its first call, `_link`) has loaded the module in a thread, so this costs a dictionary lookup and, unlike
        # a module kept in an attribute, the checker sees the call.
        await self._link()
        from sprout_agent.mcp.link import connect

        config = server.config
        wall = datetime.now().astimezone()
        async with connect(
            config,
            spawned=self._spawned.pop(config.name, None),
            env=self._child_env(config.env),
            on_spawn=server.spawned,
            on_stderr=server_state.stderr_writer(self._log, config.name),
            timeout=config.start_timeout or self._start_timeout,
            max_bytes=self._max_bytes,
            client=self._client,
            oauth=self._oauth,
            on_note=server_state.note_taker(server, self._emit),
        ) as (link, listed, ended):
            self._adopt(server, listed.tools)
            server.resources, server.prompts = list(listed.resources), list(listed.prompts)
            server.initialize_seconds, server.list_seconds = listed.initialize_seconds, listed.list_seconds
            server.link, server.state = link, "running"
            server.started_at, server.start_seconds = wall, listed.start_seconds
            hooks = sum(is_hook(spec) for spec in listed.tools)
            self._emit(ServerStarted(config.name, len(listed.tools) - hooks, hooks, listed.start_seconds))
            for notice in listed.notices:
                self._emit(Notice(f"MCP server '{config.name}': {notice}", "warning"))
            server.ready.set()
            await ended.wait()

    def _adopt(self, server: ServerState, listed: list[ToolSpec]) -> None:
        """The started server's tools; an announced server keeps its offered ones, unless it lists others: then
        what it says wins, offered from the next request (re-listed as a changed list is)."""
        if server.announced is None:
            server.tools = listed
        elif not same_listing(server.announced, listed):
            name = server.config.name
            self._emit(
                Notice(f"MCP server '{name}' lists other tools than were announced; its own are offered", "warning")
            )
            server.stale.add("tools")

    def _ended(self, server: ServerState, reason: str) -> None:
        reason = reason.strip().splitlines()[0] if reason.strip() else "stopped for an unknown reason"
        if server.state == "starting":
            server.gone("failed", reason)
            tail = server.proc.stderr_tail() if server.proc is not None else ""
            self._emit(ServerFailed(server.config.name, reason, tail))
        elif server.state == "running":
            server.gone("dead", reason)
            self._emit(Notice(f"MCP server '{server.config.name}' stopped: {reason}", "warning"))


def _import_link() -> None:
    """Loads the mcp client side (~1 s of imports), for `spawn`'s thread."""
    import sprout_agent.mcp.link  # noqa: F401  # pyright: ignore[reportUnusedImport]


def _error_outcome(text: str) -> ToolOutcome:
    return ToolOutcome((Text(text),), is_error=True)
