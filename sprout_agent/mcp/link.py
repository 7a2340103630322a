"""One MCP client session to one server, whatever its transport (stdio, in-process, sdk, http, sse): handshake,
tool listing, tool calls.

The pool (pool.py) owns every server's life and state and never imports mcp; it loads this module in a
thread once its processes are spawned, so mcp's import (~1 s) overlaps their start-up. MCP errors leave
here as `ServerGone` (the connection closed) or `ServerAnswered` (an error answer), never as mcp types.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, assert_never, cast

import anyio
import mcp.types as types
from mcp import MCPError
from mcp.client.session import ClientSession
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.memory import MessageStream
from pydantic import ValidationError

from sprout_agent import __version__
from sprout_agent.config.files import ServerConfig
from sprout_agent.core.errors import ServerAnswered, ServerGone
from sprout_agent.core.processes import ServerProcess
from sprout_agent.core.protocols import PromptInfo, ResourceInfo, ToolOutcome, ToolSpec
from sprout_agent.mcp.agent_server import CALL_ID_META
from sprout_agent.mcp.announced import AGENT_SERVER, served_by, spec_of
from sprout_agent.mcp.callbacks import callbacks
from sprout_agent.mcp.client_features import ClientFeatures
from sprout_agent.mcp.lists import NoteSink, get_prompt, list_prompts, list_resources, message_handler, read_resource
from sprout_agent.mcp.oauth.store import OAuthSetup
from sprout_agent.mcp.results import progress_text, to_outcome
from sprout_agent.mcp.transports.in_process import open_in_process
from sprout_agent.mcp.transports.sdk import open_sdk
from sprout_agent.mcp.transports.stdio import ReadStream, WriteStream, open_stdio
from sprout_agent.mcp.transports.stdio_wire import too_large
from sprout_agent.trust.sandbox import OUTSIDE_SANDBOX_META

if TYPE_CHECKING:  # the module itself loads only when a remote server is configured (connect)
    from sprout_agent.mcp.transports.remote import Streams as RemoteStreams

Streams = tuple[ReadStream, WriteStream] | MessageStream  # stdio, or in-process memory streams

MAX_TOOL_PAGES = 50
"""tools/list pages read from one server; a cursor that never ends stops here (it once grew memory to 670 MB)."""
MAX_TOOLS_PER_SERVER = 1000
"""Tools kept from one server: far more than a model can choose among, and a bound on what a listing holds."""


@dataclass(frozen=True, slots=True)
class Listed:
    """What the handshake learned, with its timings from the spawn."""

    tools: list[ToolSpec]
    initialize_seconds: float
    list_seconds: float
    start_seconds: float
    notices: tuple[str, ...] = ()  # what the listing left out, and why
    resources: tuple[ResourceInfo, ...] = ()
    prompts: tuple[PromptInfo, ...] = ()


class Link:
    """A live session: calls one tool at a time per caller; MCP errors become our exceptions."""

    def __init__(
        self, session: ClientSession, max_bytes: int, ended: anyio.Event | None = None, server: str = ""
    ) -> None:
        self._session = session
        self._server = server
        self._max_bytes = max_bytes
        self._ended = ended  # a remote server has no process to watch: a lost connection is its end

    async def call(
        self,
        tool: str,
        arguments: dict[str, object],
        on_progress: Callable[[str], None] | None = None,
        *,
        outside_sandbox: bool = False,
        call_id: str = "",
    ) -> ToolOutcome:
        """`on_progress` gets each progress message the server sends while the call runs (asking for progress
        only when it is given, so a server that computes progress does so only for a listener)."""
        # Our own keys in the request's `_meta` (the SDK's type names only the standard keys; extra ones pass).
        keys: dict[str, object] = {OUTSIDE_SANDBOX_META: True} if outside_sandbox else {}
        if call_id:
            keys[CALL_ID_META] = call_id
        meta = cast(types.RequestParamsMeta, keys) if keys else None
        callback = _progress_callback(on_progress) if on_progress is not None else None
        try:
            result = await self._session.call_tool(tool, arguments, progress_callback=callback, meta=meta)
        except MCPError as exc:
            ours = _ours(exc)
            if isinstance(ours, ServerGone) and self._ended is not None:
                self._ended.set()
            raise ours from exc
        return to_outcome(result, self._max_bytes)

    async def relist(self, kind: str) -> tuple[list[ToolSpec] | list[ResourceInfo] | list[PromptInfo], list[str]]:
        """The server's `kind` list (tools, resources or prompts) read again, with what it left out."""
        notices: list[str] = []
        session, server = self._session, self._server
        async with self._translated():
            if kind == "tools":
                return [_spec(server, tool) for tool in await _list_tools(session, notices)], notices
            if kind == "resources":
                return await list_resources(session, server, notices), notices
            return await list_prompts(session, server, notices), notices

    async def read_resource(self, uri: str) -> ToolOutcome:
        async with self._translated():
            return await read_resource(self._session, uri, self._max_bytes)
        raise AssertionError("unreachable")  # a context manager may swallow, as far as the checker knows

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> str:
        async with self._translated():
            return await get_prompt(self._session, name, arguments)
        raise AssertionError("unreachable")

    @asynccontextmanager
    async def _translated(self) -> AsyncGenerator[None]:
        try:
            yield
        except MCPError as exc:
            ours = _ours(exc)
            if isinstance(ours, ServerGone) and self._ended is not None:
                self._ended.set()
            raise ours from exc
        except ValidationError as exc:
            raise _translated(exc) from exc


