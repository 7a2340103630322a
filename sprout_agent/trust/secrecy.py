"""Keeps a credential out of other processes' reach from a process's first instruction on (Linux): `harden`, which
every entry point of ours calls first (tests/test_hardening.py holds every console script and `python -m` to it).

A process of ours may hold a credential (the API key, a token a config passes to a server) in its environment
block, which other processes read through /proc/<pid>/environ, and in its memory. The commands `dev__bash` runs
are the agent's own children; with the warm interpreter, the `sprout-agent` a user started stays behind as a
relay holding the same environment. So, before such a process starts any other or opens a socket:
- the values of credential-looking variables (trust/secrets.is_secret: the one rule every child's environment is
  filtered by) are overwritten with NUL bytes in that block itself, in place (Python copied the block into
  `os.environ` when it started, so the process keeps its copy);
- the process is marked non-dumpable (prctl PR_SET_DUMPABLE 0), as ssh-agent does: other processes of the
  same user can no longer read /proc/<pid>/environ or /proc/<pid>/mem, nor ptrace it. A fork keeps the mark
  (a warm run, a zygote's child); an exec drops it (every program we start: theirs is their own affair).
What this does not cover: a process with CAP_SYS_PTRACE (root) can still read our memory, though no longer the
block; only a pid namespace (the bubblewrap sandbox) hides us from it. On other systems both steps are skipped.
Idempotent, and cheap (docs/security.md gives the figure): a second call finds nothing left to scrub.
"""

from __future__ import annotations

import contextlib
import ctypes  # ~2 ms, paid by every entry point: the block is read and written in place, in our memory
import sys

from sprout_agent.trust.secrets import is_secret

PR_SET_DUMPABLE = 4


def harden() -> list[str]:
    """Scrubs credential values from this process's environment block and makes it non-dumpable; returns the
    names scrubbed. Best effort: a kernel or container that refuses either step leaves things as they were."""
    if not sys.platform.startswith("linux"):
        return []
    scrubbed = _scrub_environment_block()
    with contextlib.suppress(OSError, AttributeError):  # no libc prctl: nothing to do
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    return scrubbed


def environment_block() -> bytes | None:
    """This process's environment block as it is now (scrubbed once `harden` ran), or None where there is none
    to read. Read in our own memory: /proc/self/environ is no longer open to a non-dumpable process that is not
    root (the kernel hands the file to root)."""
    bounds = _environment_block_bounds()
    if bounds is None or not sys.platform.startswith("linux"):
        return None
    return ctypes.string_at(bounds[0], bounds[1] - bounds[0])


def _environment_block_bounds() -> tuple[int, int] | None:
    """Where the kernel put the block (env_start, env_end: fields 50 and 51 of proc(5)); None where it says
    nothing usable."""
    try:
        with open("/proc/self/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2 :].split()  # the command name may hold spaces and parentheses
    try:
        start, end = int(fields[50 - 3]), int(fields[51 - 3])
    except (IndexError, ValueError):
        return None
    return (start, end) if 0 < start < end else None


def _scrub_environment_block() -> list[str]:
    """Overwrites each credential's value with NULs where it is, so the block keeps its length and layout."""
    bounds = _environment_block_bounds()
    if bounds is None:
        return []
    start, end = bounds
    block = ctypes.string_at(start, end - start)
    scrubbed: list[str] = []
    offset = 0
    for entry in block.split(b"\0"):
        name, equals, value = entry.partition(b"=")
        text_name = name.decode("utf-8", "replace")
        if equals and value and is_secret(text_name, value.decode("utf-8", "replace")):
            ctypes.memset(start + offset + len(name) + 1, 0, len(value))
            scrubbed.append(text_name)
        offset += len(entry) + 1
    return scrubbed
