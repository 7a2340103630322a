"""The read, write and edit tools: line-numbered reads, guarded writes, exact-string edits."""

from __future__ import annotations

import base64
import difflib
import os

from sprout_agent.tools._paths import Workspace
from sprout_agent.tools._server import Args, Image, ToolError, ToolOutput

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
MAX_READ_BYTES = 256 * 1024
MAX_IMAGE_BYTES = 5 * 1024 * 1024
MAX_DIFF_CHARS = 4000
IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
               ".gif": "image/gif", ".webp": "image/webp"}  # fmt: skip


def decode(data: bytes) -> tuple[str, str]:
    """Text and the encoding to write it back with: UTF-8, else Latin-1 (which never fails)."""
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def _existing_file(ws: Workspace, file_path: str) -> str:
    real = ws.resolve(file_path)
    if not os.path.exists(real):
        raise ToolError(f"file not found: {ws.display(real)}")
    if os.path.isdir(real):
        raise ToolError(f"{ws.display(real)} is a directory, not a file; use glob or bash ls to list it")
    return real


def _read_image(ws: Workspace, real: str, mime: str) -> Image:
    size = os.path.getsize(real)
    if size > MAX_IMAGE_BYTES:
        raise ToolError(f"{ws.display(real)}: image is {size} bytes; the limit is {MAX_IMAGE_BYTES} bytes")
    with open(real, "rb") as f:
        data = f.read()
    ws.remember(real)
    return Image(base64.b64encode(data).decode("ascii"), mime)


def _number_lines(ws: Workspace, real: str, offset: int, limit: int) -> str:
    """cat -n style lines from `offset` (1-based), stopping at `limit` lines or the byte cap."""
    out: list[str] = []
    used = 0
    total = 0
    stop_note = ""
    with open(real, "rb") as f:
        for total, raw in enumerate(f, start=1):
            if total < offset or stop_note:
                continue
            if len(out) >= limit:
                stop_note = f"limit of {limit} lines reached"
                continue
            text = decode(raw.rstrip(b"\n").rstrip(b"\r"))[0]
            if len(text) > MAX_LINE_CHARS:
                text = text[:MAX_LINE_CHARS] + f"... [line truncated: {len(text)} chars]"
            line = f"{total:>6}\t{text}"
            if used + len(line) + 1 > MAX_READ_BYTES:
                stop_note = f"output cap of {MAX_READ_BYTES // 1024} KiB reached"
                continue
            out.append(line)
            used += len(line) + 1
    if total == 0:
        return "(the file is empty)"
    if offset > total:
        return f"(offset {offset} is past the end of the file, which has {total} lines)"
    if stop_note:
        last = offset + len(out) - 1
        out.append(
            f"... [{stop_note}: showing lines {offset}-{last} of {total}; call read with offset={last + 1} to continue]"
        )
    return "\n".join(out)


async def read(ws: Workspace, args: Args) -> ToolOutput:
    real = _existing_file(ws, args["file_path"])
    offset = args.get("offset") or 1
    limit = args.get("limit") or DEFAULT_LIMIT
    if offset < 1 or limit < 1:
        raise ToolError("offset and limit must be positive (offset is a 1-based line number)")
    mime = IMAGE_TYPES.get(os.path.splitext(real)[1].lower())
    if mime:
        return _read_image(ws, real, mime)
    with open(real, "rb") as f:
        head = f.read(8192)
    if b"\0" in head:
        size = os.path.getsize(real)
        raise ToolError(
            f"{ws.display(real)} is a binary file ({size} bytes); read only shows text files and "
            "png/jpg/gif/webp images. Use bash (e.g. `file`, `xxd | head`) to inspect it."
        )
    result = _number_lines(ws, real, offset, limit)
    ws.remember(real)
    return result


async def write(ws: Workspace, args: Args) -> ToolOutput:
    real = ws.writable(args["file_path"])
    content: str = args["content"]
    existed = os.path.exists(real)
    if existed:
        if os.path.isdir(real):
            raise ToolError(f"{ws.display(real)} is a directory")
        ws.check_fresh(real)
    os.makedirs(os.path.dirname(real), exist_ok=True)
    data = content.encode("utf-8")
    with open(real, "wb") as f:
        f.write(data)
    ws.remember(real)
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    verb = "Overwrote" if existed else "Created"
    return f"{verb} {ws.display(real)} ({lines} lines, {len(data)} bytes)"


def _to_crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def _pick_variant(text: str, old: str, new: str) -> tuple[str, str]:
    """The (old, new) pair to apply: CRLF-translated for a CRLF file, as given otherwise."""
    crlf = text.count("\r\n")
    if crlf and crlf >= text.count("\n") - crlf:
        old_crlf, new_crlf = _to_crlf(old), _to_crlf(new)
        if old_crlf in text or old not in text:
            return old_crlf, new_crlf
    return old, new


def _diff(path: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.replace("\r\n", "\n").splitlines(keepends=True),
        after.replace("\r\n", "\n").splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
        n=2,
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    if len(text) > MAX_DIFF_CHARS:
        text = text[:MAX_DIFF_CHARS] + f"... [diff truncated at {MAX_DIFF_CHARS} chars]\n"
    return text


async def edit(ws: Workspace, args: Args) -> ToolOutput:
    old: str = args["old_string"]
    new: str = args["new_string"]
    replace_all: bool = args.get("replace_all") or False
    if not old:
        raise ToolError("old_string is empty; use write to create a file or give text to replace")
    if old == new:
        raise ToolError("old_string and new_string are identical; nothing to change")
    real = ws.writable(args["file_path"])
    real = _existing_file(ws, real)
    shown = ws.display(real)
    ws.check_fresh(real)
    with open(real, "rb") as f:
        text, encoding = decode(f.read())
    old, new = _pick_variant(text, old, new)
    count = text.count(old)
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
    after = text.replace(old, new)
    try:
        data = after.encode(encoding)
    except UnicodeEncodeError as exc:
        raise ToolError(f"{shown} is {encoding}-encoded and new_string has characters it cannot hold") from exc
    with open(real, "wb") as f:
        f.write(data)
    ws.remember(real)
    return f"Edited {shown}: {count} replacement(s)\n{_diff(shown, text, after)}"
