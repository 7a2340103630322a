"""The session's tools as the loop sees them when the editor offers its files or its terminals: the built-in dev
server's read, write and edit go through the editor's buffers (editor_files.py), its bash through the editor's
terminals (editor_terminal.py); everything else, and what those routes leave, goes to the servers as before."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from sprout_agent.config.files import ServerConfig
from sprout_agent.core.protocols import ToolHost, ToolOutcome, ToolSpec
from sprout_agent.faces.acp.editor_files import FILE_TOOLS, CommandGate, EditorFiles
from sprout_agent.faces.acp.editor_terminal import EditorTerminal
from sprout_agent.faces.acp.wire import Connection, Json
from sprout_agent.session.prepared import Prepared
from sprout_agent.trust.workspace import Workspace

DEV, DEV_MODULE = "dev", "sprout_agent.tools.dev"  # the built-in server, never a configured one of that name
# (the arguments object the loop passed, the terminal id): the call that object belongs to shows the terminal.
ShowTerminal = Callable[[dict[str, object], str], None]


@dataclass(frozen=True, slots=True)
class EditorOffers:
    """What the client said it can do for us in `initialize` (`clientCapabilities`)."""

    files: bool = False  # fs.readTextFile and fs.writeTextFile, both: reads and writes must meet the same text
    terminal: bool = False

    @classmethod
    def of(cls, raw: object) -> EditorOffers:
        capabilities = cast(Json, raw) if isinstance(raw, dict) else {}
        fs = capabilities.get("fs")
        files = cast(Json, fs) if isinstance(fs, dict) else {}
        both = files.get("readTextFile") is True and files.get("writeTextFile") is True
        return cls(both, capabilities.get("terminal") is True)


def builtin_dev(prepared: Prepared) -> ServerConfig | None:
    return next((s for s in prepared.loaded.servers if s.name == DEV and s.in_process == DEV_MODULE), None)


class EditorHost:
    """A `ToolHost` over the session's pool."""

    def __init__(
        self,
        pool: ToolHost,
        files: EditorFiles | None,
        terminal: EditorTerminal | None,
        show: ShowTerminal,
        gate: CommandGate,
    ) -> None:
        self._pool = pool
        self._files = files
        self._terminal = terminal
        self._show = show
        self._gate = gate  # the files' gate: a bash call holds their operations back while it runs

    @classmethod
    def over(
        cls, pool: ToolHost, prepared: Prepared, offers: EditorOffers, conn: Connection, session_id: str,
        show: ShowTerminal,
    ) -> ToolHost:  # fmt: skip
        """The pool itself when the editor offers nothing we use (or there is no built-in dev server)."""
        dev = builtin_dev(prepared)
        if dev is None or not (offers.files or offers.terminal):
            return pool
        # The dev server's own rules: its directory and its config env (the sandbox policy), as it builds them.
        workspace = Workspace.from_environment(dev.cwd or os.getcwd(), dev.env)
        gate = CommandGate()
        files = EditorFiles(conn, session_id, workspace, gate) if offers.files else None
        terminal = EditorTerminal(conn, session_id, workspace) if offers.terminal else None
        return cls(pool, files, terminal, show, gate)

    def tools(self) -> Sequence[ToolSpec]:
        return self._pool.tools()

    async def call(
        self,
        spec: ToolSpec,
        arguments: dict[str, object],
        on_progress: Callable[[str], None] | None = None,
        *,
        outside_sandbox: bool = False,
        call_id: str = "",
    ) -> ToolOutcome:
        if spec.server == DEV and spec.tool in FILE_TOOLS and self._files is not None:
            outcome = await self._files.call(spec.tool, arguments)
            if outcome is not None:
                return outcome
        elif spec.server == DEV and spec.tool == "bash":
            async with self._gate.command():
                if self._terminal is not None and not outside_sandbox:  # a re-run outside it is the server's
                    outcome = await self._terminal.run(arguments, lambda terminal: self._show(arguments, terminal))
                    if outcome is not None:
                        return outcome
                return await self._pool.call(
                    spec, arguments, on_progress, outside_sandbox=outside_sandbox, call_id=call_id
                )
        return await self._pool.call(spec, arguments, on_progress, outside_sandbox=outside_sandbox, call_id=call_id)

    async def call_hook(self, spec: ToolSpec, arguments: dict[str, object]) -> ToolOutcome:
        return await self._pool.call_hook(spec, arguments)

    async def kill(self, server: str, reason: str) -> None:
        await self._pool.kill(server, reason)

    async def refresh(self) -> bool:
        return await self._pool.refresh()