def _progress_callback(on_progress: Callable[[str], None]) -> ProgressFnT:
    async def callback(progress: float, total: float | None, message: str | None) -> None:
        # A server that sends numbers only (server-everything's longRunningOperation) still shows movement.
        text = message if message else f"{progress:g}/{total:g}" if total else f"{progress:g}"
        on_progress(progress_text(text))

    return callback


# How mcp 2.3.0's Streamable HTTP client fails a call whose answer event was over its `max_sse_event_size`
# (`_handle_sse_response`: "SSE stream failed: " + httpx2's SSEError). It gives the code of a lost connection,
# but only that one answer's stream ended: the session goes on, so it is an error for that call alone.
_EVENT_OVER_CAP = "SSE stream failed: Server-sent event exceeded"
# The messages mcp 2.3.0 gives its own CONNECTION_CLOSED (-32000) errors: the dispatcher's when the transport
# closed, the Streamable HTTP client's when a call's stream broke. A server's own error answer may carry -32000
# too (the usual code of a server's generic error): with any other message it is that call's answer, not the end
# of the server.
_CLOSED_MESSAGES = ("Connection closed", "SSE stream failed: ", "SSE stream ended without a response")


def _ours(exc: MCPError) -> ServerGone | ServerAnswered:
    if exc.code == types.CONNECTION_CLOSED and exc.message.startswith(_EVENT_OVER_CAP):
        return ServerAnswered(too_large(None))
    if exc.code == types.CONNECTION_CLOSED and exc.message.startswith(_CLOSED_MESSAGES):
        return ServerGone("connection closed")
    return ServerAnswered(exc.message or str(exc))


