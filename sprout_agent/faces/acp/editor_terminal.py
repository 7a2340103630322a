"""The built-in dev server's bash run in the editor's terminal (`terminal/create`, `wait_for_exit`, `output`,
`kill`, `release`) when the client offers terminals: the editor shows the command live in the tool call.

The sandbox applies exactly as before: the editor runs the command line the dev server would run, the one
`Sandbox.wrap` builds (bubblewrap with its mounts, its deny list, its network and its private /tmp), behind
`env -i` with the dev server's environment (secrets removed), so nothing of the editor's environment reaches it.
Only under bubblewrap: its PID namespace ends whatever the command leaves running when the shell exits, as the
dev server's process-group and marker nets do. Under Landlock, with the sandbox off or unavailable, or for a
re-run outside the sandbox a person approved, the dev server runs the command itself (`run` answers None).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from typing import cast

import anyio

from sprout_agent.core.messages import Text
from sprout_agent.core.protocols import ToolOutcome
from sprout_agent.faces.acp.wire import Connection, Json, RpcError
from sprout_agent.trust.command_runs import HEAD_BYTES, TAIL_BYTES, result_text, timed_out, timeout_of
from sprout_agent.trust.sandbox import BWRAP, SandboxUnavailable
from sprout_agent.trust.secrets import command_env
from sprout_agent.trust.workspace import Refused, Workspace

EDITOR_TIMEOUT = 30.0  # a request that is not the wait for the command itself
OUTPUT_BYTES = HEAD_BYTES + TAIL_BYTES  # the editor keeps the last this many bytes (the dev server: first + last)
# Commands read end-of-file, as under the dev server (the editor's terminal would give them its own input).
_NO_INPUT = "exec </dev/null\n"


class EditorTerminal:
    """One session's commands in its editor's terminals; `show(terminal id)` puts one in the call's content."""

    def __init__(self, conn: Connection, session_id: str, workspace: Workspace) -> None:
        self._conn = conn
        self._session_id = session_id
        self._ws = workspace

    def command_line(self, command: str) -> list[str] | None:
        """What the editor runs, or None when the dev server must run it itself (see the module's note)."""
        sandbox = self._ws.sandbox
        if not sandbox.active() or sandbox.mechanism() != BWRAP:
            return None
        env_program = self._ws.program("env")  # never one from a directory commands may write
        if env_program is None:
            return None
        try:
            argv, env = sandbox.wrap(["bash", "-c", _NO_INPUT + command], command_env())
        except SandboxUnavailable:
            return None
        return [env_program, "-i", *(f"{name}={value}" for name, value in env.items()), *argv]

    async def run(self, arguments: dict[str, object], show: Callable[[str], None]) -> ToolOutcome | None:
        command = arguments.get("command")
        try:
            if not isinstance(command, str):
                raise Refused("argument 'command' must be of type string")
            timeout = timeout_of(arguments.get("timeout"))
        except Refused as refusal:
            return ToolOutcome((Text(str(refusal)),), is_error=True)
        line = self.command_line(command)
        if line is None:
            return None
        try:
            return await self._run(line, timeout, show, command)
        except RpcError as error:
            return ToolOutcome((Text(f"the editor could not run it: {error.message}"[:2000]),), is_error=True)

    async def _run(
        self, line: list[str], timeout: float, show: Callable[[str], None], command: str = ""
    ) -> ToolOutcome:
        params: Json = {"command": line[0], "args": line[1:], "cwd": self._ws.root, "outputByteLimit": OUTPUT_BYTES}
        created = await self._ask("terminal/create", params)
        terminal = cast(Json, created).get("terminalId") if isinstance(created, dict) else None
        if not isinstance(terminal, str):
            raise RpcError(0, "terminal/create gave no terminalId")
        show(terminal)
        exited: object = None
        finished = False
        try:
            with anyio.move_on_after(timeout) as waiting:  # the command's own timeout bounds this wait
                exited = await self._conn.request("terminal/wait_for_exit", self._params(terminal))
            if waiting.cancelled_caught:
                await self._ask("terminal/kill", self._params(terminal))
            output = await self._ask("terminal/output", self._params(terminal))
            finished = True
        finally:  # cancelled or failed too: the command ends with the call, and the editor may free the terminal
            with anyio.CancelScope(shield=True), anyio.move_on_after(EDITOR_TIMEOUT):
                if not finished:
                    await self._quietly("terminal/kill", terminal)
                await self._quietly("terminal/release", terminal)
        text = _output_text(output)
        if waiting.cancelled_caught:
            return ToolOutcome((Text(timed_out(text, timeout)),), is_error=True)
        code = _exit_code(exited)
        report, stopped = result_text(self._ws.sandbox, text, "", code, command)
        return ToolOutcome((Text(report),), is_error=code != 0, sandbox_denied=stopped)

    def _params(self, terminal: str) -> Json:
        return {"sessionId": self._session_id, "terminalId": terminal}

    async def _ask(self, method: str, params: Json) -> object:
        try:
            with anyio.fail_after(EDITOR_TIMEOUT):
                return await self._conn.request(method, {"sessionId": self._session_id, **params})
        except TimeoutError:
            raise RpcError(0, f"no answer to {method} within {EDITOR_TIMEOUT:g} s") from None

    async def _quietly(self, method: str, terminal: str) -> None:
        with suppress(RpcError):  # it had ended, or the editor let it go: nothing more to do
            await self._conn.request(method, self._params(terminal))


def _output_text(answer: object) -> str:
    fields = cast(Json, answer) if isinstance(answer, dict) else {}
    output = fields.get("output")
    text = output if isinstance(output, str) else ""
    if len(text) > OUTPUT_BYTES:  # an editor that kept more than it was asked to: the model gets no more
        text = text[-OUTPUT_BYTES:]
        fields = {**fields, "truncated": True}
    if fields.get("truncated") is True:
        text = f"... [earlier output omitted: the editor keeps the last {OUTPUT_BYTES} bytes] ...\n{text}"
    return text.rstrip("\n") or "(no output)"


def _exit_code(answer: object) -> int | None:
    fields = cast(Json, answer) if isinstance(answer, dict) else {}
    code = fields.get("exitCode")
    if isinstance(code, int) and not isinstance(code, bool):
        return code
    return -1 if fields.get("signal") else None
