"""The bash tool: one command in its own process group, output capped; nothing it starts outlives the call (_procs)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from contextlib import suppress

import anyio
from anyio.abc import ByteReceiveStream, Process

from sprout_agent.tools._procs import CALL_ENV, call_scope, kill_group
from sprout_agent.tools._server import Args, Marked, Report, ToolError, ToolOutput, request_meta
from sprout_agent.trust.child_argv import with_operands
from sprout_agent.trust.command_runs import HEAD_BYTES, TAIL_BYTES, result_text, timed_out, timeout_of
from sprout_agent.trust.sandbox import OUTSIDE_SANDBOX_META, SANDBOX_DENIED_META, SandboxUnavailable
from sprout_agent.trust.secrets import command_env
from sprout_agent.trust.workspace import Workspace

DRAIN_SECONDS = 0.5  # after the shell exits, how long background jobs may keep the pipe busy
PROGRESS_SECONDS = 0.1  # at most ten progress messages a second
PROGRESS_LINES = 5
PROGRESS_CHARS = 400
_RECENT_BYTES = 4096  # enough for PROGRESS_LINES lines of PROGRESS_CHARS, multi-byte characters included


class HeadTail:
    """Keeps the first HEAD_BYTES and last TAIL_BYTES of a stream, counting what falls between."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > 2 * TAIL_BYTES:
            del self.tail[:-TAIL_BYTES]

    def recent(self, size: int) -> bytes:
        """The last `size` bytes so far (fewer early on); contiguous, since the tail is only ever trimmed to at
        least TAIL_BYTES, which is more than any `size` asked for."""
        if len(self.tail) >= size:
            return bytes(self.tail[-size:])
        return bytes(self.head[-(size - len(self.tail)) :] + self.tail)

    def text(self) -> str:
        tail = bytes(self.tail[-TAIL_BYTES:])
        omitted = self.total - len(self.head) - len(tail)
        middle = f"\n... [{omitted} bytes of output omitted] ...\n" if omitted > 0 else ""
        return self.head.decode("utf-8", "replace") + middle + tail.decode("utf-8", "replace")


def live_tail(recent: bytes) -> str:
    """What a person watching wants of the output so far: its last few lines, each as a terminal would leave
    it after carriage returns (a progress bar shows its latest state), at most PROGRESS_CHARS characters."""
    text = recent.decode("utf-8", "replace").replace("\r\n", "\n")
    lines = [line.rsplit("\r", 1)[-1] for line in text.rstrip("\n").split("\n")[-PROGRESS_LINES:]]
    return "\n".join(lines)[-PROGRESS_CHARS:].strip("\n")


async def _read_all(stream: ByteReceiveStream, buf: HeadTail, grew: Callable[[], None]) -> None:
    with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
        while True:
            buf.add(await stream.receive(65536))
            grew()


class _Watch:
    """Sends the output's tail while the command runs: on new output, at most every PROGRESS_SECONDS, and
    only when the tail changed."""

    def __init__(self, buf: HeadTail, report: Report) -> None:
        self._buf, self._report = buf, report
        self._grew = anyio.Event()

    def grew(self) -> None:
        self._grew.set()

    async def run(self) -> None:
        sent = ""
        while True:
            await self._grew.wait()
            self._grew = anyio.Event()
            tail = live_tail(self._buf.recent(_RECENT_BYTES))
            if tail and tail != sent:
                sent = tail
                try:
                    await self._report(tail)
                except Exception:  # the caller went away: the command and its result matter more
                    return
            await anyio.sleep(PROGRESS_SECONDS)


def _nothing() -> None:
    pass


async def _run(proc: Process, buf: HeadTail, report: Report | None) -> bool:
    """Wait for the shell to exit while reading its output; False if a background job kept the pipe."""
    assert proc.stdout is not None
    eof = anyio.Event()
    async with anyio.create_task_group() as tg:
        watch = _Watch(buf, report) if report is not None else None
        if watch is not None:
            tg.start_soon(watch.run)

        async def reader() -> None:
            assert proc.stdout is not None
            await _read_all(proc.stdout, buf, watch.grew if watch is not None else _nothing)
            eof.set()

        tg.start_soon(reader)
        await proc.wait()
        with anyio.move_on_after(DRAIN_SECONDS):
            await eof.wait()
        tg.cancel_scope.cancel()
    return eof.is_set()


_TRACEPARENT = re.compile(r"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")


def traced() -> dict[str, str]:
    """TRACEPARENT for the command, from the call's W3C trace context (the `_meta` the caller's MCP SDK fills when
    it traces): a command that emits spans joins the agent's trace. Only a well-formed value passes."""
    value = request_meta.get().get("traceparent")
    return {"TRACEPARENT": value} if isinstance(value, str) and _TRACEPARENT.fullmatch(value) else {}


async def bash(ws: Workspace, args: Args, report: Report | None = None) -> ToolOutput:
    command: str = args["command"]
    timeout = timeout_of(args.get("timeout"))
    # The agent's escalation (a person approved re-running a command the sandbox stopped): request `_meta`,
    # which the model cannot write.
    outside = request_meta.get().get(OUTSIDE_SANDBOX_META) is True
    base = command_env() | traced()
    try:
        shell = with_operands(["bash", "-c"], [command])  # a command starting with `-` is a command, not options
        argv, env = (
            (shell, base) if outside else ws.sandbox.wrap(shell, base)  # unchanged when the sandbox is off
        )
    except SandboxUnavailable as exc:
        raise ToolError(str(exc)) from exc
    buf = HeadTail()
    drained = False
    async with call_scope(env) as call:
        try:
            proc = await anyio.open_process(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=ws.root,
                env={**env, CALL_ENV: call.token},
                start_new_session=True,
            )
        except OSError as exc:
            raise ToolError(f"could not start bash: {exc}") from exc
        call.arm(proc)
        try:
            with anyio.move_on_after(timeout) as scope:
                drained = await _run(proc, buf, report)
            if scope.cancelled_caught:
                await kill_group(proc)
        finally:  # cancelled too: the group gets its SIGTERM and grace before anything is closed
            await call.end()
            await proc.aclose()
    output = buf.text().rstrip("\n") or "(no output)"
    if scope.cancelled_caught:
        raise ToolError(timed_out(output, timeout))
    note = "" if drained else "\n[background processes still held the output open; they were ended with the call]"
    return _finished(ws, (command, output), note, proc.returncode, outside)


def _finished(ws: Workspace, ran: tuple[str, str], note: str, code: int | None, outside: bool) -> ToolOutput:
    """The result of a command (and its output) that ended: a non-zero exit is a failed call, still marked with
    what the sandbox stopped, if anything."""
    command, output = ran
    text, stopped = result_text(None if outside else ws.sandbox, output, note, code, command)
    if stopped is not None:
        return Marked(text, {SANDBOX_DENIED_META: stopped}, is_error=code != 0)
    if code != 0:
        raise ToolError(text)
    return text
