"""The read, write and edit tools: line-numbered reads, guarded atomic writes, exact-string edits.

Each runs in a worker thread; the blocking work is in _fileio."""

from __future__ import annotations

import base64
import os
import stat
from typing import BinaryIO, Literal

import anyio.to_thread

from sprout_agent.tools._fileio import count_lines, kind_of, open_regular, read_line, replace_file
from sprout_agent.tools._paths import Workspace
from sprout_agent.tools._server import DIFF_META, Args, Image, Marked, ToolError, ToolOutput
from sprout_agent.trust.edits import MAX_DIFF_LINES, decode, replaced, unified

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
LINE_READ_BYTES = 64 * 1024  # of one line; the rest is skipped unread into memory
COUNT_REST_BYTES = 16 * 1024 * 1024  # past a stop, lines are counted for the note only when this little is left
MAX_EDIT_BYTES = 64 * 1024 * 1024
MAX_READ_BYTES = 256 * 1024
MAX_IMAGE_BYTES = 5 * 1024 * 1024
MAX_DIFF_CHARS = 4000  # of the diff in the model's text
MAX_DIFF_SOURCE_BYTES = 2 * 1024 * 1024  # an overwritten file larger than this gets no diff for the faces
IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
               ".gif": "image/gif", ".webp": "image/webp"}  # fmt: skip


def _existing_file(ws: Workspace, file_path: str) -> str:
    real = ws.readable(file_path)
    if not os.path.exists(real):
        raise ToolError(f"file not found: {ws.display(real)}")
    if os.path.isdir(real):
        raise ToolError(f"{ws.display(real)} is a directory, not a file; use glob or bash ls to list it")
    return real


def _read_image(ws: Workspace, real: str, f: BinaryIO, mime: str) -> Image:
    size = os.fstat(f.fileno()).st_size
    if size > MAX_IMAGE_BYTES:
        raise ToolError(f"{ws.display(real)}: image is {size} bytes; the limit is {MAX_IMAGE_BYTES} bytes")
    data = f.read(MAX_IMAGE_BYTES + 1)
    ws.remember(real)
    return Image(base64.b64encode(data).decode("ascii"), mime)


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
    size = os.fstat(f.fileno()).st_size
    small = size - f.tell() <= COUNT_REST_BYTES
    of = f"of {read_so_far + count_lines(f)}" if small else f"of a {size}-byte file"
    return f"... [{note}: showing lines {first}-{last} {of}; call read with offset={last + 1} to continue]"


def _number_lines(f: BinaryIO, offset: int, limit: int) -> str:
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


def _read(ws: Workspace, args: Args) -> ToolOutput:
    real = _existing_file(ws, args["file_path"])
    offset = args.get("offset") or 1
    limit = args.get("limit") or DEFAULT_LIMIT
    if offset < 1 or limit < 1:
        raise ToolError("offset and limit must be positive (offset is a 1-based line number)")
    with open_regular(real, ws.display(real)) as f:
        ws.check_opened(f.fileno())
        mime = IMAGE_TYPES.get(os.path.splitext(real)[1].lower())
        if mime:
            return _read_image(ws, real, f, mime)
        if b"\0" in f.read(8192):
            size = os.fstat(f.fileno()).st_size
            raise ToolError(
                f"{ws.display(real)} is a binary file ({size} bytes); read only shows text files and "
                "png/jpg/gif/webp images. Use bash (e.g. `file`, `xxd | head`) to inspect it."
            )
        f.seek(0)
        result = _number_lines(f, offset, limit)
    ws.remember(real)
    return result


async def read(ws: Workspace, args: Args) -> ToolOutput:
    # A worker thread: the server may share the agent's event loop, which must stay free for timeouts and signals.
    return await anyio.to_thread.run_sync(_read, ws, args, abandon_on_cancel=True)


def _write(ws: Workspace, args: Args) -> ToolOutput:
    real, start = ws.writable(args["file_path"])
    content: str = args["content"]
    try:
        mode: int | None = os.stat(real).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None:
        if not stat.S_ISREG(mode):
            raise ToolError(f"{ws.display(real)} is {kind_of(mode)}, not a regular file")
        ws.check_fresh(real)
    before = _old_text(real) if mode is not None else None  # read before the file is replaced
    data = content.encode("utf-8")
    replace_file(real, data, start)
    ws.remember(real)
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    verb = "Overwrote" if mode is not None else "Created"
    shown = ws.display(real)
    diff = "" if before is False else unified(shown, before, content, max_lines=MAX_DIFF_LINES)
    return _changed(f"{verb} {shown} ({lines} lines, {len(data)} bytes)", diff)


def _changed(text: str, diff: str) -> ToolOutput:
    """The model reads `text`; the faces get the diff in the result's `_meta`."""
    return Marked(text, {DIFF_META: diff}) if diff else text


def _old_text(real: str) -> str | Literal[False]:
    """The content a write replaces, for its diff; False when there can be no diff (too large, binary,
    unreadable): the write itself goes ahead."""
    try:
        with open_regular(real) as f:
            data = f.read(MAX_DIFF_SOURCE_BYTES + 1)
    except (OSError, ToolError):
        return False
    return False if len(data) > MAX_DIFF_SOURCE_BYTES or b"\0" in data else decode(data)[0]


async def write(ws: Workspace, args: Args) -> ToolOutput:
    # Not abandoned on cancel: the call's outcome must be known before it is reported.
    return await anyio.to_thread.run_sync(_write, ws, args)


def _diff(path: str, before: str, after: str) -> str:
    """The model's copy of the change: two lines of context, cut at MAX_DIFF_CHARS."""
    text = unified(path, before, after, context=2)
    if len(text) > MAX_DIFF_CHARS:
        text = text[:MAX_DIFF_CHARS] + f"... [diff truncated at {MAX_DIFF_CHARS} chars]\n"
    return text


def _edit(ws: Workspace, args: Args) -> ToolOutput:
    old: str = args["old_string"]
    new: str = args["new_string"]
    replace_all: bool = args.get("replace_all") or False
    if not old:
        raise ToolError("old_string is empty; use write to create a file or give text to replace")
    if old == new:
        raise ToolError("old_string and new_string are identical; nothing to change")
    real, start = ws.writable(args["file_path"])
    real = _existing_file(ws, real)
    shown = ws.display(real)
    ws.check_fresh(real)
    with open_regular(real, shown) as f:
        ws.check_opened(f.fileno())
        if os.fstat(f.fileno()).st_size > MAX_EDIT_BYTES:
            raise ToolError(f"{shown} is over {MAX_EDIT_BYTES // 1024 // 1024} MiB; edit it with bash (sed, patch)")
        text, encoding = decode(f.read())
    after, count = replaced(text, old, new, replace_all)
    if count == 0:
        raise ToolError(
            f"old_string not found in {shown}; it must match exactly, including whitespace and "
            "indentation (read the file again to copy the text)"
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {shown}; add surrounding lines to make it unique, "
            "or set replace_all=true to replace every occurrence"
        )
    try:
        data = after.encode(encoding)
    except UnicodeEncodeError as exc:
        raise ToolError(f"{shown} is {encoding}-encoded and new_string has characters it cannot hold") from exc
    replace_file(real, data, start)
    ws.remember(real)
    diff = unified(shown, text, after, max_lines=MAX_DIFF_LINES)
    return _changed(f"Edited {shown}: {count} replacement(s)\n{_diff(shown, text, after)}", diff)


async def edit(ws: Workspace, args: Args) -> ToolOutput:
    return await anyio.to_thread.run_sync(_edit, ws, args)
