"""Our MCP stdio transport: one server per process group, stderr captured, the whole group ended on close.

Not `mcp.client.stdio.stdio_client` (mcp 2.3.0, read in mcp/client/stdio.py), because that one: spawns the process
itself, so no server can boot while `import mcp` (~1 s) runs (the pool spawns with processes.py before mcp loads;
`spawned=` adopts the process); passes `errlog` (default sys.stderr) as the child's stderr, so servers write on our
terminal and we keep no tail to report; on close signals the group only if the leader outlives stdin by 2 s, then
SIGTERM and up to 2 s more before SIGKILL, so a polite server's children live on and a stuck one costs 2-4 s (3.7 s
measured with one grandchild: its killpg(pgid, 0) probe counts a zombie as alive until PID 1 reaps it); and it sees
a death only at stdout EOF, which a grandchild holding the pipe defers forever. Ours: stdin closed, 0.05 s, SIGTERM
the group, 0.1 s, SIGKILL, and the leader's exit polled. Its env (HOME LOGNAME PATH SHELL TERM USER + `env`) gives
way to settings.child_environment. Its reader also joins the buffer to every chunk (quadratic in a line's length)
and keeps no limit; ours reads through stdio_wire, which also answers broken replies the SDK would drop.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from sprout_agent.core.processes import ServerProcess, group_alive, signal_group, spawn
from sprout_agent.mcp.transports.framing import LineSplitter
from sprout_agent.mcp.transports.stdio_wire import Fatal, Requests, read_message

EXIT_GRACE = 0.05  # after stdin closes: long enough for a server to flush, short enough to feel instant
TERM_GRACE = 0.1  # after SIGTERM, before SIGKILL
_REAP_WAIT = 0.5  # only an unkillable process runs this out
_STDERR_DRAIN = 0.1
_POLL = 0.01
_EXIT_POLL = 0.1

ReadStream = MemoryObjectReceiveStream[SessionMessage | Exception]
WriteStream = MemoryObjectSendStream[SessionMessage]


@asynccontextmanager
async def open_stdio(
    command: str,
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    on_spawn: Callable[[ServerProcess], None],
    on_stderr: Callable[[bytes], None] | None = None,
    spawned: ServerProcess | OSError | None = None,
) -> AsyncGenerator[tuple[ServerProcess, ReadStream, WriteStream]]:
    """Spawns `command` in a new session and yields it with the session's message streams.

    `spawned` adopts a process started earlier (or the OSError its start raised) instead.
    Raises OSError when the command cannot be started. Leaving ends the whole process group.
    """
    if isinstance(spawned, OSError):
        raise spawned
    server = spawned or await spawn([command, *args], env, cwd)
    server.on_stderr = on_stderr
    on_spawn(server)
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        async with anyio.create_task_group() as tg:
            requests = Requests()
            tg.start_soon(_pump_stdout, server, read_send, requests)
            tg.start_soon(_pump_stdin, server, write_recv, read_send, requests)
            tg.start_soon(_pump_stderr, server)
            tg.start_soon(_watch_exit, server)
            try:
                yield server, read_recv, write_send
            finally:
                with anyio.CancelScope(shield=True):
                    await stop_group(server)
                tg.cancel_scope.cancel()
    finally:
        server.kill_now()
        for stream in (read_send, read_recv, write_send, write_recv):
            stream.close()


async def _pump_stdout(
    server: ServerProcess, sink: MemoryObjectSendStream[SessionMessage | Exception], requests: Requests
) -> None:
    stdout = server.process.stdout
    assert stdout is not None
    lines = LineSplitter()
    try:
        async with sink:
            async for chunk in stdout:
                for line in lines.feed(chunk):
                    message = read_message(line, requests, server.notices)
                    if message is not None:
                        await sink.send(SessionMessage(message))
    except Fatal as exc:
        # Closing the stream ends the session: its open calls get "connection closed" at once, and the
        # pool reports this reason rather than how the process ended when we stopped it.
        server.failure = str(exc)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        pass
    finally:
        server.ended.set()


async def _pump_stdin(
    server: ServerProcess,
    source: MemoryObjectReceiveStream[SessionMessage],
    reader: MemoryObjectSendStream[SessionMessage | Exception],
    requests: Requests,
) -> None:
    stdin = server.process.stdin
    assert stdin is not None
    try:
        async with source:
            async for message in source:
                requests.sent(message.message)
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await stdin.send(data.encode())
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        # The server stopped reading: end the session's view too, or a request would wait forever.
        reader.close()


async def _pump_stderr(server: ServerProcess) -> None:
    stderr = server.process.stderr
    assert stderr is not None
    try:
        async for chunk in stderr:
            server.add_stderr(chunk)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        pass
    finally:
        server.stderr_closed.set()


async def _watch_exit(server: ServerProcess) -> None:
    # Polled: a grandchild holding our stdout would hide the leader's death from the reader, and
    # asyncio's Process.wait() also waits for the pipes to close.
    while server.process.returncode is None:
        await anyio.sleep(_EXIT_POLL)
    server.ended.set()


async def stop_group(server: ServerProcess) -> None:
    """Close stdin, a short grace, SIGTERM the group, SIGKILL what is left; always the whole group."""
    process = server.process
    if process.stdin is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    await _wait_until(lambda: process.returncode is not None, EXIT_GRACE)
    # Even a leader that exited politely may leave children behind in its group.
    signal_group(server.pid, signal.SIGTERM)
    if not await _wait_until(lambda: not group_alive(server.pid), TERM_GRACE):
        signal_group(server.pid, signal.SIGKILL)
    await _wait_until(lambda: process.returncode is not None, _REAP_WAIT)
    # Lets the last stderr lines (often the reason it died) reach the tail.
    with anyio.move_on_after(_STDERR_DRAIN):
        await server.stderr_closed.wait()
    for pipe in (process.stdout, process.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await pipe.aclose()
    _close_transport(process)


async def _wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = anyio.current_time() + timeout
    while not condition():
        if anyio.current_time() >= deadline:
            return False
        await anyio.sleep(_POLL)
    return True


def _close_transport(process: anyio.abc.Process) -> None:
    # Process.aclose() would wait for pipe EOF, which a stray holder of the pipe can delay forever;
    # closing asyncio's transport directly avoids that and the ResourceWarning at exit.
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with contextlib.suppress(PermissionError, ProcessLookupError):
            close()
