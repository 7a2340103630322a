"""Keeps the agent's credentials out of its children's reach once it has started (Linux).

The built-in dev server runs inside the agent, so every command `dev__bash` runs is the agent's own child and
`cat /proc/$PPID/environ` shows the environment block the agent was started with: the API key included. Child
environments are filtered, but that block is not theirs to filter. So at start-up, before any child exists:
- the values of credential-looking variables are overwritten with NUL bytes in that block itself, through
  /proc/self/mem (Python copied the block into `os.environ` when it started, so the agent keeps its copy);
- the process is marked non-dumpable (prctl PR_SET_DUMPABLE 0), as ssh-agent does: other processes of the
  same user can no longer read /proc/<agent>/environ or /proc/<agent>/mem, nor ptrace it.
What this does not cover: a child running as root can still read the agent's memory; only a pid namespace
(the sandbox) hides the agent from it. On other systems both steps are skipped.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable

PR_SET_DUMPABLE = 4


def protect(is_secret: Callable[[str, str], bool]) -> list[str]:
    """Scrubs secret values from our environment block and makes the process non-dumpable; returns the
    names scrubbed. Best effort: a kernel or container that refuses either step leaves things as they were."""
    if not sys.platform.startswith("linux"):
        return []
    scrubbed = _scrub_environment_block(is_secret)
    _set_non_dumpable()
    return scrubbed


def _environment_block_bounds() -> tuple[int, int] | None:
    try:
        with open("/proc/self/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2 :].split()  # the command name may hold spaces and parentheses
    try:
        return int(fields[50 - 3]), int(fields[51 - 3])  # env_start, env_end: fields 50 and 51 of proc(5)
    except (IndexError, ValueError):
        return None


def _scrub_environment_block(is_secret: Callable[[str, str], bool]) -> list[str]:
    bounds = _environment_block_bounds()
    if bounds is None or bounds[1] <= bounds[0]:
        return []
    start, end = bounds
    scrubbed: list[str] = []
    try:
        with open("/proc/self/mem", "r+b", buffering=0) as memory:
            memory.seek(start)
            block = bytearray(memory.read(end - start))
            offset = 0
            for entry in bytes(block).split(b"\0"):
                name, equals, value = entry.partition(b"=")
                text_name = name.decode("utf-8", "replace")
                if equals and value and is_secret(text_name, value.decode("utf-8", "replace")):
                    value_at = offset + len(name) + 1
                    block[value_at : value_at + len(value)] = bytes(len(value))
                    scrubbed.append(text_name)
                offset += len(entry) + 1
            if scrubbed:
                memory.seek(start)
                memory.write(bytes(block))
    except OSError:
        return []
    return scrubbed


def _set_non_dumpable() -> None:
    import ctypes  # ~2 ms, and only here

    with contextlib.suppress(OSError, AttributeError):  # no libc prctl: nothing to do
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
