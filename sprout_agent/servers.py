"""The MCP servers as one `ToolHost`: start them all at once, list, call, kill, and end every process group.

Only this module and `stdio_transport` (plus the built-in servers in `tools/`) import the mcp SDK.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import IO, cast

import anyio
import mcp.types as types
from mcp import MCPError
from mcp.client._transport import ReadStream, WriteStream
from mcp.client.session import ClientSession
from mcp.shared.message import SessionMessage

from sprout_agent import __version__
from sprout_agent.config import ServerConfig
from sprout_agent.events import Event, Notice, ServerFailed, ServerStarted
from sprout_agent.in_process import open_in_process
from sprout_agent.mcp_results import error_outcome, to_outcome
from sprout_agent.processes import ServerProcess
from sprout_agent.protocols import HookCallFailed, ToolOutcome, ToolSpec
from sprout_agent.stdio_transport import open_stdio
from sprout_agent.tool_names import model_tool_name, with_hash

_KILL_WAIT = 2.0


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """One server as `/servers` shows it."""

    name: str
    state: str  # starting | running | failed | dead
    tool_count: int
    hook_count: int
    started_at: datetime | None
    start_seconds: float | None
    last_error: str
    stderr_tail: str
    pid: int | None
    initialize_seconds: float | None = None  # spawn + initialize handshake (`mcp doctor`)
    list_seconds: float | None = None  # tools/list, every page


class _ServerGone(Exception):
    """The server died or was killed while we were talking to it."""


class _Server:
    """The mutable state of one configured server; owned by its runner task."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.state = "starting"
        self.last_error = ""
        self.tools: list[ToolSpec] = []
        self.session: ClientSession | None = None
        self.proc: ServerProcess | None = None
        self.started_at: datetime | None = None
        self.start_seconds: float | None = None
        self.initialize_seconds: float | None = None
        self.list_seconds: float | None = None
        self.scope = anyio.CancelScope()
        self.calls: set[anyio.CancelScope] = set()
        self.ready = anyio.Event()  # running, failed or dead: the pool's enter waits for this
        self.done = anyio.Event()

    def gone(self, state: str, reason: str) -> None:
        if self.state in ("failed", "dead"):
            return
        self.state, self.last_error, self.session = state, reason, None
        for call in self.calls:
            call.cancel()

    def spawned(self, proc: ServerProcess) -> None:
        self.proc = proc

    def unavailable(self) -> str:
        return f"server '{self.config.name}' is unavailable: {self.last_error or self.state}"


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
        prespawned: Mapping[str, ServerProcess | OSError] | None = None,
    ) -> None:
        self._servers = {config.name: _Server(config) for config in configs}
        self._prespawned = dict(prespawned or {})
        self._emit = emit
        self._start_timeout = start_timeout
        self._tool_timeout = tool_timeout
        self._max_bytes = result_max_bytes
        self._child_env = child_env
        self._stderr_log = stderr_log
        self._log: IO[bytes] | None = None
        self._tg = anyio.create_task_group()
        self._tools: list[ToolSpec] = []

    async def __aenter__(self) -> ServerPool:
        if self._stderr_log is not None:
            self._log = self._stderr_log.open("ab")
        await self._tg.__aenter__()
        try:
            for server in self._servers.values():
                self._tg.start_soon(self._run, server)
            for server in self._servers.values():
                await server.ready.wait()
        except BaseException:
            self.kill_all_now()
            await self._close()
            raise
        self._tools = _name_tools(self._servers.values(), self._emit)
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

    # --- ToolHost -------------------------------------------------------------------------------------

    def tools(self) -> Sequence[ToolSpec]:
        live = {name for name, server in self._servers.items() if server.state == "running"}
        return [spec for spec in self._tools if spec.server in live]

    async def call(self, spec: ToolSpec, arguments: dict[str, object]) -> ToolOutcome:
        server = self._servers.get(spec.server)
        if server is None:
            return error_outcome(f"server '{spec.server}' is unavailable: not configured")
        try:
            with anyio.fail_after(self._tool_timeout):
                result = await self._request(server, spec.tool, arguments)
        except TimeoutError:
            return error_outcome(f"tool '{spec.name}' timed out after {self._tool_timeout:g} s")
        except _ServerGone:
            return error_outcome(server.unavailable())
        except MCPError as exc:
            return error_outcome(exc.message or str(exc))
        except Exception as exc:  # a malformed result must become a tool error, never a crash
            return error_outcome(f"tool '{spec.name}' failed: {type(exc).__name__}: {exc}")
        return to_outcome(result, self._max_bytes)

    async def call_hook(self, spec: ToolSpec, arguments: dict[str, object]) -> ToolOutcome:
        server = self._servers.get(spec.server)
        if server is None:
            raise HookCallFailed(f"server '{spec.server}' is unavailable: not configured")
        try:
            result = await self._request(server, spec.tool, arguments)
        except _ServerGone as exc:
            raise HookCallFailed(server.unavailable()) from exc
        except MCPError as exc:
            raise HookCallFailed(exc.message or str(exc)) from exc
        except Exception as exc:
            raise HookCallFailed(f"{type(exc).__name__}: {exc}") from exc
        return to_outcome(result, self._max_bytes)

    async def kill(self, server: str, reason: str) -> None:
        target = self._servers.get(server)
        if target is None:
            return
        target.gone("dead", reason)
        # SIGKILL first: a server killed for hanging gets no grace, and the caller (a hook round) is waiting.
        if target.proc is not None:
            target.proc.kill_now()
        target.scope.cancel()
        with anyio.CancelScope(shield=True), anyio.move_on_after(_KILL_WAIT):
            await target.done.wait()

    def status(self) -> list[ServerStatus]:
        return [_status_of(server) for server in self._servers.values()]

    # --- internals ------------------------------------------------------------------------------------

    async def _request(self, server: _Server, tool: str, arguments: dict[str, object]) -> types.CallToolResult:
        session = server.session
        if session is None:
            raise _ServerGone
        # Registered so that a death noticed elsewhere (reader, kill) ends this wait at once.
        with anyio.CancelScope() as scope:
            server.calls.add(scope)
            try:
                return await session.call_tool(tool, arguments)
            except MCPError as exc:
                if exc.code != types.CONNECTION_CLOSED:
                    raise
            finally:
                server.calls.discard(scope)
        # The connection is gone: let the runner record how the process ended before we say why.
        with anyio.move_on_after(_KILL_WAIT):
            await server.done.wait()
        server.gone("dead", "connection closed")
        raise _ServerGone

    async def _run(self, server: _Server) -> None:
        try:
            with server.scope:
                await self._serve(server)
        except Exception as exc:  # every way a server can fail becomes a reported reason
            self._ended(server, _describe(exc, server))
        else:
            if not server.scope.cancel_called:
                self._ended(server, _describe(None, server))
        finally:
            server.ready.set()
            server.done.set()

    async def _serve(self, server: _Server) -> None:
        config = server.config
        if config.in_process is not None:
            async with open_in_process(config.in_process, config.cwd or os.getcwd()) as (ended, read, write):
                await self._session(server, read, write, time.monotonic(), ended)
            return
        spawned = self._prespawned.pop(config.name, None)
        began = spawned.spawned_at if isinstance(spawned, ServerProcess) else time.monotonic()
        async with open_stdio(
            config.command,
            config.args,
            env=self._child_env(config.env),
            cwd=config.cwd,
            on_spawn=server.spawned,
            on_stderr=self._stderr_writer(config.name),
            spawned=spawned,
        ) as (proc, read, write):
            await self._session(server, read, write, began, proc.ended)

    async def _session(
        self,
        server: _Server,
        read: ReadStream[SessionMessage | Exception],
        write: WriteStream[SessionMessage],
        began: float,
        ended: anyio.Event,
    ) -> None:
        """Handshake and tool listing within the start timeout; then serve calls until the server ends."""
        config = server.config
        timeout = config.start_timeout or self._start_timeout
        wall = datetime.now().astimezone()
        info = types.Implementation(name="sprout-agent", version=__version__)
        async with ClientSession(read, write, client_info=info) as session:
            listed: list[types.Tool] = []
            with anyio.move_on_after(timeout) as start_scope:
                await session.initialize()
                server.initialize_seconds = time.monotonic() - began
                listed = await _list_tools(session)
                server.list_seconds = time.monotonic() - began - server.initialize_seconds
            if start_scope.cancelled_caught:
                raise TimeoutError(f"no answer within {timeout:g} s")
            server.tools = [_spec(config.name, tool) for tool in listed]
            server.session, server.state = session, "running"
            server.started_at, server.start_seconds = wall, time.monotonic() - began
            hooks = sum(spec.tool.startswith("_") for spec in server.tools)
            self._emit(ServerStarted(config.name, len(server.tools) - hooks, hooks, server.start_seconds))
            server.ready.set()
            await ended.wait()

    def _ended(self, server: _Server, reason: str) -> None:
        reason = reason.strip().splitlines()[0] if reason.strip() else "stopped for an unknown reason"
        if server.state == "starting":
            server.gone("failed", reason)
            tail = server.proc.stderr_tail() if server.proc is not None else ""
            self._emit(ServerFailed(server.config.name, reason, tail))
        elif server.state == "running":
            server.gone("dead", reason)
            self._emit(Notice(f"MCP server '{server.config.name}' stopped: {reason}", "warning"))

    def _stderr_writer(self, name: str) -> Callable[[bytes], None] | None:
        log = self._log
        if log is None:
            return None
        prefix = f"[{name}] ".encode()

        def write(chunk: bytes) -> None:
            # Prefixing per chunk, not per line: cheap, and enough to tell the servers apart.
            log.write(prefix + chunk.replace(b"\n", b"\n" + prefix).removesuffix(prefix))
            if not chunk.endswith(b"\n"):
                log.write(b"\n")
            log.flush()

        return write


