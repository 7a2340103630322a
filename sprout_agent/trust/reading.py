"""A text file as the read tool shows it: cat -n numbered lines from an offset, bounded in lines, in bytes per
line and in the whole answer, with a note saying where to go on. Read from a binary stream, never whole.

Shared by the dev server's read (a file on disk) and the editor's route for it (faces/acp/editor_files.py: the
text of the editor's buffer), so the model sees a file the same way from either."""

from __future__ import annotations

import os
from typing import BinaryIO

from sprout_agent.trust.edits import decode
from sprout_agent.trust.workspace import Refused

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
LINE_READ_BYTES = 64 * 1024  # of one line; the rest is skipped unread into memory
COUNT_REST_BYTES = 16 * 1024 * 1024  # past a stop, lines are counted for the note only when this little is left
MAX_READ_BYTES = 256 * 1024
CHUNK = 1024 * 1024
# What read shows as an image rather than text (the editor route leaves these to the dev server).
IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
               ".gif": "image/gif", ".webp": "image/webp"}  # fmt: skip


def read_line(f: BinaryIO, cap: int) -> tuple[bytes, int] | None:
    """The next line without its newline, cut at `cap` bytes, and its full length; None at the end.

    The part past `cap` is read in chunks and dropped, so one huge line never sits in memory."""
    head = f.readline(cap)
    if not head:
        return None
    if head.endswith(b"\n"):
        return head[:-1], len(head) - 1
    total = len(head)
    while len(head) == cap:
        chunk = f.readline(CHUNK)
        if not chunk:
            break
        if chunk.endswith(b"\n"):
            total += len(chunk) - 1
            break
        total += len(chunk)
    return head, total


def count_lines(f: BinaryIO) -> int:
    """Lines from the current position to the end (a last line without newline counts)."""
    count = 0
    last = b"\n"
    while chunk := f.read(CHUNK):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (last != b"\n")


def _format_line(number: int, raw: bytes, length: int) -> str:
    if length > len(raw):  # only LINE_READ_BYTES of it were read
        text = decode(raw)[0][:MAX_LINE_CHARS] + f"... [line truncated: {length} bytes]"
    else:
        text = decode(raw.rstrip(b"\r"))[0]
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + f"... [line truncated: {len(text)} chars]"
    return f"{number:>6}\t{text}"


def _stop_note(f: BinaryIO, note: str, first: int, shown: int, read_so_far: int) -> str:
    """The continuation hint; the total line count only when the rest is small enough to count quickly."""
    last = first + shown - 1
    size = _size(f)
    small = size - f.tell() <= COUNT_REST_BYTES
    of = f"of {read_so_far + count_lines(f)}" if small else f"of a {size}-byte file"
    return f"... [{note}: showing lines {first}-{last} {of}; call read with offset={last + 1} to continue]"


def number_lines(f: BinaryIO, offset: int, limit: int) -> str:
    """cat -n style lines from `offset` (1-based), stopping at `limit` lines or the byte cap; reads no further."""
    out: list[str] = []
    used = number = 0
    while (line := read_line(f, LINE_READ_BYTES)) is not None:
        number += 1
        if number < offset:
            continue
        if len(out) >= limit:
            return "\n".join([*out, _stop_note(f, f"limit of {limit} lines reached", offset, len(out), number)])
        entry = _format_line(number, *line)
        if used + len(entry) + 1 > MAX_READ_BYTES:
            cap = f"output cap of {MAX_READ_BYTES // 1024} KiB reached"
            return "\n".join([*out, _stop_note(f, cap, offset, len(out), number)])
        out.append(entry)
        used += len(entry) + 1
    if number == 0:
        return "(the file is empty)"
    if offset > number:
        return f"(offset {offset} is past the end of the file, which has {number} lines)"
    return "\n".join(out)


def _size(f: BinaryIO) -> int:
    """The whole stream's size in bytes: a file's, or an in-memory buffer's."""
    try:
        return os.fstat(f.fileno()).st_size
    except (OSError, ValueError, AttributeError):  # io.BytesIO has no descriptor (UnsupportedOperation)
        here = f.tell()
        end = f.seek(0, os.SEEK_END)
        f.seek(here)
        return end


def read_window(offset: object, limit: object) -> tuple[int, int]:
    """(first line, line count) of a read: 1 and DEFAULT_LIMIT unless given; Refused unless positive."""
    first = offset if isinstance(offset, int) and offset else 1
    count = limit if isinstance(limit, int) and limit else DEFAULT_LIMIT
    if first < 1 or count < 1:
        raise Refused("offset and limit must be positive (offset is a 1-based line number)")
    return first, count


def binary_refusal(shown: str, size: int) -> str:
    return (
        f"{shown} is a binary file ({size} bytes); read only shows text files and "
        "png/jpg/gif/webp images. Use bash (e.g. `file`, `xxd | head`) to inspect it."
    )