@asynccontextmanager
async def connect(
    config: ServerConfig,
    *,
    spawned: ServerProcess | OSError | None,
    env: Mapping[str, str],
    on_spawn: Callable[[ServerProcess], None],
    on_stderr: Callable[[bytes], None] | None,
    timeout: float,
    max_bytes: int,
    client: ClientFeatures | None = None,
    oauth: OAuthSetup | None = None,
    on_note: NoteSink | None = None,
) -> AsyncGenerator[tuple[Link, Listed, anyio.Event]]:
    """Opens the transport, hand-shakes and lists tools within `timeout`; yields the link, the listing and an
    event set when the server ends. Leaving closes the session and ends the server (its whole group).
    `client`: the roots, elicitation and sampling offered to the server (None: nothing)."""
    try:
        match config.transport:
            case "stdio":
                began = spawned.spawned_at if isinstance(spawned, ServerProcess) else time.monotonic()
                async with (
                    open_stdio(
                        config.command,
                        config.args,
                        env=env,
                        cwd=config.cwd,
                        on_spawn=on_spawn,
                        on_stderr=on_stderr,
                        spawned=spawned,
                    ) as (proc, read, write),
                    _session(
                        config, (read, write), began, timeout, max_bytes, proc.notices, client=client, on_note=on_note
                    ) as (link, listed),
                ):
                    yield link, listed, proc.ended
            case "in-process":
                assert config.in_process is not None  # ServerConfig holds this transport to its module
                served = served_by(config, client)
                if config.in_process == AGENT_SERVER and served is None:
                    raise ServerGone("the agent server runs only inside a session (subagents and skills)")
                opened = open_in_process(config.in_process, config.cwd or os.getcwd(), config.env, served)
                async with _local(config, opened, timeout, max_bytes, client, on_note) as connected:
                    yield connected
            case "sdk":
                opened = open_sdk(config.name, client.sdk if client is not None else None)
                async with _local(config, opened, timeout, max_bytes, client, on_note) as connected:
                    yield connected
            case "http":
                # httpx2 and the SDK's HTTP clients only when a remote server is set
                from sprout_agent.mcp.transports.remote import open_http

                async with _remote(config, open_http, timeout, max_bytes, client, oauth, on_note) as connected:
                    yield connected
            case "sse":
                from sprout_agent.mcp.transports.remote import open_sse

                async with _remote(config, open_sse, timeout, max_bytes, client, oauth, on_note) as connected:
                    yield connected
            case _:
                assert_never(config.transport)
    except Exception as exc:  # the SDK's task groups wrap its errors: the first leaf says what happened
        ours = _translated(exc, remote=config.remote)
        if ours is exc:
            raise
        raise ours from exc


@asynccontextmanager
async def _local(
    config: ServerConfig,
    opened: AbstractAsyncContextManager[tuple[anyio.Event, MessageStream]],
    timeout: float,
    max_bytes: int,
    client: ClientFeatures | None,
    on_note: NoteSink | None,
) -> AsyncGenerator[tuple[Link, Listed, anyio.Event]]:
    """A server inside this process (built in, or the SDK's): memory streams, nothing spawned."""
    began = time.monotonic()
    async with (
        opened as (ended, streams),
        _session(config, streams, began, timeout, max_bytes, [], client=client, on_note=on_note) as (link, listed),
    ):
        yield link, listed, ended


# open_http or open_sse (transports/remote.py): the config, the start timeout, the refusals it collects, the OAuth.
RemoteOpener = Callable[
    [ServerConfig, float, list[Exception], OAuthSetup | None], AbstractAsyncContextManager["RemoteStreams"]
]


@asynccontextmanager
async def _remote(
    config: ServerConfig,
    open_remote: RemoteOpener,
    timeout: float,
    max_bytes: int,
    client: ClientFeatures | None,
    oauth: OAuthSetup | None,
    on_note: NoteSink | None,
) -> AsyncGenerator[tuple[Link, Listed, anyio.Event]]:
    began, ended, refused, started = time.monotonic(), anyio.Event(), list[Exception](), False
    # The start-up bound covers connecting too (an SSE endpoint that never sends its first event), then is
    # lifted: the scope stays around the session, since it must be left in the task that entered it.
    with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:
        try:
            async with (
                open_remote(config, timeout, refused, oauth) as streams,
                _session(config, streams, began, timeout, max_bytes, [], ended, client=client, on_note=on_note) as (
                    link,
                    listed,
                ),
            ):
                scope.deadline, started = math.inf, True
                yield link, listed, ended
        except Exception as exc:
            if refused and not started:  # the status says more than the error the SDK made of it
                raise refused[-1] from exc
            raise
    if scope.cancelled_caught:
        raise TimeoutError(f"no answer within {timeout:g} s")