async def _list_tools(session: ClientSession) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools


def _spec(server: str, tool: types.Tool) -> ToolSpec:
    annotations = tool.annotations
    read_only = annotations.read_only_hint if annotations is not None else None
    schema: dict[str, object] = dict(tool.input_schema)
    return ToolSpec(f"{server}__{tool.name}", server, tool.name, tool.description or "", schema, read_only)


def _name_tools(servers: Iterable[_Server], emit: Callable[[Event], None]) -> list[ToolSpec]:
    """Gives every tool a model-safe, unique, stable name, in config order then listing order."""
    named: list[ToolSpec] = []
    used: set[str] = set()
    for server in servers:
        for spec in server.tools:
            name = model_tool_name(spec.server, spec.tool)
            if name in used:
                name = with_hash(name, spec.server, spec.tool)
            if name in used:
                emit(Notice(f"skipped tool '{spec.tool}' of '{spec.server}': its name collides", "warning"))
                continue
            used.add(name)
            named.append(ToolSpec(name, spec.server, spec.tool, spec.description, spec.input_schema, spec.read_only))
        server.tools = [spec for spec in named if spec.server == server.config.name]
    return named


def _describe(exc: BaseException | None, server: _Server) -> str:
    """One line for why a server stopped; the exit code beats 'Connection closed'."""
    while isinstance(exc, BaseExceptionGroup):
        exc = cast("BaseExceptionGroup[BaseException]", exc).exceptions[0]
    code = server.proc.returncode if server.proc is not None else None
    if isinstance(exc, TimeoutError):
        return str(exc) or "timed out"
    if isinstance(exc, OSError) and server.proc is None:
        what = exc.filename if exc.filename is not None else server.config.command
        return f"cannot start '{what}': {exc.strerror or exc}"
    if code is not None and code >= 0:
        return f"exited with code {code}"
    if isinstance(exc, MCPError):
        return exc.message or str(exc)
    if exc is not None:
        return str(exc) or type(exc).__name__
    return "closed its output" if code is None else f"ended by signal {-code}"


def _status_of(server: _Server) -> ServerStatus:
    hooks = sum(spec.tool.startswith("_") for spec in server.tools)
    return ServerStatus(
        name=server.config.name,
        state=server.state,
        tool_count=len(server.tools) - hooks,
        hook_count=hooks,
        started_at=server.started_at,
        start_seconds=server.start_seconds,
        last_error=server.last_error,
        stderr_tail=server.proc.stderr_tail() if server.proc is not None else "",
        pid=server.proc.pid if server.proc is not None else None,
        initialize_seconds=server.initialize_seconds,
        list_seconds=server.list_seconds,
    )
