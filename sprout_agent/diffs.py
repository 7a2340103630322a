"""The unified diff an edit or write of the built-in dev server would make, before it runs (for the `ask`
question). A stand-in with the shape agreed with the tools work (issue 13); that branch's module replaces it."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path

MAX_FILE_BYTES = 1_000_000  # a bigger file is not read for a preview


def preview(tool: str, arguments: Mapping[str, object], cwd: str) -> str | None:
    """The diff `tool` ("edit" or "write") would make with these arguments; None when it cannot be told."""
    path = arguments.get("file_path")
    if tool not in ("edit", "write") or not isinstance(path, str):
        return None
    target = Path(cwd, path)
    try:
        old = target.read_text() if target.exists() and target.stat().st_size <= MAX_FILE_BYTES else ""
    except (OSError, UnicodeDecodeError):
        return None
    new = _new_text(tool, arguments, old)
    if new is None:
        return None
    lines = difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _new_text(tool: str, arguments: Mapping[str, object], old: str) -> str | None:
    if tool == "write":
        content = arguments.get("content")
        return content if isinstance(content, str) else None
    before, after = arguments.get("old_string"), arguments.get("new_string")
    if not isinstance(before, str) or not isinstance(after, str) or not before or before not in old:
        return None
    return old.replace(before, after) if arguments.get("replace_all") is True else old.replace(before, after, 1)
