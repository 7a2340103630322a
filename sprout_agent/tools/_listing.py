"""Which files exist for glob and grep: git's view (.gitignore respected) or a pruned walk; glob patterns."""

from __future__ import annotations

import os
import re
import subprocess
from functools import lru_cache

import anyio.to_thread

from sprout_agent.tools._server import Args, ToolError, ToolOutput
from sprout_agent.trust import git_runner
from sprout_agent.trust.workspace import Workspace

# Never worth listing, whether or not a .gitignore says so; grep passes the same list to ripgrep.
SKIP_DIRS = (".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache",
             ".pytest_cache", ".ruff_cache", ".tox", ".hg", ".svn")  # fmt: skip
MAX_WALK_FILES = 100_000
MAX_GLOB_RESULTS = 200


def _plain_file(path: str) -> bool:
    """A regular file that is not a symlink (ripgrep does not follow symlinks either)."""
    return os.path.isfile(path) and not os.path.islink(path)


def _git_files(base: str, untrusted: tuple[str, ...]) -> list[str] | None:
    """Paths relative to `base` that git tracks or would not ignore; None outside a git work tree (or without git).
    Outside the sandbox, in a directory the model names: the runner lets nothing the repository names run."""
    try:
        proc = git_runner.run(
            ["ls-files", "-co", "--exclude-standard", "-z"], cwd=base, timeout=30, untrusted=untrusted
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    names = os.fsdecode(proc.stdout).split("\0")
    return [n for n in names if n and _plain_file(os.path.join(base, n))]


def _walk_files(base: str) -> list[str]:
    found: list[str] = []
    for top, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        rel_top = os.path.relpath(top, base)
        for name in files:
            if _plain_file(os.path.join(top, name)):
                found.append(name if rel_top == "." else f"{rel_top}/{name}")
        if len(found) >= MAX_WALK_FILES:
            break
    return found


def list_files(ws: Workspace, base: str) -> list[str]:
    """Files under directory `base` (relative, '/'-separated), skipping SKIP_DIRS, git-ignored files and what the
    sandbox hides."""
    files = _git_files(base, ws.untrusted_dirs())
    found = _walk_files(base) if files is None else [f for f in files if not set(f.split("/")[:-1]) & set(SKIP_DIRS)]
    hidden = ws.hidden_below(base)
    return [f for f in found if not any(f == h or f.startswith(h + "/") for h in hidden)] if hidden else found


def _brace_alternatives(body: str) -> str:
    return "(?:" + "|".join(glob_regex(part) for part in body.split(",")) + ")"


def _translate(pattern: str) -> str:
    """Regex source for a glob: ** spans directories, * and ? stay within one, {a,b} and [..] work."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        close = pattern.find("}" if c == "{" else "]", i + 1) if c in "{[" else -1
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "{" and close > 0:
            out.append(_brace_alternatives(pattern[i + 1 : close]))
            i = close
        elif c == "[" and close > 0:
            body = pattern[i + 1 : close]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = close
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


@lru_cache(maxsize=64)
def glob_regex(pattern: str) -> str:
    return _translate(pattern)


def glob_matcher(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(glob_regex(pattern) + r"\Z", re.DOTALL)
    except re.error as exc:
        raise ToolError(f"invalid glob pattern {pattern!r}: {exc}") from exc


def directory(ws: Workspace, path: str | None) -> str:
    real = ws.readable(path or ".")
    if not os.path.isdir(real):
        raise ToolError(f"not a directory: {ws.display(real)}")
    return real


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def _glob(ws: Workspace, args: Args) -> ToolOutput:
    pattern: str = args["pattern"].removeprefix("./")
    base = directory(ws, args.get("path"))
    if os.path.isabs(pattern):
        raise ToolError("pattern must be relative to path (give the directory in path instead)")
    matcher = glob_matcher(pattern)
    hits = [os.path.join(base, f) for f in list_files(ws, base) if matcher.match(f)]
    if not hits:
        return f"No files match {pattern!r} under {ws.display(base)}"
    hits.sort(key=_mtime, reverse=True)
    shown = [ws.display(h) for h in hits[:MAX_GLOB_RESULTS]]
    if len(hits) > MAX_GLOB_RESULTS:
        shown.append(f"... and {len(hits) - MAX_GLOB_RESULTS} more (narrow the pattern or path)")
    return "\n".join(shown)


async def glob(ws: Workspace, args: Args) -> ToolOutput:
    # A worker thread: walking a big tree (or waiting for git) must not stall the agent's event loop.
    return await anyio.to_thread.run_sync(_glob, ws, args, abandon_on_cancel=True)
