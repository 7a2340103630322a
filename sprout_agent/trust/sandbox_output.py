"""What a sandboxed command's output says about the sandbox: a write it stopped (and where), a network it had
not, a `/tmp` the command named. Read from the command's own words (its output is untrusted: a path read from it
is kept short); the Sandbox (sandbox.py) turns them into the notes and marks its results carry."""

from __future__ import annotations

import re

NAMES_TMP = re.compile(r"(?<![\w./-])/tmp(?![\w.-])[^\s'\"`;|&)]*")  # /tmp or /tmp/x, not /var/tmp or /tmpdir


def denied_write(output: str, marks: tuple[str, ...]) -> str | None:
    """The path of the first denied-write error in `output` ("a path" when none is named)."""
    line = next((line for line in output.splitlines() if any(mark in line for mark in marks)), None)
    if line is None:
        return None
    named = _QUOTED_PATH.search(line) or _BARE_PATH.search(line)
    path = named.group(1) if named is not None else "a path"
    return path if len(path) <= 200 else path[:200] + "…"  # read from the command's output: kept short


# How a denied write reads: the kernel's EROFS, and git's words when a rename over a read-only bind fails.
DENIED_WRITE = ("Read-only file system", "could not write config file")
LANDLOCK_DENIED = ("Permission denied",)
LANDLOCK_NO_TCP = re.compile(r"(?is)connect.*Permission denied|Permission denied.*connect")
# A quoted path, absolute or relative to the command's directory (`touch: cannot touch '.git/index.lock'`).
_QUOTED_PATH = re.compile(r"['\"`‘“]((?:/|\.{1,2}/|[\w.-]+/)[^'\"`’”\n]*)['\"’”]")
_BARE_PATH = re.compile(r"(/[^\s:'\"]+)")
NO_NETWORK = re.compile(
    r"Network is unreachable|Could not resolve host|Temporary failure in name resolution|"
    r"Name or service not known|No address associated with hostname"
)
