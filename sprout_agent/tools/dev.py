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

PATH = {"type": "string", "description": "File path, absolute or relative to the working directory."}

READ = f"""Read a file from the local filesystem.
- Text is returned cat -n style: each line as its right-aligned 1-based line number, a tab, then the text.
- By default up to {reading.DEFAULT_LIMIT} lines from the start; use offset (1-based line number) and limit \
for long files. Lines longer than {reading.MAX_LINE_CHARS} characters are truncated, and output stops at \
{reading.MAX_READ_BYTES // 1024} KiB with a note saying which offset to continue from.
- PNG, JPEG, GIF and WebP images (up to {_files.MAX_IMAGE_BYTES // 1024 // 1024} MiB) are returned as images.
- Binary files are refused; use bash to inspect them. Directories, FIFOs, devices and sockets are refused.
- Any path may be read. Reading a file is required before write or edit may change it."""

WRITE = """Write a file: create it, or overwrite it completely, creating parent directories as needed.
- Content is written exactly as given, as UTF-8. The file is replaced atomically (a new file renamed over \
it, keeping its mode), so other hard links to it keep the old content.
- An existing file may only be overwritten if it was read (or written) in this session and has not \
changed on disk since; otherwise the write is refused: read it first. Prefer edit for changes to an \
existing file.
- Only paths inside the working directory (or its git root, or an added directory) may be written, never \
inside a .git directory (symlinks and '..' are resolved first)."""

EDIT = """Replace an exact string in a file and return a short unified diff of the change.
- old_string must match the file exactly (whitespace and indentation included) and be unique, unless \
replace_all is true; otherwise the edit fails, saying how many matches there were.
- Copy old_string from read output without the line-number prefix (number and tab).
- Line endings and encoding are kept: in a CRLF file, newlines in old_string and new_string are taken as \
CRLF; UTF-8 files stay UTF-8 and Latin-1 files stay Latin-1.
- The file must have been read in this session and unchanged since; only files inside the working \
directory may be edited, never inside a .git directory."""

GLOB = f"""Find files by glob pattern, newest first (by modification time).
- Patterns are relative to path (default: the working directory): `**` matches any number of \
directories, `*` and `?` match within one path segment, `{{a,b}}` and `[abc]` work. `*.py` only matches \
at the top level; use `**/*.py` to search recursively.
- Files ignored by .gitignore (inside a git repository) and directories such as .git, node_modules and \
.venv are skipped. Directories themselves are not listed.
- At most {_listing.MAX_GLOB_RESULTS} paths are returned; the rest are counted."""

GREP = f"""Search file contents with a regular expression (ripgrep syntax; Python `re` when ripgrep is \
missing, the same for ordinary patterns; no lookaround).
- path: a file or directory (default: the working directory). glob filters files: without a '/' it \
matches file names at any depth (`*.py`), with one it matches paths relative to path (`src/**/*.ts`).
- output_mode: "files_with_matches" (default) lists matching files; "content" shows matching lines as \
path:line:text, with context lines as path-line-text and `--` between separate groups; "count" shows \
path:count.
- Files ignored by .gitignore, .git/node_modules/.venv, binary files and files over 10 MiB are skipped; \
results are sorted by path.
- Output stops at {_grep.MAX_OUTPUT_LINES} lines or {_grep.MAX_OUTPUT_CHARS // 1000} KB; lines over \
{_grep.MAX_LINE_CHARS} characters are clipped."""

BASH = f"""Run a shell command with `bash -c` in the working directory and return its output and exit code.
- A non-zero exit code makes the result an error (isError), with `[exit code: N]` at the end of the output.
- stdout and stderr are combined; when longer than {(command_runs.HEAD_BYTES + command_runs.TAIL_BYTES) // 1000} KB \
only the first and last {command_runs.HEAD_BYTES // 1000} KB are kept.
- stdin is /dev/null, so commands that wait for input get end-of-file: pass flags such as -y instead.
- timeout in seconds: default {command_runs.DEFAULT_TIMEOUT:g} (or SPROUT_DEV_BASH_TIMEOUT), at most \
{command_runs.MAX_TIMEOUT:g}. On timeout or cancellation the command's whole process group is killed.
- Background jobs do not outlive the call: when the shell exits, whatever it started (`cmd &`, nohup, \
setsid) is killed. Start long-running servers in the same command that uses them.
- Each call is a new shell: `cd` and variables do not carry over. Secrets (API keys, tokens, passwords, \
URLs with passwords) are removed from the environment.
- File names that are not UTF-8 are shown with \\xNN escapes (use bash's $'\\xNN' quoting to name them).
- Prefer read, edit, glob and grep over cat, sed, find and grep for files."""

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
                                "replace_all": {"type": "boolean", "default": False}},
                 _bind(ws, _files.edit), ("file_path", "old_string", "new_string"), WRITES),
        ToolSpec("glob", GLOB, {"pattern": text, "path": PATH},
                 _bind(ws, _listing.glob), ("pattern",), READ_ONLY),
        ToolSpec("grep", GREP, {"pattern": text, "path": PATH, "glob": text,
                                "context": {"type": "integer", "minimum": 0, "maximum": _grep.MAX_CONTEXT},
                                "ignore_case": {"type": "boolean", "default": False},
                                "output_mode": {"type": "string", "enum": list(_grep.MODES)}},
                 _bind(ws, _grep.grep), ("pattern",), READ_ONLY),
        ToolSpec("bash", BASH + _sandbox_note(ws), {"command": text,
                                "timeout": {"type": "number", "exclusiveMinimum": 0,
                                            "maximum": command_runs.MAX_TIMEOUT},
                                "description": {"type": "string",
                                                "description": "What the command does, in 5-10 words."}},
                 _bind_live(ws, _shell.bash), ("command",), RUNS),
    ]  # fmt: skip


def _sandbox_note(ws: Workspace) -> str:
    """What the model should expect from the sandbox (where it works; a failing result says what stopped it)."""
    policy = ws.sandbox.policy
    if policy.mode == "off":
        return ""
    where = "the working directory, its git root and /tmp" if policy.mode == "workspace-write" else "only /tmp"
    network = "on" if policy.network else "off"
    return (
        f"\n- Commands run in an OS sandbox where the system allows it ({policy.mode}): writes go to {where}, "
        f"network {network}, .git is read-only (commit outside the sandbox: ask the user), credential "
        "directories such as ~/.ssh are hidden; a denied write or network "
        "access is noted in the result: explain it or ask the user rather than work around it."
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
