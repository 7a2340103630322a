"""Unified diffs of the built-in dev server's file changes, on the agent's side: the diff an edit or write
would make (for an approval prompt, before it runs), and a diff read back into old and new text (for ACP).

Pure and stdlib only; the replace logic is the dev server's own (edits.py, which it imports too), so the preview is the
change the tool will make.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from sprout_agent.trust.edits import MAX_DIFF_LINES, NEW_FILE, decode, replaced, unified
from sprout_agent.trust.opening import Reader, Refused

MAX_PREVIEW_BYTES = 2 * 1024 * 1024  # a larger file gets no preview: reading and diffing it would hold up the prompt
_EDIT = ("dev__edit", "edit")
_WRITE = ("dev__write", "write")


def preview(tool: str, arguments: Mapping[str, object], cwd: str) -> str | None:
    """The unified diff the built-in dev server's edit or write call (`tool`: the model's name, `dev__edit`,
    or the bare `edit`) would make now, from the file on disk; "" when it changes nothing; None when it
    cannot say: another tool, bad arguments, an edit that would fail, a file that is missing (edit),
    unreadable, not regular, binary or over MAX_PREVIEW_BYTES."""
    path = arguments.get("file_path")
    if tool not in (*_EDIT, *_WRITE) or not isinstance(path, str) or not path:
        return None
    full = os.path.realpath(os.path.join(cwd, os.path.expanduser(path)))
    shown = _shown(full, os.path.realpath(cwd))
    if tool in _WRITE:
        content = arguments.get("content")
        if not isinstance(content, str):
            return None
        if not os.path.lexists(full):
            return unified(shown, None, content, max_lines=MAX_DIFF_LINES)
        before = _text_of(full)
        return None if before is None else unified(shown, before, content, max_lines=MAX_DIFF_LINES)
    return _edit_preview(full, shown, arguments)


def _edit_preview(full: str, shown: str, arguments: Mapping[str, object]) -> str | None:
    old, new, replace_all = arguments.get("old_string"), arguments.get("new_string"), arguments.get("replace_all")
    if not isinstance(old, str) or not isinstance(new, str) or not old or old == new:
        return None
    before = _text_of(full)
    if before is None:
        return None
    after, count = replaced(before, old, new, replace_all is True)
    if count == 0 or (count > 1 and replace_all is not True):
        return None  # the tool will refuse it and say why
    return unified(shown, before, after, max_lines=MAX_DIFF_LINES)


def _shown(full: str, cwd: str) -> str:
    """The path as the dev server names it in its own diffs: relative inside the working directory."""
    inside = full.startswith(cwd.rstrip(os.sep) + os.sep)
    return os.path.relpath(full, cwd) if inside else full


def _text_of(path: str) -> str | None:
    """A regular file's text, at most MAX_PREVIEW_BYTES; None for anything else (a FIFO is never waited on)."""
    try:
        with Reader().open_file(os.path.realpath(path)) as f:
            if os.fstat(f.fileno()).st_size > MAX_PREVIEW_BYTES:
                return None
            data = f.read(MAX_PREVIEW_BYTES + 1)
    except (OSError, Refused):
        return None
    if len(data) > MAX_PREVIEW_BYTES or b"\0" in data:
        return None
    return decode(data)[0]


def sides(diff: str) -> list[tuple[str | None, str]]:
    """Each hunk of a unified diff as (old text, new text), context lines in both; old is None for a new file
    (diffed against /dev/null). Lines that belong to no hunk (headers, a clipping note) are left out."""
    hunks: list[tuple[list[str], list[str]]] = []
    new_file = False
    for line in diff.splitlines(keepends=True):
        if line.startswith("--- ") and not hunks:
            new_file = line[4:].strip() == NEW_FILE
        elif line.startswith("@@"):
            hunks.append(([], []))
        elif hunks and line[:1] in (" ", "-", "+"):
            old, new = hunks[-1]
            if line[0] != "+":
                old.append(line[1:])
            if line[0] != "-":
                new.append(line[1:])
    return [(None if new_file else "".join(old), "".join(new)) for old, new in hunks]
