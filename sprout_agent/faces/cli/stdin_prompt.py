"""The prompt of a run from its flags and stdin: checked texts; piped stdin as the prompt or attached to one,
read bounded, decoded strictly, assembled in one format.

`cat log | sprout-agent -p "explain this"` sends the prompt, a blank line, then the piped text inside a
`<stdin>` element (docs/cli.md "Piped input"). A pipe that stays silent is never waited on for long: harnesses
and CI runners often leave stdin open with nobody writing, and a run must not hang on it.
"""

from __future__ import annotations

import os
import select
import stat
import sys
from dataclasses import dataclass
from typing import BinaryIO

from sprout_agent.config.settings import is_unicode, model_id
from sprout_agent.core.errors import UsageError
from sprout_agent.faces.cli.exits import fail_as

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


def check_texts(output_format: str, texts: dict[str, str | None], model: str | None) -> None:
    """Text flags become JSON for the API and the transcript: an empty prompt would be an empty request (a 400
    from the API), and bytes that are not UTF-8 (argv keeps them as lone surrogates) cannot be encoded at all."""
    for flag, value in texts.items():
        if value is not None and not is_unicode(value):
            fail_as(output_format, f"{flag}: not valid UTF-8 text")
    if texts["-p"] is not None and not texts["-p"].strip():
        fail_as(output_format, "no prompt: -p is empty")
    if model is not None:
        try:
            model_id(model, "--model")
        except UsageError as error:
            fail_as(output_format, str(error))


def headless_prompt(output_format: str, prompt: str | None) -> str:
    """-p (or the positional prompt) with piped stdin attached; else piped stdin is the prompt. Decoded here so
    that bytes that are not UTF-8, or too many of them, are a usage error."""
    if prompt is None and sys.stdin.isatty():
        fail_as(output_format, "no prompt: give one with -p or pipe it in")
    try:
        piped = read_piped(sys.stdin.buffer, wait=prompt is None)
    except UsageError as error:
        fail_as(output_format, f"{'no prompt: ' if prompt is None else ''}{error}")
    if piped.note is not None:
        sys.stderr.write(f"sprout-agent: note: {piped.note}\n")
    if prompt is None:
        if piped.text is None:
            fail_as(output_format, "no prompt: stdin was empty (give one with -p or pipe it in)")
        return piped.text
    return prompt if piped.text is None else attach_stdin(prompt, piped.text)
