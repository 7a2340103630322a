"""Running git for the checkpoints, and what git may run or write when it does.

Hooks and the fsmonitor are switched off (`GIT_RUNS_NO_HOOKS`), filters and textconv are never asked for
(`--no-filters`, plumbing only), signing is off, and a split index (the user's `core.splitIndex`) is off: it
would litter the user's `.git` with the shared part of our private index. Git itself is found on PATH's absolute
entries only: with `.` (or an empty entry) on PATH, a `git` the model planted at the root would run at every
checkpoint, outside any sandbox.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping

from sprout_agent.trust.sandbox import trusted_which
from sprout_agent.trust.write_policy import GIT_RUNS_NO_HOOKS

GIT_TIMEOUT = 120.0
GIT = (
    "git", *GIT_RUNS_NO_HOOKS, "-c", "commit.gpgSign=false", "-c", "core.quotePath=false", "-c", "core.splitIndex=false"
)  # fmt: skip


class CheckpointError(Exception):
    """A checkpoint or a read of one failed: the caller turns it into a notice, never a failed turn."""


def git_argv() -> list[str]:
    """GIT with the program by its absolute path, found on PATH's absolute entries only (see the docstring)."""
    found = trusted_which("git", ())
    if found is None:
        raise CheckpointError("git is not installed (or only reachable through a relative PATH entry)")
    return [found, *GIT[1:]]


class TimedOut(CheckpointError):
    pass


def run_git(args: list[str], cwd: str | None, env: Mapping[str, str] | None = None, stdin: str | None = None) -> str:
    try:
        # Bytes, decoded here: text mode would turn a name's carriage return into a newline.
        done = subprocess.run(
            [*git_argv(), *args], cwd=cwd, input=None if stdin is None else os.fsencode(stdin),
            capture_output=True, env=env, timeout=GIT_TIMEOUT, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        command = next((a for a in args if not a.startswith("-")), "")
        raise TimedOut(f"git {command} took over {GIT_TIMEOUT:.0f} s") from None
    except OSError as error:
        raise CheckpointError(f"git: {error}") from None
    if done.returncode != 0:
        command = next((a for a in args if not a.startswith("-")), "")
        raise CheckpointError(f"git {command}: {os.fsdecode(done.stderr).strip()[-300:]}")
    return os.fsdecode(done.stdout)


def c_quoted(name: str) -> str:
    """A path as `hash-object --stdin-paths` reads it back exactly: that reads lines, drops a carriage return
    before the newline and unquotes a line in double quotes, so a name with a newline or ending in CR (`a\r`)
    would otherwise be read as another file (`a`), or fail the whole checkpoint."""
    if not any(c in name for c in '"\\') and all(" " <= c != "\x7f" for c in name):
        return name
    escaped = "".join(f"\\{ord(c):03o}" if c < " " or c == "\x7f" else "\\" + c if c in '"\\' else c for c in name)
    return f'"{escaped}"'