def _translated(exc: Exception, *, remote: bool = False) -> Exception:
    leaf: BaseException = exc
    while isinstance(leaf, BaseExceptionGroup):
        leaf = cast("BaseExceptionGroup[BaseException]", leaf).exceptions[0]
    if isinstance(leaf, ServerGone):  # ours already (a login that is needed): it says what happened
        return leaf
    if remote:
        from sprout_agent.mcp.transports import remote as remote_link

        reason = remote_link.failure(leaf)
        if reason is not None:
            return ServerGone(reason)
    if isinstance(leaf, MCPError):
        return _ours(leaf)
    if isinstance(leaf, ValidationError):  # an answer the protocol's schema rejects; its own text spans lines
        first = leaf.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return ServerAnswered(f"invalid answer from the server: {where}: {first['msg']}")
    return exc


@asynccontextmanager
async def _session(
    config: ServerConfig,
    streams: Streams,
    began: float,
    timeout: float,
    max_bytes: int,
    notices: list[str],
    ended: anyio.Event | None = None,
    *,
    client: ClientFeatures | None = None,
    on_note: NoteSink | None = None,
) -> AsyncGenerator[tuple[Link, Listed]]:
    """`notices` gathers what the listing leaves out (the transport adds the invalid tools it dropped).
    The one place a ClientSession is made, whatever the transport: its capabilities and callbacks go here."""
    info = types.Implementation(name="sprout-agent", version=__version__)
    offered = callbacks(config.name, client) if client is not None else None
    async with (
        ClientSession(
            streams[0],
            streams[1],
            client_info=info,
            message_handler=message_handler(on_note) if on_note is not None else None,
            list_roots_callback=offered.list_roots if offered else None,
            elicitation_callback=offered.elicitation if offered else None,
            sampling_callback=offered.sampling if offered else None,
        ) as session,
        _roots_listener(session, client),
    ):
        initialized, listed = 0.0, list[types.Tool]()
        resources, prompts = list[ResourceInfo](), list[PromptInfo]()
        with anyio.move_on_after(timeout) as start_scope:
            await session.initialize()
            initialized = time.monotonic() - began
            listed = await _list_tools(session, notices)
            # Only servers that declare these capabilities are asked: the built-in ones cost nothing more.
            resources = await list_resources(session, config.name, notices)
            prompts = await list_prompts(session, config.name, notices)
        if start_scope.cancelled_caught:
            raise TimeoutError(f"no answer within {timeout:g} s")
        took = time.monotonic() - began
        tools = [_spec(config.name, tool) for tool in listed]
        listing = Listed(tools, initialized, took - initialized, took, tuple(notices), tuple(resources), tuple(prompts))
        yield Link(session, max_bytes, ended, config.name), listing


@asynccontextmanager
async def _roots_listener(session: ClientSession, client: ClientFeatures | None) -> AsyncGenerator[None]:
    """While the session lives, a change of roots sends it `notifications/roots/list_changed`."""
    if client is None:
        yield
        return

    async def notify() -> None:
        await session.send_notification(types.RootsListChangedNotification())

    stop = client.roots.listen(notify)
    try:
        yield
    finally:
        stop()


async def _list_tools(session: ClientSession, notices: list[str]) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        if len(tools) > MAX_TOOLS_PER_SERVER:
            notices.append(f"kept the first {MAX_TOOLS_PER_SERVER} tools; it lists more")
            return tools[:MAX_TOOLS_PER_SERVER]
        cursor = page.next_cursor
        if cursor is None:
            return tools
    notices.append(f"stopped listing tools after {MAX_TOOL_PAGES} pages ({len(tools)} tools); its cursor never ended")
    return tools


def _spec(server: str, tool: types.Tool) -> ToolSpec:
    annotations = tool.annotations
    read_only = annotations.read_only_hint if annotations is not None else None
    return spec_of(server, tool.name, tool.description, tool.input_schema, read_only)
