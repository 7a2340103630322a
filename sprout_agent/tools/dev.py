"""The "dev" MCP server: read, write, edit, glob, grep and bash in the working directory.

Run as `python -m sprout_agent.tools.dev` (stdio); the working directory is the process's cwd.
SPROUT_DEV_ALLOW_OUTSIDE=1 allows writes outside it; SPROUT_DEV_BASH_TIMEOUT sets bash's default timeout;
SPROUT_DEV_SANDBOX* choose the sandbox bash's commands run in (trust/sandbox.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from sprout_agent.tools import _files, _grep, _listing, _shell
from sprout_agent.tools._server import Args, Report, ToolOutput, ToolSpec, build_server, serve_stdio
from sprout_agent.trust import command_runs, reading
from sprout_agent.trust.secrecy import harden
from sprout_agent.trust.workspace import Workspace

if TYPE_CHECKING:  # serving imports mcp; listing (`announce`) does not
    from mcp.server.lowlevel import Server

NAME = "dev"
VERSION = "0.1.0"

READ_ONLY = {
    "read_only_hint": True,
    "destructive_hint": False,
    "idempotent_hint": True,
    "open_world_hint": False,
}
WRITES = {
    "read_only_hint": False,
    "destructive_hint": True,
    "idempotent_hint": True,
    "open_world_hint": False,
}
RUNS = {"read_only_hint": False, "destructive_hint": True, "idempotent_hint": False, "open_world_hint": True}

PATH = {"type": "string"}  # absolute or relative to the working directory, as a model passes it anyway

# Short and exact: every request carries these (docs/tools.md); each says what the model cannot guess.
READ = f"""Read a file. Text comes back as cat -n lines (number, tab, text): up to {reading.DEFAULT_LIMIT} lines \
from offset (1-based), lines cut at {reading.MAX_LINE_CHARS} characters, {reading.MAX_READ_BYTES // 1024} KiB in all. \
PNG, JPEG, GIF and WebP images (up to \
{_files.MAX_IMAGE_BYTES // 1024 // 1024} MiB) come back as images; other binary files are refused. Read a file \
before you write or edit it."""

WRITE = """Create or overwrite a file with content (UTF-8; parent directories made). An existing file must \
be read first (and unchanged since). Only inside the working directory (its git root, an added \
directory), never in .git. Prefer edit to change a file."""

EDIT = """Replace old_string with new_string in a file; returns a diff. old_string must match exactly (whitespace \
included, no line-number prefix) and be unique unless replace_all. Line endings and encoding are kept. The file \
must be read first (and unchanged since); only inside the working directory, never in .git."""

GLOB = f"""Find files by glob pattern under path (or the working directory), newest first. `*.py` matches \
the top level only, `**/*.py` any depth. Skips .gitignored files, .git, node_modules and .venv; at most \
{_listing.MAX_GLOB_RESULTS} paths."""

GREP = f"""Search file contents with a regular expression (ripgrep syntax, no lookaround) under path (or the \
working directory). glob filters files: `*.py` by name, `src/**/*.ts` by path. \
output_mode: files_with_matches (default), content (path:line:text), count. Skips .gitignored, binary and >10 MiB \
files, .git, node_modules and .venv; stops at {_grep.MAX_OUTPUT_LINES} lines or {_grep.MAX_OUTPUT_CHARS // 1000} KB."""

BASH = f"""Run a command with `bash -c` in the working directory: stdout and stderr together (over \
{(command_runs.HEAD_BYTES + command_runs.TAIL_BYTES) // 1000} KB: the first and last {command_runs.HEAD_BYTES // 1000} \
KB). stdin is /dev/null. timeout: seconds, default \
{command_runs.DEFAULT_TIMEOUT:g} (or SPROUT_DEV_BASH_TIMEOUT), at most {command_runs.MAX_TIMEOUT:g}; its process \
group is killed then, and when the command exits (start a server in the command that uses it). Each call is a new \
shell, without secrets in its environment. Prefer read, edit, glob and grep for files."""

_Impl = Callable[[Workspace, Args], Awaitable[ToolOutput]]
_Live = Callable[[Workspace, Args, Report | None], Awaitable[ToolOutput]]


def _bind(ws: Workspace, impl: _Impl) -> Callable[[Args, Report | None], Awaitable[ToolOutput]]:
    async def handler(args: Args, report: Report | None) -> ToolOutput:
        return await impl(ws, args)

    return handler


def _bind_live(ws: Workspace, impl: _Live) -> Callable[[Args, Report | None], Awaitable[ToolOutput]]:
    async def handler(args: Args, report: Report | None) -> ToolOutput:
        return await impl(ws, args, report)

    return handler


def tool_specs(ws: Workspace) -> list[ToolSpec]:
    """The six dev tools bound to one workspace."""
    integer = {"type": "integer", "minimum": 1}
    text: dict[str, Any] = {"type": "string"}
    return [
        ToolSpec("read", READ, {"file_path": PATH, "offset": integer, "limit": integer},
                 _bind(ws, _files.read), ("file_path",), READ_ONLY),
        ToolSpec("write", WRITE, {"file_path": PATH, "content": text},
                 _bind(ws, _files.write), ("file_path", "content"), WRITES),
        ToolSpec("edit", EDIT, {"file_path": PATH, "old_string": text, "new_string": text,
                                "replace_all": {"type": "boolean"}},
                 _bind(ws, _files.edit), ("file_path", "old_string", "new_string"), WRITES),
        ToolSpec("glob", GLOB, {"pattern": text, "path": PATH},
                 _bind(ws, _listing.glob), ("pattern",), READ_ONLY),
        ToolSpec("grep", GREP, {"pattern": text, "path": PATH, "glob": text,
                                "context": {"type": "integer", "minimum": 0, "maximum": _grep.MAX_CONTEXT},
                                "ignore_case": {"type": "boolean"},
                                "output_mode": {"type": "string", "enum": list(_grep.MODES)}},
                 _bind(ws, _grep.grep), ("pattern",), READ_ONLY),
        ToolSpec("bash", BASH + _sandbox_note(ws), {"command": text,
                                "timeout": {"type": "number", "exclusiveMinimum": 0,
                                            "maximum": command_runs.MAX_TIMEOUT},
                                "description": {"type": "string",
                                                "description": "5-10 words on what it does"}},
                 _bind_live(ws, _shell.bash), ("command",), RUNS),
    ]  # fmt: skip


def _sandbox_note(ws: Workspace) -> str:
    """What the model should expect from the sandbox (where it works; a failing result says what stopped it)."""
    policy = ws.sandbox.policy
    if policy.mode == "off":
        return ""
    where = "the working directory, its git root and /tmp" if policy.mode == "workspace-write" else "/tmp"
    network = "on" if policy.network else "off"
    return (
        f" Sandboxed ({policy.mode}) where the system allows it: writes only to {where}; network {network}; .git "
        "read-only; ~/.ssh and other credential directories hidden. Tell the user of a denied write or network "
        "access; do not work around it."
    )


def create_server(ws: Workspace | None = None) -> Server[Any]:
    """A fresh dev server (its own "last read" records); serve over stdio or pass to `mcp.Client`."""
    workspace = ws or Workspace.from_environment()
    return build_server(NAME, VERSION, tool_specs(workspace))


def create_server_in(cwd: str, env: Mapping[str, str] | None = None) -> Server[Any]:
    """The server for a given working directory, for the agent to run in its own process; `env` is what a
    standalone server would find in its environment (the sandbox policy), over the agent's own."""
    return create_server(Workspace.from_environment(cwd, env))


def announce(cwd: str, env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """What `create_server_in(cwd, env)` lists (`tools/list`), without the mcp SDK: the agent offers it to the model
    before the server starts."""
    return [spec.listed() for spec in tool_specs(Workspace.from_environment(cwd, env))]


def main() -> None:
    harden()  # standalone, a client may have given us its whole environment; our commands are our children
    serve_stdio(create_server())


if __name__ == "__main__":
    main()
