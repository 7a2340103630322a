"""The built-in dev server's read, write and edit served through the editor's buffers (`fs/read_text_file`,
`fs/write_text_file`) when the client offers both: the model reads unsaved changes, and its writes land in the
editor (its undo, its dirty state) rather than behind its back.

Every rule the dev server applies to a path applies here, from the same code: the deny list, the write policy,
regular files only, read before write (trust/workspace.py); the edit's matching and the reports (trust/edits.py);
the numbered read (trust/reading.py). The freshness record is the text the editor gave, not a disk stamp. A path
is checked, then the editor opens it: while that happens no sandboxed command of this session runs (the gate), so
none can swap a directory for a symlink in between. Images and binary files stay with the dev server.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import cast

import anyio

from sprout_agent.core.messages import Text
from sprout_agent.core.protocols import ToolOutcome
from sprout_agent.faces.acp.wire import Connection, Json, RpcError
from sprout_agent.trust.edits import check_edit, edit_report, edited, written
from sprout_agent.trust.opening import parent_of
from sprout_agent.trust.reading import IMAGE_TYPES, binary_refusal, number_lines, read_window
from sprout_agent.trust.workspace import Refused, Workspace, check_fresh

EDITOR_TIMEOUT = 30.0  # one fs request: the editor answers from memory, and a gate is held meanwhile
FILE_TOOLS = ("read", "write", "edit")
_IN_EDITOR = "in the editor"


class CommandGate:
    """Sandboxed commands and the editor's file operations never overlap: an operation waits for running
    commands to end and holds new ones back until it is done (operations take turns among themselves)."""

    def __init__(self) -> None:
        self._turn = anyio.Lock()
        self._running = 0
        self._idle = anyio.Event()
        self._idle.set()

    @asynccontextmanager
    async def command(self) -> AsyncGenerator[None]:
        async with self._turn:  # waits while an editor operation holds it
            self._running += 1
            if self._running == 1:
                self._idle = anyio.Event()
        try:
            yield
        finally:
            self._running -= 1
            if not self._running:
                self._idle.set()

    @asynccontextmanager
    async def editor(self) -> AsyncGenerator[None]:
        async with self._turn:
            await self._idle.wait()
            yield


class EditorFiles:
    """One session's file tools through its editor; `call` answers None for what stays with the dev server."""

    def __init__(self, conn: Connection, session_id: str, workspace: Workspace, gate: CommandGate) -> None:
        self._conn = conn
        self._session_id = session_id
        self._ws = workspace
        self._gate = gate
        self._seen: dict[str, str] = {}  # path → digest of the text the model last read or wrote there

    async def call(self, tool: str, arguments: dict[str, object]) -> ToolOutcome | None:
        try:
            if tool == "read":
                return await self._read(arguments)
            if tool == "write":
                return await self._write(arguments)
            return await self._edit(arguments)
        except Refused as refusal:
            return ToolOutcome((Text(str(refusal)),), is_error=True)
        except RpcError as error:
            return ToolOutcome((Text(f"the editor could not do it: {error.message}"[:2000]),), is_error=True)

    async def _read(self, arguments: dict[str, object]) -> ToolOutcome | None:
        _known(arguments, "read", ("file_path",), ("offset", "limit"))
        path = _string(arguments, "file_path")
        offset, limit = read_window(_integer(arguments, "offset"), _integer(arguments, "limit"))
        if os.path.splitext(self._ws.readable(path))[1].lower() in IMAGE_TYPES:
            return None  # an image is bytes, not a buffer's text
        async with self._gate.editor():
            real = self._ws.existing_file(path)
            text = await self._text(real)
        shown = self._ws.display(real)
        if "\0" in text:
            raise Refused(binary_refusal(shown, len(text.encode("utf-8", "replace"))))
        self._seen[real] = _digest(text)
        return ToolOutcome((Text(number_lines(io.BytesIO(text.encode("utf-8", "replace")), offset, limit)),))

    async def _write(self, arguments: dict[str, object]) -> ToolOutcome:
        _known(arguments, "write", ("file_path", "content"), ())
        path, content = _string(arguments, "file_path"), _string(arguments, "content")
        async with self._gate.editor():
            target = self._ws.writable(path)
            real = target.real
            before: str | None = None
            if os.path.lexists(real):
                real = self._ws.existing_file(real)
                before = await self._text(real)
                check_fresh(self._ws.display(real), self._seen.get(real), _digest(before), _IN_EDITOR)
            else:  # as the dev server does: the directories it needs are made, never through a link swapped in
                os.close(parent_of(target))
            await self._save(real, content)
        self._seen[real] = _digest(content)
        report, diff = written(self._ws.display(real), before, content)
        return ToolOutcome((Text(report),), diff=diff)

    async def _edit(self, arguments: dict[str, object]) -> ToolOutcome:
        _known(arguments, "edit", ("file_path", "old_string", "new_string"), ("replace_all",))
        path = _string(arguments, "file_path")
        old, new = _string(arguments, "old_string"), _string(arguments, "new_string")
        replace_all = arguments.get("replace_all", False)
        if not isinstance(replace_all, bool):
            raise Refused("argument 'replace_all' of edit must be of type boolean")
        check_edit(old, new)
        async with self._gate.editor():
            real = self._ws.writable(path).real
            real = self._ws.existing_file(real)
            shown = self._ws.display(real)
            text = await self._text(real)
            check_fresh(shown, self._seen.get(real), _digest(text), _IN_EDITOR)
            after, count = edited(shown, text, old, new, replace_all)
            await self._save(real, after)  # the whole text: the edit was made on the editor's copy
        self._seen[real] = _digest(after)
        report, diff = edit_report(shown, text, after, count)
        return ToolOutcome((Text(report),), diff=diff)

    async def _text(self, real: str) -> str:
        answer = await self._ask("fs/read_text_file", {"path": real})
        content = cast(Json, answer).get("content") if isinstance(answer, dict) else None
        if not isinstance(content, str):
            raise Refused(f"the editor gave no text for {self._ws.display(real)}")
        return content

    async def _save(self, real: str, content: str) -> None:
        await self._ask("fs/write_text_file", {"path": real, "content": content})

    async def _ask(self, method: str, params: Json) -> object:
        try:
            with anyio.fail_after(EDITOR_TIMEOUT):
                return await self._conn.request(method, {"sessionId": self._session_id, **params})
        except TimeoutError:
            raise Refused(f"the editor did not answer {method} within {EDITOR_TIMEOUT:g} s") from None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _known(arguments: dict[str, object], tool: str, required: tuple[str, ...], optional: tuple[str, ...]) -> None:
    """The dev server's argument rules (its input schema): nothing unknown, nothing required missing."""
    unknown = sorted(set(arguments) - {*required, *optional})
    if unknown:
        raise Refused(f"unknown argument(s) for {tool}: {', '.join(unknown)}")
    missing = [name for name in required if name not in arguments]
    if missing:
        raise Refused(f"missing required argument(s) for {tool}: {', '.join(missing)}")


def _string(arguments: dict[str, object], name: str) -> str:
    value = arguments.get(name)
    if not isinstance(value, str):
        raise Refused(f"argument {name!r} must be of type string")
    return value


def _integer(arguments: dict[str, object], name: str) -> int | None:
    value = arguments.get(name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise Refused(f"argument {name!r} must be of type integer")
    return value
