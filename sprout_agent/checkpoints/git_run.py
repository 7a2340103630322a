"""Git for the checkpoints, through the one runner (trust/git_runner.py: no hook, fsmonitor, filter, textconv,
transport, pager or editor runs). What it may write: only our refs and objects, and our private index; filters
are never asked for (`hash-object --no-filters`, plumbing only), so a snapshot holds a file's bytes as they are."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping

from sprout_agent.trust import git_runner

GIT_TIMEOUT = 120.0


class CheckpointError(Exception):
    """A checkpoint or a read of one failed: the caller turns it into a notice, never a failed turn."""


class TimedOut(CheckpointError):
    pass


def run_git(
    args: list[str],
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | str | None = None,
    timeout: float = GIT_TIMEOUT,
    untrusted: tuple[str, ...] = (),
    pass_fds: tuple[int, ...] = (),
) -> bytes:
    """git's output as bytes (decoded by the caller as names are: text mode would turn a name's carriage return
    into a newline); a failure, a timeout or a missing git is a CheckpointError. `untrusted`: the
    writable roots, where a sandboxed command could have put a `git` of its own on PATH (an activated venv)."""
    command = next((a for a in args if not a.startswith("-")), "")
    try:
        done = git_runner.run(
            args, cwd=cwd, env=env, stdin=os.fsencode(stdin) if isinstance(stdin, str) else stdin, timeout=timeout,
            untrusted=untrusted, pass_fds=pass_fds,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise TimedOut(f"git {command} took over {timeout:.0f} s") from None
    except OSError as error:
        raise CheckpointError(f"git: {error}") from None
    if done.returncode != 0:
        raise CheckpointError(f"git {command}: {os.fsdecode(done.stderr).strip()[-300:]}")
    return done.stdout


def c_quoted(name: str) -> str:
    """A path as `hash-object --stdin-paths` reads it back exactly: that reads lines, drops a carriage return
    before the newline and unquotes a line in double quotes, so a name with a newline or ending in CR (`a\r`)
    would otherwise be read as another file (`a`), or fail the whole checkpoint."""
    if not any(c in name for c in '"\\') and all(" " <= c != "\x7f" for c in name):
        return name
    escaped = "".join(f"\\{ord(c):03o}" if c < " " or c == "\x7f" else "\\" + c if c in '"\\' else c for c in name)
    return f'"{escaped}"'
