"""The read, write and edit tools: line-numbered reads, guarded atomic writes, exact-string edits.

Each runs in a worker thread; files are opened and written by the one reader and writer (trust/opening.py)."""

from __future__ import annotations

import base64
import os
import stat
from typing import BinaryIO, Literal

import anyio.to_thread

from sprout_agent.tools._server import DIFF_META, Args, Image, Marked, ToolError, ToolOutput
from sprout_agent.trust.edits import check_edit, decode, edit_report, edited, written
from sprout_agent.trust.opening import Refused, write_file
from sprout_agent.trust.reading import IMAGE_TYPES, binary_refusal, number_lines, read_window
from sprout_agent.trust.workspace import Workspace, kind_of

MAX_EDIT_BYTES = 64 * 1024 * 1024
MAX_IMAGE_BYTES = 5 * 1024 * 1024
MAX_DIFF_SOURCE_BYTES = 2 * 1024 * 1024  # an overwritten file larger than this gets no diff for the faces


def _read_image(ws: Workspace, real: str, f: BinaryIO, mime: str) -> Image:
    size = os.fstat(f.fileno()).st_size
    if size > MAX_IMAGE_BYTES:
        raise ToolError(f"{ws.display(real)}: image is {size} bytes; the limit is {MAX_IMAGE_BYTES} bytes")
    data = f.read(MAX_IMAGE_BYTES + 1)
    ws.remember(real)
    return Image(base64.b64encode(data).decode("ascii"), mime)


def _read(ws: Workspace, args: Args) -> ToolOutput:
    real = ws.existing_file(args["file_path"])
    offset, limit = read_window(args.get("offset"), args.get("limit"))
    with ws.reader().open_file(real, ws.display(real)) as f:
        mime = IMAGE_TYPES.get(os.path.splitext(real)[1].lower())
        if mime:
            return _read_image(ws, real, f, mime)
        if b"\0" in f.read(8192):
            raise ToolError(binary_refusal(ws.display(real), os.fstat(f.fileno()).st_size))
        f.seek(0)
        result = number_lines(f, offset, limit)
    ws.remember(real)
    return result


async def read(ws: Workspace, args: Args) -> ToolOutput:
    # A worker thread: the server may share the agent's event loop, which must stay free for timeouts and signals.
    return await anyio.to_thread.run_sync(_read, ws, args, abandon_on_cancel=True)


def _write(ws: Workspace, args: Args) -> ToolOutput:
    target = ws.writable(args["file_path"])
    real = target.real
    content: str = args["content"]
    try:
        mode: int | None = os.stat(real).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None:
        if not stat.S_ISREG(mode):
            raise ToolError(f"{ws.display(real)} is {kind_of(mode)}, not a regular file")
        ws.check_fresh(real)
    before = _old_text(ws, real) if mode is not None else None  # read before the file is replaced
    write_file(target, content.encode("utf-8"))
    ws.remember(real)
    return _changed(*written(ws.display(real), before, content))


def _changed(text: str, diff: str) -> ToolOutput:
    """The model reads `text`; the faces get the diff in the result's `_meta`."""
    return Marked(text, {DIFF_META: diff}) if diff else text


def _old_text(ws: Workspace, real: str) -> str | Literal[False]:
    """The content a write replaces, for its diff; False when there can be no diff (too large, binary,
    unreadable): the write itself goes ahead."""
    try:
        with ws.reader().open_file(real) as f:
            data = f.read(MAX_DIFF_SOURCE_BYTES + 1)
    except (OSError, Refused):
        return False
    return False if len(data) > MAX_DIFF_SOURCE_BYTES or b"\0" in data else decode(data)[0]


async def write(ws: Workspace, args: Args) -> ToolOutput:
    # Not abandoned on cancel: the call's outcome must be known before it is reported.
    return await anyio.to_thread.run_sync(_write, ws, args)


def _edit(ws: Workspace, args: Args) -> ToolOutput:
    old: str = args["old_string"]
    new: str = args["new_string"]
    replace_all: bool = args.get("replace_all") or False
    check_edit(old, new)
    target = ws.writable(args["file_path"])
    real = ws.existing_file(target.real)
    shown = ws.display(real)
    ws.check_fresh(real)
    with ws.reader().open_file(real, shown) as f:
        if os.fstat(f.fileno()).st_size > MAX_EDIT_BYTES:
            raise ToolError(f"{shown} is over {MAX_EDIT_BYTES // 1024 // 1024} MiB; edit it with bash (sed, patch)")
        text, encoding = decode(f.read())
    after, count = edited(shown, text, old, new, replace_all)
    try:
        data = after.encode(encoding)
    except UnicodeEncodeError as exc:
        raise ToolError(f"{shown} is {encoding}-encoded and new_string has characters it cannot hold") from exc
    write_file(target, data)
    ws.remember(real)
    return _changed(*edit_report(shown, text, after, count))


async def edit(ws: Workspace, args: Args) -> ToolOutput:
    return await anyio.to_thread.run_sync(_edit, ws, args)
