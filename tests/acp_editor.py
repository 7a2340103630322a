"""An editor with buffers and terminals, as the official ACP SDK's `Client` defines them: `fs/read_text_file` reads
a buffer (unsaved text wins over the disk), `fs/write_text_file` replaces a buffer and saves it, and a terminal
runs the given command line as a real process, keeping the last `outputByteLimit` bytes."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process

from tests.acp_harness import EditorClient


class Terminal:
    def __init__(self, process: Process, limit: int | None) -> None:
        self.process = process
        self.limit = limit
        self.output = b""
        self.truncated = False
        self.ended = anyio.Event()
        self.killed = False
        self.released = False

    async def drain(self) -> None:
        assert self.process.stdout is not None
        async for chunk in self.process.stdout:
            self.output += chunk
            if self.limit is not None and len(self.output) > self.limit:
                self.output, self.truncated = self.output[-self.limit :], True
        await self.process.wait()
        self.ended.set()


class BufferEditor(EditorClient):
    """`buffers`: unsaved text by absolute path. Every fs and terminal request is logged in `asked`."""

    def __init__(self, group: anyio.abc.TaskGroup, answers: list[str | None] | None = None) -> None:
        super().__init__(answers)
        self.group = group
        self.buffers: dict[str, str] = {}
        self.asked: list[tuple[str, dict[str, Any]]] = []
        self.terminals: dict[str, Terminal] = {}

    async def read_text_file(self, path: str, session_id: str, **kwargs: Any) -> Any:
        from acp.schema import ReadTextFileResponse

        self.asked.append(("read", {"path": path}))
        text = self.buffers[path] if path in self.buffers else Path(path).read_text()
        return ReadTextFileResponse(content=text)

    async def write_text_file(self, content: str, path: str, session_id: str, **kwargs: Any) -> Any:
        self.asked.append(("write", {"path": path, "content": content}))
        self.buffers[path] = content
        Path(path).write_text(content)  # saved, as an editor does when an agent writes
        return None

    async def create_terminal(self, command: str, session_id: str, args: list[str] | None = None,
                              env: Any = None, cwd: str | None = None, output_byte_limit: int | None = None,
                              **kwargs: Any) -> Any:  # fmt: skip
        from acp.schema import CreateTerminalResponse

        argv = [command, *(args or [])]
        self.asked.append(("terminal", {"argv": argv, "cwd": cwd, "limit": output_byte_limit}))
        process = await anyio.open_process(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        terminal = Terminal(process, output_byte_limit)
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = terminal
        self.group.start_soon(terminal.drain)
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        from acp.schema import WaitForTerminalExitResponse

        terminal = self.terminals[terminal_id]
        await terminal.ended.wait()
        return WaitForTerminalExitResponse(exit_code=terminal.process.returncode)

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        from acp.schema import TerminalOutputResponse

        terminal = self.terminals[terminal_id]
        text = terminal.output.decode("utf-8", "replace")
        return TerminalOutputResponse(output=text, truncated=terminal.truncated)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self._end(terminal_id).killed = True

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self._end(terminal_id).released = True  # a released terminal's command is killed (the spec)

    def _end(self, terminal_id: str) -> Terminal:
        terminal = self.terminals[terminal_id]
        if terminal.process.returncode is None:
            terminal.process.kill()
        return terminal

    async def aclose(self) -> None:
        """Every command has ended by now (a released terminal's is killed): their processes are reaped."""
        for terminal in self.terminals.values():
            await terminal.process.aclose()

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.asked]


def capabilities(files: bool = True, terminal: bool = True) -> Any:
    from acp.schema import ClientCapabilities, FileSystemCapabilities

    fs = FileSystemCapabilities(read_text_file=files, write_text_file=files)
    return ClientCapabilities(fs=fs, terminal=terminal)
