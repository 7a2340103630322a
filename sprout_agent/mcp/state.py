"""One configured MCP server's state as the pool tracks it (owned by its runner task), its status for
`/servers` and `mcp doctor`, the one line that says why it stopped, and where its notes and stderr go."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import IO, TYPE_CHECKING, cast

import anyio

from sprout_agent.config.files import ServerConfig, Transport
from sprout_agent.core.errors import NeedsLogin, ServerGone
from sprout_agent.core.events import Event, Notice, ServerLog
from sprout_agent.core.hooks.calling import is_hook
from sprout_agent.core.processes import ServerProcess
from sprout_agent.core.protocols import PromptInfo, ResourceInfo, ToolSpec
from sprout_agent.core.tool_names import model_tool_name, with_hash

if TYPE_CHECKING:
    from sprout_agent.mcp.link import Link
    from sprout_agent.mcp.lists import NoteSink

# How a session sees a server that died: its exit code then says more than the exception.
_CONNECTION_LOST = (ServerGone, anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream)


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """One server as `/servers` shows it."""

    name: str
    # pending (a built-in server announced, not started: it starts at its first call) | starting | running | failed
    # | dead | needs login
    state: str
    tool_count: int
    hook_count: int
    started_at: datetime | None
    start_seconds: float | None
    last_error: str
    stderr_tail: str
    pid: int | None
    initialize_seconds: float | None = None  # spawn + initialize handshake (`mcp doctor`)
    list_seconds: float | None = None  # tools/list, every page
    transport: Transport = "stdio"
    url: str | None = None  # a remote server's


class ServerState:
    """The mutable state of one configured server; owned by its runner task."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.state = "starting"
        self.last_error = ""
        self.tools: list[ToolSpec] = []
        # What was offered for it before it started (announced.py; None: it was started to know): its real
        # listing is checked against this when it starts.
        self.announced: list[ToolSpec] | None = None
        self.resources: list[ResourceInfo] = []
        self.prompts: list[PromptInfo] = []
        # The lists (tools, prompts, resources) the server said changed: re-read at the next request boundary.
        self.stale: set[str] = set()
        self.link: Link | None = None
        self.proc: ServerProcess | None = None
        self.started_at: datetime | None = None
        self.start_seconds: float | None = None
        self.initialize_seconds: float | None = None
        self.list_seconds: float | None = None
        self.scope = anyio.CancelScope()
        self.calls: set[anyio.CancelScope] = set()
        self.ready = anyio.Event()  # running, failed or dead: the pool's enter (or a pending server's first call) waits
        self.done = anyio.Event()

    def gone(self, state: str, reason: str) -> None:
        if self.state in ("failed", "dead", "needs login"):
            return
        self.state, self.last_error, self.link = state, reason, None
        for call in self.calls:
            call.cancel()

    def pending(self, tools: list[ToolSpec]) -> None:
        """Offered from its announced listing; it starts at its first call."""
        self.state, self.tools, self.announced = "pending", list(tools), tools

    def spawned(self, proc: ServerProcess) -> None:
        self.proc = proc

    def unavailable(self) -> str:
        return f"server '{self.config.name}' is unavailable: {self.last_error or self.state}"

    def status(self) -> ServerStatus:
        hooks = sum(is_hook(spec) for spec in self.tools)
        return ServerStatus(
            name=self.config.name,
            state=self.state,
            tool_count=len(self.tools) - hooks,
            hook_count=hooks,
            started_at=self.started_at,
            start_seconds=self.start_seconds,
            last_error=self.last_error,
            stderr_tail=self.proc.stderr_tail() if self.proc is not None else "",
            pid=self.proc.pid if self.proc is not None else None,
            initialize_seconds=self.initialize_seconds,
            list_seconds=self.list_seconds,
            transport=self.config.transport,
            url=self.config.url,
        )


def describe_end(exc: BaseException | None, server: ServerState) -> str:
    """One line for why a server stopped: what went wrong, else how its process ended.

    The exit code beats only a lost connection: after any other failure we stop the server ourselves, so its
    "exited with code 0" would hide the reason.
    """
    while isinstance(exc, BaseExceptionGroup):
        exc = cast("BaseExceptionGroup[BaseException]", exc).exceptions[0]
    proc = server.proc
    if proc is not None and proc.failure:
        return proc.failure
    code = proc.returncode if proc is not None else None
    if isinstance(exc, TimeoutError):
        return str(exc) or "timed out"
    if isinstance(exc, OSError) and proc is None:
        what = exc.filename if exc.filename is not None else server.config.command
        return f"cannot start '{what}': {exc.strerror or exc}"
    if exc is not None and not isinstance(exc, _CONNECTION_LOST):
        return str(exc) or type(exc).__name__
    if code is not None and code >= 0:
        return f"exited with code {code}"
    if exc is not None:
        return str(exc) or type(exc).__name__
    if code is None:
        return "the connection closed" if server.config.remote else "closed its output"
    return f"ended by signal {-code}"


def needs_login(exc: BaseException) -> bool:
    """Whether a start failed for want of an OAuth login, however deep the SDK's task groups wrapped it."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, NeedsLogin):
            return True
        if isinstance(seen, BaseExceptionGroup):
            seen = cast("BaseExceptionGroup[BaseException]", seen).exceptions[0]
        else:
            seen = seen.__cause__
    return False


def name_tools(servers: Iterable[ServerState], emit: Callable[[Event], None]) -> list[ToolSpec]:
    """Gives every tool a model-safe, unique, stable name, in config order then listing order."""
    named: list[ToolSpec] = []
    used: set[str] = set()
    for server in servers:
        only = server.config.only_tools
        for spec in server.tools:
            if only is not None and spec.tool not in only and not is_hook(spec):
                continue  # not offered (`--tools`): the model never sees it, so it cannot call it
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


def note_taker(server: ServerState, emit: Callable[[Event], None]) -> NoteSink:
    """What `server` notes on the side: its log messages as events, its changed lists marked stale."""

    def take(kind: str, text: str = "") -> None:
        if kind == "log":
            level, _, message = text.partition(": ")
            emit(ServerLog(server.config.name, level, message))
        else:  # re-listed at the next request boundary (`refresh`), never in the session's read loop
            server.stale.add(kind)

    return take


def stderr_writer(log: IO[bytes] | None, name: str) -> Callable[[bytes], None] | None:
    """Appends server `name`'s stderr to `log`, each line prefixed with its name (None: no log)."""
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
