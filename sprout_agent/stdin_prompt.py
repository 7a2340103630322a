"""Piped stdin as a prompt or as text attached to one: read bounded, decoded strictly, assembled in one format.

`cat log | sprout-agent -p "explain this"` sends the prompt, a blank line, then the piped text inside a
`<stdin>` element (README "Piped input"). A pipe that stays silent is never waited on for long: harnesses
and CI runners often leave stdin open with nobody writing, and a run must not hang on it.
"""

from __future__ import annotations

import os
import select
import stat
from dataclasses import dataclass
from typing import BinaryIO

from sprout_agent.errors import UsageError

STDIN_MAX_BYTES = 512 * 1024  # ~130k tokens: most of a context window, and a clear line beyond it
PIPE_GRACE_SECONDS = 0.5  # how long a pipe may stay silent before a -p run goes ahead without it


@dataclass(frozen=True, slots=True)
class Piped:
    text: str | None  # None: nothing was piped (a terminal, /dev/null, or a pipe that stayed silent)
    note: str | None = None  # for stderr: why the pipe was not read


def attach_stdin(prompt: str, piped: str) -> str:
    """The prompt with the piped text after it; the element marks where the user's words end."""
    body = piped if piped.endswith("\n") else piped + "\n"
    return f"{prompt}\n\n<stdin>\n{body}</stdin>"


def read_piped(stream: BinaryIO, *, wait: bool) -> Piped:
    """The piped text, bounded; `wait`: block for it (it is the prompt) or give a silent pipe only a grace."""
    fd = stream.fileno()
    if os.isatty(fd):
        return Piped(None)
    mode = os.fstat(fd).st_mode
    if not wait and (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        ready, _, _ = select.select([fd], [], [], PIPE_GRACE_SECONDS)
        if not ready:
            return Piped(None, f"stdin sent nothing within {PIPE_GRACE_SECONDS:g} s, so it is not attached")
    data = stream.read(STDIN_MAX_BYTES + 1)
    if len(data) > STDIN_MAX_BYTES:
        raise UsageError(
            f"stdin is over {STDIN_MAX_BYTES // 1024} KiB, more than a prompt can carry: "
            "send less (for example `| tail -c 400000`)"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(f"stdin is not UTF-8 text (byte {error.start} is 0x{data[error.start]:02x})") from None
    return Piped(text if text.strip() else None)
